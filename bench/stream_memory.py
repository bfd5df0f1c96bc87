"""Memory of parsing a trace: streamed (every format a generator of steps) against the whole file, side by side.

Usage: .venv/bin/python bench/stream_memory.py [--small 2000] [--large 20000]

For each trace format, the generated traces of ``tests/test_parsers_stream_memory.py`` (``--small`` and
``--large`` tool calls, each line prefixed with a time) parsed two ways under ``tracemalloc``: streamed (64 KiB
blocks pulled through ``ingest.parsers.stream_trace``, each step dropped as it comes: the ingest's one path) and,
as the anchor, whole (the file read and framed, then every step collected: the path every format but Claude Code's
took before issue 28). Printed per format: the file sizes, each way's peak MB of Python objects for the small and
the large trace with the large/small ratio, and each way's CPU seconds on the large trace, not traced (the machine
is shared: CPU is the figure to read; streamed includes what the whole path skips: making each step storable).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=2000)
    parser.add_argument("--large", type=int, default=20000)
    args = parser.parse_args()
    from ingest.parsers import PARSERS, collect, stream_trace
    from ingest.parsers.framing import frame_lines
    from tests.test_parsers_stream_memory import FORMATS, _pieces, _streamed_peak, _whole_peak, _write

    def streamed_cpu(path: Path) -> None:
        for _ in stream_trace(_pieces(path), source=path.name):
            pass

    def whole_cpu(path: Path, fmt: str) -> None:
        collect(PARSERS[fmt](frame_lines(path.read_text()), path.name))

    work = Path(tempfile.mkdtemp(prefix="ptb-bench-stream-memory-"))
    print(f"{'format':15} {'MB small/large':>15} | {'streamed peak MB':>22} | {'whole-file peak MB':>22} | "
          f"CPU s large: streamed / whole")
    for fmt in sorted(FORMATS):
        small, large = _write(work / f"{fmt}-small", fmt, args.small), _write(work / f"{fmt}-large", fmt, args.large)
        streamed = [_streamed_peak(path)[0] / 1e6 for path in (small, large)]
        whole = [_whole_peak(path, fmt) / 1e6 for path in (small, large)]
        cpu = []
        for measure in (lambda: streamed_cpu(large), lambda: whole_cpu(large, fmt)):  # not traced
            started = time.process_time()
            measure()
            cpu.append(time.process_time() - started)
        print(f"{fmt:15} {small.stat().st_size / 1e6:6.1f} / {large.stat().st_size / 1e6:5.1f} | "
              f"{streamed[0]:5.2f} -> {streamed[1]:5.2f} ({streamed[1] / streamed[0]:4.2f}x) | "
              f"{whole[0]:5.1f} -> {whole[1]:5.1f} ({whole[1] / whole[0]:4.1f}x) | {cpu[0]:.2f} / {cpu[1]:.2f}")
        small.unlink()
        large.unlink()
    work.rmdir()


if __name__ == "__main__":
    main()
