"""Whole-process ``manage.py ingest`` against a bare ``orjson.loads`` loop over the same trace files (issue 15).

Usage: .venv/bin/python bench/ingest_process.py [--mb 180] [--runs 40] [--seed 7] [--repeat N] [--profile] [--work DIR]

Two trees, each ingested by a fresh ``manage.py ingest ROOT --quiet`` process into a fresh warehouse file
(``manage.py migrate`` runs first, untimed):

* ``big``: one run whose ``solve_out.txt`` is ~``--mb`` MB of Claude Code stream-json: the demo generator's
  10-hour long run (``make_demo_results``, ~50 MB, 42,882 lines) with its body (the lines between the init event
  and the final result) repeated with fresh ids (``toolu_``/``msg_``/uuid get a copy prefix, so calls pair
  within their copy) and harness timestamps shifted by the run's span per copy, cut at a line boundary once the
  size is reached; the run's other files are the long run's.
* ``demo``: ``make_demo_results --runs R --seed S`` (the default is the tree ``make serve`` ingests: 96 runs).

``--kind ducklake``: the ingests write DuckLake with a SQLite catalog (the embedded default, what ``make serve``
uses) instead of a plain DuckDB file. Page-cache warming after the last commit (``PTB_PAGE_WARM``) is off: it is
not ingest work. After the big tree, the least storing its rows costs (``write_floor``: the stored rows read
back, turned into Arrow columns and written, in a process of its own), and the least any ingest of it can cost:
start-up + the loop + the columns + the cheaper write. First, the floor: ``manage.py ingest`` of an empty tree (interpreter, Django and its apps,
duckdb and pyarrow imported, the warehouse opened): the time and RSS any ingest starts from.

Beside each, in the same run, the anchor: a loop that reads every trace file the ingest parses (agent traces
``solve_out.txt``/``trace.txt``/``solve_parsed.txt`` and the judges' ``judge_output*.json``/``judgement.log``),
splits it into lines, strips the ``[YYYY-MM-DDTHH:MM:SSZ] `` prefix and runs ``orjson.loads`` on each line
(non-JSON lines raise and are skipped), best of 3. Printed: trace MB, ingest seconds, MB/s, anchor seconds, the
ratio ingest / anchor, the ingest process's CPU seconds (user + system, its reaped worker processes included:
``os.wait4``'s ``ru_utime + ru_stime``; on a shared machine a steadier figure than the wall time) and its peak RSS
(``ru_maxrss``, what ``/usr/bin/time -v`` reports as "Maximum resident set size").

``--repeat N``: each tree's ingest and its anchor N times in turn (the machine is shared: the spread says how much
a figure can be trusted); one line per pair, then the median ratio and the range.

``--profile``: ingest the big tree once more under ``py-spy record`` (``pip install py-spy``; not a requirement)
and print the top functions by own samples and by inclusive samples, and the share of samples inside the trace
rules (``ingest/facets.py``, ``ingest/evidence.py``, ``ingest/rules.py``, ``traces/vocabulary.py``). The collapsed stacks are kept in the
work folder.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchlib import build_big  # noqa: E402 (bench/benchlib.py, beside this script)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")

_PREFIX = re.compile(rb"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)Z\] ")
TRACE_NAMES = ("solve_out.txt", "trace.txt", "solve_parsed.txt")
_JUDGE = re.compile(r"^judge_output.*\.json$|^judgement\.log$")
RULE_FILES = ("ingest/facets.py", "ingest/evidence.py", "ingest/rules.py", "traces/vocabulary.py")
_DRIVERS = {"Command.handle", "ingest_tree", "Ingester.parse_run", "BaseCommand.execute", "BaseCommand.run_from_argv"}


def trace_files(root: Path) -> list[Path]:
    """Every file under ``root`` the ingest parses as a trace: each run's agent trace and judge traces."""
    files = []
    for run_dir in sorted(p for p in root.glob("*/*") if p.is_dir() and not p.parent.name.startswith(("_", "."))):
        agent = next((run_dir / n for n in TRACE_NAMES if (run_dir / n).is_file()), None)
        files += [agent] if agent else []
        files += sorted(p for p in run_dir.iterdir() if _JUDGE.match(p.name))
    return files


def bare_loop_once(files: list[Path]) -> None:
    """Read the files and ``orjson.loads`` every line, timestamp prefix stripped (one pass)."""
    import orjson

    for path in files:
        for line in path.read_bytes().split(b"\n"):
            if line.startswith(b"[") and _PREFIX.match(line):
                line = line[23:]
            try:
                orjson.loads(line)
            except orjson.JSONDecodeError:
                pass


