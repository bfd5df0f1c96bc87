"""Helpers the bench scripts share: timing a call (wall, and CPU beside it), the demo tree, a long Claude Code
trace, free ports.

Not a package: each script in ``bench/`` has this folder on ``sys.path`` (a script's own folder is), so
``from benchlib import ...`` works from any of them. Nothing here is imported by the site.
"""
from __future__ import annotations

import re
import resource
import shutil
import socket
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_PREFIX = re.compile(rb"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)Z\] ")
_IDS = re.compile(rb'(toolu_|msg_|"uuid":")')


def cpu() -> float:
    """CPU seconds (user + system) of this process and of its children that have been waited for."""
    return sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for f in ("ru_utime", "ru_stime"))


def mtimes(outdir: Path) -> dict[str, int]:
    """{path relative to ``outdir``, POSIX: modification time in ns} of every file under ``outdir``."""
    return {p.relative_to(outdir).as_posix(): p.stat().st_mtime_ns for p in outdir.rglob("*") if p.is_file()}


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(median, p95) in ms of ``repeat`` calls of ``fn``, timed one by one with ``time.perf_counter``."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(1000 * (time.perf_counter() - start))
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(0.95 * len(samples)))]


@dataclass(frozen=True)
class Timing:
    """Timings in ms of repeated calls: median and p95 of the wall time, median of the CPU time (this process's,
    or its children's: :func:`timed_cpu`)."""

    wall: float
    wall_p95: float
    cpu: float


def timed_cpu(fn: Callable[[], object], repeat: int, *, warmup: int = 1, children: bool = False) -> Timing:
    """:class:`Timing` of ``repeat`` calls of ``fn`` after ``warmup`` untimed ones, each timed alone: wall with
    ``time.perf_counter``, CPU with ``time.process_time`` (``children``: the CPU of the child processes that ended
    during the call, ``getrusage(RUSAGE_CHILDREN)``, for a command run with ``subprocess``)."""
    def cpu() -> float:
        if children:
            used = resource.getrusage(resource.RUSAGE_CHILDREN)
            return used.ru_utime + used.ru_stime
        return time.process_time()

    for _ in range(warmup):
        fn()
    walls, cpus = [], []
    for _ in range(repeat):
        wall, used = time.perf_counter(), cpu()
        fn()
        walls.append(1000 * (time.perf_counter() - wall))
        cpus.append(1000 * (cpu() - used))
    walls.sort()
    return Timing(statistics.median(walls), walls[min(len(walls) - 1, int(0.95 * len(walls)))],
                  statistics.median(cpus))


def demo_tree(root: Path, *, runs: int = 4, seed: int = 7) -> Path:
    """``make_demo_results`` with its ~10-hour long Claude Code run into ``root``, unless ``root`` already holds
    one (its ``SYNTHETIC`` file); needs Django set up. Returns ``root``."""
    from demo.tree import make_demo_results

    if not (root / "SYNTHETIC").exists():
        make_demo_results(root=root, runs=runs, seed=seed, long_run=True)
    return root


def long_run_dir(demo_root: Path) -> Path:
    """The run directory of the tree's largest ``solve_out.txt`` (the demo's long Claude Code run)."""
    return max(demo_root.glob("*/*/solve_out.txt"), key=lambda p: p.stat().st_size).parent


