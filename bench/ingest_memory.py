"""What a streamed ingest holds, and what the redaction gate saves (issue 15): two side-by-side figures, one run.

Usage: .venv/bin/python bench/ingest_memory.py [--mb 180] [--work DIR]

On the big tree of ``bench/ingest_process.py`` (the demo's long Claude Code run repeated to ``--mb`` MB; built in the work
folder unless it is there already):

* **held facts**: the agent trace read as a stream (``Ingester._read_trace``, its step rows pulled and dropped),
  under ``tracemalloc``; printed: the MB of Python objects still held at the end (the calls and steps the facets
  and phases read), with each call settled as the ingest does (``facets.Call.settle``) and, as the anchor, with
  settling turned off (every call keeps its text, parsed input and whole step, as before issue 15 part C);
* **redaction gate**: the trace cut into the stream's 1 MB blocks, then per block ``Redactor.may_match`` (one RE2
  pass of the pattern's relaxed form) against the anchor, the pattern's own ``search`` (what the stream ran on
  every block before); seconds of each (best of 3), the ratio, and how many blocks each says may hold a secret.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")


def held_mb(run_dir: Path, *, settle: bool) -> tuple[float, int, int]:
    """(MB of Python objects held after streaming the run's trace, calls, steps); ``settle`` False turns
    ``Call.settle`` into a no-op for the measurement."""
    from ingest import facets
    from traces import layout
    from ingest.files import RunFiles
    from ingest.reader import Ingester, _Counts
    from ingest.redaction import Redactor

    real = facets.Call.settle
    if not settle:
        facets.Call.settle = lambda self: None  # type: ignore[method-assign]
    try:
        ingester = Ingester(suite_id="posttrainbench", redactor=Redactor.from_environ(os.environ), synthetic=True)
        method = layout.parse_method_name(run_dir.parent.name)
        context = ingester.contexts[layout.parse_run_name(run_dir.name).benchmark]
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        rows = ingester._read_trace("bench", "agent", run_dir / "solve_out.txt", _Counts(),
                                    RunFiles(run_dir, run_dir.parent.parent), ingester.redactor,
                                    scaffold=method.harness_agent, context=context)
        while True:  # what is measured is the reader's own state: each step row is dropped as it is pulled
            try:
                next(rows)
            except StopIteration as stop:
                agent = stop.value
                break
        held = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        return held / 1e6, len(agent.calls), len(agent.steps)
    finally:
        facets.Call.settle = real  # type: ignore[method-assign]


def gate_seconds(trace: Path) -> tuple[float, float, int, int, int]:
    """(gate seconds, pattern seconds, blocks, blocks the gate passes, blocks the pattern matches), best of 3."""
    from ingest import reader
    from ingest.parsers.utf8 import decode
    from ingest.redaction import Redactor

    data = trace.read_bytes()
    blocks, at = [], 0
    while at < len(data):
        cut = data.rfind(b"\n", at, at + reader.READ_BLOCK) + 1 or min(len(data), at + reader.READ_BLOCK)
        blocks.append(decode(data[at:cut])[0])
        at = cut
    redactor = Redactor.from_environ(os.environ)
    redactor.may_match("")  # compiles the gate: not timed

    def best(fn) -> tuple[float, int]:
        times, found = [], 0
        for _ in range(3):
            started = time.perf_counter()
            found = sum(1 for block in blocks if fn(block))
            times.append(time.perf_counter() - started)
        return min(times), found

    gate, passed = best(redactor.may_match)
    pattern, matched = best(lambda block: redactor.pattern.search(block) is not None)
    return gate, pattern, len(blocks), passed, matched


def main() -> None:
    parser = argparse.ArgumentParser(description="held facts and the redaction gate (see the module docstring)")
    parser.add_argument("--mb", type=float, default=180.0)
    parser.add_argument("--work", type=Path, help="work folder (default: a new temporary folder)")
    args = parser.parse_args()
    import django

    django.setup()
    from benchlib import build_big, demo_tree, long_run_dir

    work = args.work or Path(tempfile.mkdtemp(prefix="ptb-bench-memory-"))
    work.mkdir(parents=True, exist_ok=True)
    big = work / f"big-{args.mb:g}"
    if not (big / "SYNTHETIC").exists():
        build_big(long_run_dir(demo_tree(work / "demo", runs=40)), big, args.mb)
    run_dir = next(p for p in big.glob("*/*") if (p / "solve_out.txt").is_file())
    megabytes = (run_dir / "solve_out.txt").stat().st_size / 1e6
    print(f"trace: {run_dir / 'solve_out.txt'} ({megabytes:.1f} MB)")
    settled, calls, steps = held_mb(run_dir, settle=True)
    unsettled, _, _ = held_mb(run_dir, settle=False)
    print(f"held facts after the stream ({calls} calls, {steps} steps): settled {settled:.1f} MB, "
          f"not settled (anchor) {unsettled:.1f} MB, ratio {settled / unsettled:.2f}")
    gate, pattern, blocks, passed, matched = gate_seconds(run_dir / "solve_out.txt")
    print(f"redaction gate over {blocks} blocks: may_match {gate:.2f} s ({passed} pass), the pattern's search "
          f"(anchor) {pattern:.2f} s ({matched} match), ratio {gate / pattern:.2f}")


if __name__ == "__main__":
    main()