def bare_loop(files: list[Path]) -> float:
    """Seconds (best of 3) of :func:`bare_loop_once` over the files."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        bare_loop_once(files)
        best = min(best, time.perf_counter() - started)
    return best


KIND = "file"  # --kind: the warehouse the ingests write


def _env(work: Path, name: str) -> dict[str, str]:
    env = dict(os.environ)
    if KIND == "ducklake":
        lake = work / f"lake-{name}"
        env["PTB_WAREHOUSE"] = f"ducklake:sqlite:{lake / 'catalog.sqlite'}?data={lake / 'data'}"
    else:
        env["PTB_WAREHOUSE"] = str(work / f"warehouse-{name}.duckdb")
    env["PTB_DATA_DIR"] = str(work / f"data-{name}")
    env["PTB_PAGE_WARM"] = "0"  # computing pages into the cache after the last commit is not ingesting
    Path(env["PTB_DATA_DIR"]).mkdir(exist_ok=True)
    return env


def _fresh(work: Path, name: str) -> dict[str, str]:
    env = _env(work, name)
    for leftover in work.glob(f"warehouse-{name}.duckdb*"):
        leftover.unlink()
    shutil.rmtree(work / f"lake-{name}", ignore_errors=True)
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    return env


def timed_ingest(work: Path, name: str, root: Path) -> tuple[float, float, str, float]:
    """(wall seconds, peak RSS in MB, the ingest's summary line, CPU seconds) of one ``manage.py ingest``
    process."""
    env = _fresh(work, name)
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "manage.py", "ingest", str(root), "--quiet"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output = proc.stdout.read().decode() if proc.stdout is not None else ""
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"ingest of {root} failed ({proc.returncode}):\n{output}")
    return seconds, usage.ru_maxrss / 1024, output.strip().splitlines()[-1], usage.ru_utime + usage.ru_stime


_WRITE_FLOOR = r"""
import json, os, sys, tempfile, time
import django
django.setup()
import duckdb, pyarrow as pa, pyarrow.parquet as pq
from ptbsite import warehouse
from traces import records
from traces.services import STEP_BATCH_ROWS
names = records.columns(records.StepRow)
with warehouse.connect() as con:
    rows = [records.StepRow(**dict(zip(names, r))) for r in
            con.execute(f"SELECT {', '.join(names)} FROM steps WHERE trace = 'agent' ORDER BY idx").fetchall()]
batches = [rows[i:i + STEP_BATCH_ROWS] for i in range(0, len(rows), STEP_BATCH_ROWS)]
def columns(batch):
    return records.arrow_table(records.StepRow, batch)
columns(batches[0])  # pyarrow's first conversion imports pandas: not timed
started = time.perf_counter()
tables = [columns(b) for b in batches]
arrow_s = time.perf_counter() - started
folder = tempfile.mkdtemp()
con = duckdb.connect(os.path.join(folder, "floor.duckdb"))
con.register("first", tables[0])
con.execute("CREATE TABLE steps AS SELECT * FROM first LIMIT 0")
started = time.perf_counter()
con.execute("BEGIN")
for table in tables:
    con.register("batch", table)
    con.execute("INSERT INTO steps SELECT * FROM batch")
con.execute("COMMIT")
con.close()
duckdb_s = time.perf_counter() - started
started = time.perf_counter()
with pq.ParquetWriter(os.path.join(folder, "steps.parquet"), tables[0].schema) as writer:
    for table in tables:
        writer.write_table(table)
parquet_s = time.perf_counter() - started
print(json.dumps({"rows": len(rows), "arrow_s": arrow_s, "duckdb_s": duckdb_s, "parquet_s": parquet_s}))
"""


def write_floor(work: Path, name: str) -> dict:
    """Seconds to turn the agent trace's stored step rows (read back as ``traces.records.StepRow``, as the ingest builds them)
    into Arrow columns in batches (``arrow_s``), and to write those batches into a fresh DuckDB file in one
    transaction (``duckdb_s``) or to one Parquet file (``parquet_s``): what storing the rows costs with no
    reading, redaction or parsing at all. Runs in a process of its own on the ingest's warehouse."""
    out = subprocess.run([sys.executable, "-c", _WRITE_FLOOR], cwd=ROOT, env=_env(work, name), check=True,
                         capture_output=True, text=True).stdout
    import json

    return json.loads(out.strip().splitlines()[-1])


def profile(work: Path, root: Path, top: int = 5) -> None:
    """Ingest ``root`` under py-spy and print where the samples go (module doc, ``--profile``)."""
    py_spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
    if not py_spy:
        raise SystemExit("--profile needs py-spy: .venv/bin/pip install py-spy")
    env = _fresh(work, "profile")
    out = work / "profile.collapsed"
    subprocess.run([py_spy, "record", "--format", "raw", "--rate", "100", "--output", str(out), "--",
                    sys.executable, "manage.py", "ingest", str(root), "--quiet"], cwd=ROOT, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = rules = 0
    for line in out.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        n = int(count)
        frames = [_frame(f) for f in stack.split(";") if f.strip()]
        if not frames:  # a sample with no Python stack (the process starting or exiting)
            continue
        total += n
        own[frames[-1]] += n
        for frame in set(frames):
            inclusive[frame] += n
        if any(f"({rule_file}:" in frame for frame in stack.split(";") for rule_file in RULE_FILES):
            rules += n
    print(f"\nprofile of the big ingest (py-spy, {total} samples at 100 Hz; stacks in {out}):")
    print(f"  samples inside the trace rules ({', '.join(RULE_FILES)}): {100 * rules / total:.1f}%")
    print(f"  top {top} by own samples:")
    for frame, n in own.most_common(top):
        print(f"    {100 * n / total:5.1f}%  {frame}")
    print(f"  top {top} by inclusive samples, the ingest's own code (traces/, ptbsite/):")
    ours = [(f, n) for f, n in inclusive.most_common() if "(traces/" in f or "(ptbsite/" in f]
    for frame, n in [x for x in ours if x[0].split(" (")[0] not in _DRIVERS][:top]:
        print(f"    {100 * n / total:5.1f}%  {frame}")


def _frame(frame: str) -> str:
    """``func (path/file.py:line)`` -> ``func (file path relative to the repo)``, line numbers dropped."""
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    path = path.split(str(ROOT) + "/", 1)[-1]
    path = re.sub(r".*/site-packages/", "", path)
    return f"{name} ({path})"


def main() -> None:
    parser = argparse.ArgumentParser(description="ingest vs a bare orjson loop (see the module docstring)")
    parser.add_argument("--mb", type=float, default=180.0, help="size of the big Claude Code trace (MB)")
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--profile", action="store_true", help="also profile the big ingest with py-spy")
    parser.add_argument("--repeat", type=int, default=1, help="ingest/anchor pairs per tree")
    parser.add_argument("--work", type=Path, help="work folder (default: a new temporary folder, removed after)")
    parser.add_argument("--kind", choices=("file", "ducklake"), default="file",
                        help="warehouse the ingests write: a plain DuckDB file, or DuckLake with a SQLite catalog "
                             "(the embedded default)")
    args = parser.parse_args()
    global KIND
    KIND = args.kind
    work = args.work or Path(tempfile.mkdtemp(prefix="ptb-bench-ingest-"))
    work.mkdir(parents=True, exist_ok=True)
    import django

    django.setup()
    from demo.tree import make_demo_results

    try:
        demo_root = work / "demo"
        if not (demo_root / "SYNTHETIC").exists():
            make_demo_results(root=demo_root, runs=args.runs, seed=args.seed, long_run=True)
        big_root = work / f"big-{args.mb:g}"
        if not (big_root / "SYNTHETIC").exists():
            long_run = max(demo_root.glob("*/*/solve_out.txt"), key=lambda p: p.stat().st_size).parent
            build_big(long_run, big_root, args.mb)
        print(f"{'tree':<40} {'runs':>5} {'trace MB':>9} {'ingest s':>9} {'MB/s':>6} {'orjson loop s':>14} "
              f"{'ratio':>7} {'peak RSS MB':>12} {'cpu s':>6}")
        empty = work / "empty"
        empty.mkdir(exist_ok=True)
        startup, rss, summary, cpu = timed_ingest(work, "empty", empty)
        print(f"{'floor: an empty tree (start-up only)':<40} {0:>5} {0:>9.1f} {startup:>9.2f} {'':>6} {'':>14} "
              f"{'':>7} {rss:>12.0f} {cpu:>6.1f}", flush=True)
        for name, root in (("big", big_root), ("demo", demo_root)):
            files = trace_files(root)
            megabytes = sum(p.stat().st_size for p in files) / 1e6
            runs = sum(1 for p in root.glob("*/*") if p.is_dir() and not p.parent.name.startswith("_"))
            label = f"{name}: {root.name}" if name == "big" else f"demo: --runs {args.runs} --seed {args.seed}"
            ratios = []
            for _ in range(args.repeat):
                seconds, rss, summary, cpu = timed_ingest(work, name, root)
                anchor = bare_loop(files)
                ratios.append(seconds / anchor)
                print(f"{label:<40} {runs:>5} {megabytes:>9.1f} {seconds:>9.2f} {megabytes / seconds:>6.1f} "
                      f"{anchor:>14.3f} {seconds / anchor:>6.1f}x {rss:>12.0f} {cpu:>6.1f}", flush=True)
                print(f"  {summary.split(': ', 1)[-1]}", flush=True)
            if name == "big":
                # The least any ingest of this trace can cost: start up, decode every line (the loop), and store
                # the rows (build their columns, write them), with no redaction, parsing or derived facts.
                floor = write_floor(work, name)
                least = startup + anchor + floor["arrow_s"] + min(floor["duckdb_s"], floor["parquet_s"])
                print(f"  storing the {floor['rows']} stored rows alone: Arrow columns {floor['arrow_s']:.2f} s, "
                      f"DuckDB insert in one transaction {floor['duckdb_s']:.2f} s, Parquet file "
                      f"{floor['parquet_s']:.2f} s; start-up + loop + columns + the cheaper write = {least:.2f} s "
                      f"= {least / anchor:.1f}x the loop", flush=True)
            if args.repeat > 1:
                ratios.sort()
                print(f"  {name}: median ratio {ratios[len(ratios) // 2]:.1f}x, range {ratios[0]:.1f}-{ratios[-1]:.1f}x "
                      f"over {len(ratios)} pairs", flush=True)
        if args.profile:
            profile(work, big_root)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
