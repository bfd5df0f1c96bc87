"""The decoded-text redaction pass against the raw-line pass it follows (issue 25).

Usage: .venv/bin/python bench/redaction_decoded.py [--repeat 3]

Renders the ~50 MB long Claude Code trace of the demo generator (as ``bench/redaction.py`` does), redacts it raw
(``Redactor.redact_counted``: the gate and pattern over the whole text, the anchor), parses it, then times, side
by side in one run, the passes over decoded text that issue 25 added: ``reader.redact_steps`` over every step at
once (a trace read whole), one step at a time (a streamed trace), and ``learn_values`` over the file's bytes in
1 MB blocks (the key variables a run assigns). CPU seconds (``time.process_time``: the machine is shared), best
of ``--repeat``; prints each with its ratio to the raw pass, and what each found (0 on the demo trace).
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import django

    django.setup()
    from demo.episode import EpisodeFlavour, plan_episode
    from demo.writers import render_trace
    from ingest.reader import redact_steps
    from ingest.parsers import parse_trace
    from ingest.redaction import Redactor, learn_values

    rng = random.Random(7)
    actions = plan_episode(rng=rng, task="gsm8k", base_model="Qwen/Qwen3-1.7B-Base", hours=10,
                           flavour=EpisodeFlavour(long=True))
    text = render_trace(trace_format="claude_code", rng=rng, start=datetime(2026, 4, 5, tzinfo=timezone.utc),
                        seconds=36000, timestamped=True, model="claude-opus-4-6", prompt="Train the model.",
                        actions=actions, ending="normal").text
    data = text.encode()
    redactor = Redactor.from_environ(os.environ)
    raw, _ = redactor.redact_counted(text)
    steps = parse_trace(raw, source="solve_out.txt").steps
    blocks = [data[i:i + (1 << 20)] for i in range(0, len(data), 1 << 20)]
    passes = {
        "raw pass (anchor): redact_counted of the text": lambda: redactor.redact_counted(text)[1],
        "decoded: redact_steps, every step at once": lambda: redact_steps(steps, redactor),
        "decoded: redact_steps, one step at a time": lambda: sum(redact_steps([s], redactor) for s in steps),
        "learn_values over the bytes, 1 MB blocks": lambda: len(learn_values(blocks)),
    }
    best: dict[str, float] = {}
    found: dict[str, int] = {}
    for _ in range(args.repeat):
        for name, run in passes.items():
            started = time.process_time()
            found[name] = run()
            best[name] = min(best.get(name, float("inf")), time.process_time() - started)
    anchor = best["raw pass (anchor): redact_counted of the text"]
    print(f"trace: {len(data) / 1e6:.1f} MB, {len(steps)} steps; CPU seconds, best of {args.repeat}")
    for name, seconds in best.items():
        print(f"{name:<48} {seconds:6.3f} s  {seconds / anchor:5.2f}x the raw pass  found {found[name]}")


if __name__ == "__main__":
    main()
