"""CPU of the static export's search record texts over every step of a warehouse's runs: the stored input and output
concatenated (before branch uxfix) against ``export.search.step_text`` (the input as the trace viewer reads it).

    .venv/bin/python bench/search_step_text.py --warehouse PATH_OR_SPEC [--rounds 3]

Reads every step first (``traces.selectors.whole_steps``), then times each way with ``time.process_time`` per round
in one process (the first round of ``step_text`` looks Pygments' lexers up).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    os.environ["PTB_WAREHOUSE"] = args.warehouse
    import django

    django.setup()
    from export.search import step_text
    from traces import selectors

    runs = selectors.list_runs(limit=None)[0]
    steps = []
    for run in runs:
        after = -1
        while batch := selectors.whole_steps(run.id, after=after):
            steps += [(s.tool, s.input, s.output) for s in batch]
            after = batch[-1].index
    chars = sum(len(i or "") + len(o) for _, i, o in steps)
    for n in range(args.rounds):
        started = time.process_time()
        for _, text, output in steps:
            _ = f"{text}\n{output}" if text else output
        before = time.process_time() - started
        started = time.process_time()
        for tool, text, output in steps:
            step_text(tool, text, output)
        after_fix = time.process_time() - started
        print(f"round {n + 1}: {len(runs)} runs, {len(steps)} steps, {chars / 1e6:.1f} M characters: "
              f"concatenated {before:.3f} s, step_text {after_fix:.3f} s "
              f"({1000 * (after_fix - before) / max(len(runs), 1):.2f} ms more per run)")


if __name__ == "__main__":
    main()