def build_big(long_run: Path, dest_root: Path, megabytes: float | None = None, *, lines: int | None = None,
              run_name: str | None = None) -> Path:
    """A results tree under ``dest_root`` with one run: ``long_run``'s files and its Claude Code trace repeated.

    The trace's body (the lines between the ``init`` event and the final ``result`` event) is repeated with fresh
    ids (``toolu_``/``msg_``/uuid get a copy prefix, so calls pair within their copy) and harness timestamps
    shifted by the run's span per copy, cut at a line boundary once the whole file reaches ``megabytes`` MB or
    holds ``lines`` lines (one stream-json line is one step: the trace has about as many steps as lines, minus
    the harness's plain-text lines before ``init``, which make one step); the final ``result`` event ends it.
    ``run_name``: the run directory's name (default ``long_run``'s; a different name is a different run id).
    Returns ``dest_root``; raises ValueError when neither size is given.
    """
    if (megabytes is None) == (lines is None):
        raise ValueError("give exactly one of megabytes and lines")
    run_dir = dest_root / long_run.parent.name / (run_name or long_run.name)
    shutil.copytree(long_run, run_dir, ignore=shutil.ignore_patterns("solve_out.txt"), dirs_exist_ok=True)
    (dest_root / "SYNTHETIC").write_text("generated by bench/benchlib.py\n")
    source = (long_run / "solve_out.txt").read_bytes().rstrip(b"\n").split(b"\n")
    init = next(i for i, line in enumerate(source) if b'"subtype":"init"' in line)
    final = max(i for i, line in enumerate(source) if b'"type":"result"' in line)
    head, body, tail = source[:init + 1], source[init + 1:final], source[final:]
    times = [m[1].decode() for line in (source[init], source[final]) if (m := _PREFIX.match(line))]
    span = (datetime.fromisoformat(times[1]) - datetime.fromisoformat(times[0])) if len(times) == 2 else timedelta()
    if megabytes is not None:
        target, measure = int(megabytes * 1e6) - sum(len(x) + 1 for x in head + tail), (lambda line: len(line) + 1)
    else:
        target, measure = max(1, (lines or 0) - len(head) - len(tail)), (lambda line: 1)
    out, size, copy = list(head), 0, 0
    while size < target:
        shift = span * copy
        for line in body:
            if copy:
                line = _IDS.sub(lambda m: m[1] + b"r%d" % copy, line)
                m = _PREFIX.match(line)
                if m:
                    moved = datetime.fromisoformat(m[1].decode()) + shift
                    line = b"[" + moved.strftime("%Y-%m-%dT%H:%M:%S").encode() + b"Z] " + line[23:]
            out.append(line)
            size += measure(line)
            if size >= target:
                break
        copy += 1
    last = tail[0]
    m = _PREFIX.match(last)
    if m and copy > 1:
        moved = datetime.fromisoformat(m[1].decode()) + span * (copy - 1)
        last = b"[" + moved.strftime("%Y-%m-%dT%H:%M:%S").encode() + b"Z] " + last[23:]
    (run_dir / "solve_out.txt").write_bytes(b"\n".join(out + [last] + tail[1:]) + b"\n")
    return dest_root


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def copy_for_export(warehouse_spec: str, site: Path, out: Path) -> Path:
    """Empty ``out``, copy into it the warehouse ``warehouse_spec`` (a DuckLake spec ``ducklake:sqlite:CATALOG?data=
    DIR``: its catalog, the data folder shared; or a plain DuckDB file) and the exported ``site``, and point
    ``PTB_WAREHOUSE`` at the copy (before ``django.setup()``). Returns the copied site's folder (the export benches'
    one-run rounds: ``export_one_run.py``, ``export_statements.py``)."""
    import os

    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    if warehouse_spec.startswith("ducklake:sqlite:"):
        catalog, _, data = warehouse_spec.removeprefix("ducklake:sqlite:").partition("?data=")
        shutil.copy(catalog, out / "catalog.sqlite")
        os.environ["PTB_WAREHOUSE"] = f"ducklake:sqlite:{out / 'catalog.sqlite'}?data={data}"
    else:
        shutil.copy(warehouse_spec, out / "warehouse.duckdb")
        os.environ["PTB_WAREHOUSE"] = str(out / "warehouse.duckdb")
    shutil.copytree(site, out / "site")
    return out / "site"


def median_runs(con) -> list[str]:
    """The two agent runs (not baselines) of median step count (agent trace), in step-count then id order: the runs
    the export benches change one at a time."""
    rows = con.execute(
        "SELECT s.run_id FROM steps s JOIN runs r ON r.id = s.run_id WHERE r.method NOT LIKE 'baseline%' "
        "AND s.trace = 'agent' GROUP BY s.run_id ORDER BY count(*), s.run_id LIMIT 2 OFFSET "
        "(SELECT count(DISTINCT id) / 2 FROM runs WHERE method NOT LIKE 'baseline%')").fetchall()
    assert len(rows) == 2, "fewer than two runs with steps"
    return [row[0] for row in rows]


def change_run(con, run_id: str, nonce: str) -> None:
    """Change the run as a re-ingest of new files stores it: its first agent step's output and its content hash,
    to values made of ``nonce`` (direct SQL, as a test's: the warehouse's version token is not bumped)."""
    first = con.execute("SELECT min(idx) FROM steps WHERE run_id = ? AND trace = 'agent'", [run_id]).fetchone()
    assert first is not None
    con.execute("UPDATE steps SET output = ? WHERE run_id = ? AND trace = 'agent' AND idx = ?",
                [f"bench changed text {nonce}", run_id, first[0]])
    con.execute("UPDATE runs SET content_hash = ? WHERE id = ?", [nonce, run_id])
