"""Redaction throughput: the rule set of ``ingest.redaction`` against the rule set it replaced (issue 13).

Usage: .venv/bin/python bench/redaction.py [--repeat 5]

Renders the ~50 MB long Claude Code trace of the demo generator once, then times, side by side in one run, the
current ``Redactor().redact_counted`` and the anchor: the nine shape rules that shipped before issue 13 (copied
below as they were), one compiled pattern each way. Prints MB/s of both and the ratio (current / anchor), and how
many of the planted fake keys of ``tests/test_planted_secrets.py`` (one or more per shape family) each rule set
leaves unredacted.
"""
from __future__ import annotations

import argparse
import os
import random
import re
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")  # the planted keys live in a test module

_KEY_CHAR = "[A-Za-z0-9_-]"
ANCHOR_SHAPES = (  # ingest/redaction.py before issue 13
    rf"sk-proj-{_KEY_CHAR}{{12,}}", rf"sk-ant-(?:api|admin|oat|sid)\d{{2,}}-{_KEY_CHAR}{{12,}}",
    rf"AIzaSy{_KEY_CHAR}{{20,}}", rf"sk-or-v\d-{_KEY_CHAR}{{20,}}", r"hf_(?<![A-Za-z0-9_]hf_)[A-Za-z0-9]{20,}",
    rf"sk-(?<![A-Za-z0-9_-]sk-){_KEY_CHAR}{{37,}}", r"gh[pousr]_[A-Za-z0-9]{36,}", r"github_pat_[A-Za-z0-9_]{22,}",
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from demo.episode import EpisodeFlavour, plan_episode
    from demo.writers import render_trace
    from ingest.redaction import RULES, Redactor

    rng = random.Random(7)
    actions = plan_episode(rng=rng, task="gsm8k", base_model="Qwen/Qwen3-1.7B-Base", hours=10,
                           flavour=EpisodeFlavour(long=True))
    info = render_trace(trace_format="claude_code", rng=rng, start=datetime(2026, 4, 5, tzinfo=timezone.utc),
                        seconds=36000, timestamped=True, model="claude-opus-4-6", prompt="Train the model.",
                        actions=actions, ending="normal")
    text = info.text
    anchor = re.compile("|".join(ANCHOR_SHAPES))
    current = Redactor()
    timings: dict[str, list[float]] = {"anchor": [], "current": []}
    for _ in range(args.repeat):
        for name, fn in (("anchor", lambda: anchor.subn("<omitted-api-key>", text)),
                         ("current", lambda: current.redact_counted(text))):
            start = time.perf_counter()
            fn()
            timings[name].append(time.perf_counter() - start)
    mb = len(text.encode()) / 1e6
    best = {k: min(v) for k, v in timings.items()}
    print(f"text: {mb:.1f} MB; current rules: {len(RULES)} families, {len(current.pattern.pattern):,} characters")
    for name in ("anchor", "current"):
        print(f"{name:8s} {mb / best[name]:8.1f} MB/s  (best of {args.repeat}: {best[name]:.3f} s)")
    print(f"ratio current / anchor throughput: {best['anchor'] / best['current']:.2f}")
    from tests.test_planted_secrets import ALL

    for name, redact in (("anchor", lambda t: anchor.sub("<omitted-api-key>", t)), ("current", current.redact)):
        left = sorted({family for family, text, secret in ALL if secret in redact(text)})
        print(f"planted keys ({len(ALL)}, {len({f for f, _, _ in ALL})} families) left unredacted by {name}: "
              f"{sum(secret in redact(text) for _, text, secret in ALL)} ({', '.join(left) or 'none'})")


if __name__ == "__main__":
    main()
