"""The ingest of a real-shape tree against its floor, side by side in one run (issue 24: "Ingest of the K=90 tree
(traces scaled to ~1 GB): <= 3x the floor ... on both cores; per-run fixed cost <= 0.05 CPU s").

Usage: .venv/bin/python bench/ingest_scale.py --tree DIR --work DIR [--kind ducklake|file] [--keep]

``--tree``: a generated tree, e.g. ``manage.py make_demo_results DIR --methods 90 --seed 7 --no-long-run
--trace-scale 0.5`` (2,613 agent runs + 56 baselines; 1.0 GB of the trace files the ingest parses). In turn:

* **start-up**: ``manage.py ingest`` of an empty tree (interpreter, Django and its apps, duckdb and pyarrow, the
  warehouse opened; ``bench/ingest_process.py``'s floor);
* **the loop**: every trace file the ingest parses (``ingest_process.trace_files``: agent traces and judge traces)
  read, split into lines, timestamp prefix stripped, ``orjson.loads`` per line (``ingest_process.bare_loop``'s
  body), CPU seconds of one pass (best of 3); and the same files split over 2 processes (both cores), wall;
* **the ingest**: ``manage.py ingest TREE --quiet`` into a fresh warehouse (DuckLake with a SQLite catalog by
  default, what ``make serve`` uses), its CPU seconds (user + system, its reaped reading processes included:
  ``os.wait4``) and wall; its 2 reading processes use both cores;
* **storing the rows**: every row the ingest stored, read back (not timed) as its ``traces.records`` row class
  (steps, step texts, runs, methods, verdicts, evaluations, facets, phases, monitor), turned into Arrow columns in
  batches of ``traces.services.STEP_BATCH_ROWS`` (``records.arrow_table``, as the ingest builds them) and written to
  one Parquet file per table; the word index's tables (``step_words``, ``word_runs``, built by SQL at ingest) read as
  Arrow and written the same way: CPU seconds, in a process of its own;
* **the passes the rules require**, each alone, in a process of its own (``required_passes``): the redaction gate
  over every trace file (secrets redacted in every spelling before anything is stored), each stored text redacted
  again as decoded text, and the word index's statement (search across runs) over the stored steps; printed with
  floor + them against 3x the floor: what is left of the target for the format parsers, the rules and the commits.

``--small DIR``: a second tree of the same shape with smaller traces (``--trace-scale 0.05``: each at its
one-training-cycle floor), ingested the same way after the first; the two ingests' CPU above the start-up, as
``runs x F + trace MB x B``, give the fixed cost per run ``F`` and the cost per MB ``B`` (two equations, two
unknowns: both trees have the same runs, so their difference is the bytes').

Printed: each part's CPU and wall, the floor (start-up + loop + columns + write) in CPU seconds, the ratio ingest /
floor (CPU; and wall against start-up + the 2-process loop + columns + write), and the ingest's CPU per run above
the floor: everything a run costs beyond decoding its lines and storing its rows, so an upper bound of its fixed
cost. The ingested warehouse stays in ``WORK/lake-tree`` (or ``WORK/warehouse-tree.duckdb``) for the export and
load benches; its data folder is ``WORK/data-tree``.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import ingest_process as ingest_bench  # noqa: E402 (bench/ingest_process.py: fresh warehouses, the loop, wait4)

_STORE_FLOOR = r"""
import json, os, sys, tempfile, time
import django
django.setup()
import pyarrow as pa, pyarrow.parquet as pq
pa.set_memory_pool(pa.system_memory_pool())  # as manage.py ingest does
from ptbsite import warehouse
from traces import records
from traces.services import STEP_BATCH_ROWS
CLASSES = [records.StepRow, records.StepTextRow, records.RunRow, records.MethodRow, records.VerdictRow,
           records.EvaluationRow, records.FacetRow, records.PhaseRow, records.MonitorRow]
folder = tempfile.mkdtemp(prefix="store-floor-")
out = {"rows": {}, "arrow_cpu": 0.0, "write_cpu": 0.0}
def write(name, tables):
    writer = None
    for table in tables:
        cpu = time.process_time()
        if writer is None:
            writer = pq.ParquetWriter(os.path.join(folder, name + ".parquet"), table.schema)
        writer.write_table(table)
        out["write_cpu"] += time.process_time() - cpu
    if writer is not None:
        cpu = time.process_time()
        writer.close()
        out["write_cpu"] += time.process_time() - cpu
with warehouse.connect() as con:
    for cls in CLASSES:
        names = records.columns(cls)
        cur = con
        cur.execute(f"SELECT {', '.join(names)} FROM {cls.TABLE}")
        def tables():
            while chunk := cur.fetchmany(STEP_BATCH_ROWS):
                rows = [cls(**dict(zip(names, r))) for r in chunk]
                out["rows"][cls.TABLE] = out["rows"].get(cls.TABLE, 0) + len(rows)
                cpu = time.process_time()
                table = records.arrow_table(cls, rows)
                out["arrow_cpu"] += time.process_time() - cpu
                yield table
        write(cls.TABLE, tables())
    for name in ("step_words", "word_runs"):
        reader = con.execute(f"SELECT * FROM {name}").fetch_record_batch(STEP_BATCH_ROWS)
        def tables():
            for batch in reader:
                out["rows"][name] = out["rows"].get(name, 0) + batch.num_rows
                yield pa.Table.from_batches([batch])
        write(name, tables())
import shutil
shutil.rmtree(folder)
print(json.dumps(out))
"""


_REQUIRED = r"""
import json, os, sys, time
import django
django.setup()
from pathlib import Path
from ptbsite import warehouse
from ingest.blocks import TraceText
from ingest.files import RunFiles
from ingest.reader import MAX_LINE_BYTES, READ_BLOCK
from ingest.redaction import Redactor
from traces import search_index
sys.path.insert(0, "bench")
import ingest_process
root = Path(sys.argv[1]).resolve()
out = {"gate_cpu": 0.0, "read_cpu": 0.0, "decoded_cpu": 0.0, "words_cpu": 0.0, "bytes": 0, "steps": 0,
       "word_rows": 0}
redactor = Redactor()
for path in ingest_process.trace_files(root):
    cpu = time.process_time()
    path.read_bytes().decode("utf-8", "replace")  # what of the gate is reading and decoding
    out["read_cpu"] += time.process_time() - cpu
    files = RunFiles(path.parent, root)
    cpu = time.process_time()
    for piece in TraceText(path, files, redactor, scan=not path.name.startswith("judge"), block=READ_BLOCK,
                           max_line=MAX_LINE_BYTES):
        out["bytes"] += len(piece)
    out["gate_cpu"] += time.process_time() - cpu
with warehouse.connect() as con:
    ids = [r[0] for r in con.execute("SELECT DISTINCT run_id FROM steps ORDER BY run_id").fetchall()]
    for start in range(0, len(ids), 16):  # ~16 runs' steps at a time, as the ingest's batches hold (read untimed)
        table = con.execute("SELECT run_id, trace, idx, input, output FROM steps WHERE run_id = ANY(?) "
                            "ORDER BY run_id, trace, idx", [ids[start:start + 16]]).to_arrow_table()
        texts = [t for column in ("input", "output") for t in table.column(column).to_pylist() if t]
        cpu = time.process_time()
        for text in texts:
            redactor.redact_decoded(text)
        out["decoded_cpu"] += time.process_time() - cpu
        con.register("new_rows", table)
        cpu = time.process_time()
        # the word index's statement as the ingest runs it on each batch of steps (traces.search_index.index_rows),
        # its rows computed, not inserted (writing them is the floor's)
        words = con.execute(search_index._INDEX_SQL.format(source="new_rows")).to_arrow_table()
        out["words_cpu"] += time.process_time() - cpu
        con.unregister("new_rows")
        out["steps"] += table.num_rows
        out["word_rows"] += words.num_rows
print(json.dumps(out))
"""


def required_passes(work: Path, tree: Path) -> dict:
    """CPU seconds of the passes the project's rules require of every trace byte, each alone, in a process of its
    own on the tree and its warehouse: the redaction gate (``ingest.blocks.TraceText``: read, decode, redact
    (``ingest.redaction``, RE2), and the agent trace's residual scan) over every trace file the ingest parses
    (``gate_cpu``; ``read_cpu``: the same files only read and decoded, the part of it a design that redacted bytes
    would not pay), each stored step text redacted again as decoded text (``Redactor.redact_decoded``, as the
    reader does: ``decoded_cpu``), and the word index's statement (``traces.search_index``'s, DuckDB's
    ``regexp_extract_all``) over the stored steps in the ingest's batches, its rows computed but not inserted
    (``words_cpu``). What is left of "<= 3x the floor" once these are paid is what the parsers, the rules and the
    warehouse's commits may spend."""
    done = subprocess.run([sys.executable, "-c", _REQUIRED, str(tree)], cwd=ROOT,
                          env=ingest_bench._env(work, "tree"), capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"required passes failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def store_floor(work: Path) -> dict:
    """CPU seconds to build Arrow columns of every stored row (``arrow_cpu``) and write them to Parquet
    (``write_cpu``), and the rows per table (module docstring), in a process of its own on the tree's warehouse."""
    done = subprocess.run([sys.executable, "-c", _STORE_FLOOR], cwd=ROOT, env=ingest_bench._env(work, "tree"),
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"storing floor failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _loop_part(files: list[str]) -> float:
    """CPU seconds of one pass of the bare loop over ``files`` (in a worker process)."""
    started = time.process_time()
    ingest_bench.bare_loop_once([Path(f) for f in files])
    return time.process_time() - started


def loop_figures(files: list[Path]) -> tuple[float, float, float]:
    """(CPU s of one pass in this process, best of 3; its wall s; wall s of one pass split over 2 processes, the
    files dealt by size so each gets about half the bytes)."""
    best_cpu = best_wall = float("inf")
    for _ in range(3):
        wall, cpu = time.perf_counter(), time.process_time()
        ingest_bench.bare_loop_once(files)
        best_cpu, best_wall = min(best_cpu, time.process_time() - cpu), min(best_wall, time.perf_counter() - wall)
    halves: list[list[str]] = [[], []]
    sizes = [0, 0]
    for path in sorted(files, key=lambda p: -p.stat().st_size):
        side = sizes.index(min(sizes))
        halves[side].append(str(path))
        sizes[side] += path.stat().st_size
    with get_context("fork").Pool(2) as pool:
        started = time.perf_counter()
        pool.map(_loop_part, halves)
        both = time.perf_counter() - started
    return best_cpu, best_wall, both


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--kind", choices=("ducklake", "file"), default="ducklake")
    parser.add_argument("--small", type=Path, help="the same shape with smaller traces: fixed cost per run")
    args = parser.parse_args()
    ingest_bench.KIND = args.kind
    args.work.mkdir(parents=True, exist_ok=True)
    files = ingest_bench.trace_files(args.tree)
    megabytes = sum(p.stat().st_size for p in files) / 1e6
    runs = sum(1 for p in args.tree.glob("*/*") if p.is_dir() and not p.parent.name.startswith(("_", ".")))
    print(f"tree {args.tree}: {runs} run dirs, {len(files)} trace files, {megabytes:.1f} MB; warehouse {args.kind}",
          flush=True)
    empty = args.work / "empty"
    empty.mkdir(exist_ok=True)
    s_wall, s_rss, _, s_cpu = ingest_bench.timed_ingest(args.work, "empty", empty)
    print(f"  start-up (empty tree):      {s_cpu:8.2f} CPU s {s_wall:8.2f} wall s  {s_rss:5.0f} MB peak", flush=True)
    l_cpu, l_wall, l_both = loop_figures(files)
    print(f"  orjson loop, 1 process:     {l_cpu:8.2f} CPU s {l_wall:8.2f} wall s ({megabytes / l_wall:.0f} MB/s); "
          f"2 processes: {l_both:.2f} wall s", flush=True)
    i_wall, i_rss, summary, i_cpu = ingest_bench.timed_ingest(args.work, "tree", args.tree)
    print(f"  ingest:                     {i_cpu:8.2f} CPU s {i_wall:8.2f} wall s  {i_rss:5.0f} MB peak | {summary}",
          flush=True)
    store = store_floor(args.work)
    rows = ", ".join(f"{name} {n:,}" for name, n in store["rows"].items())
    print(f"  storing the rows: Arrow columns {store['arrow_cpu']:.2f} CPU s, Parquet {store['write_cpu']:.2f} CPU s "
          f"({rows})", flush=True)
    floor_cpu = s_cpu + l_cpu + store["arrow_cpu"] + store["write_cpu"]
    floor_wall = s_wall + l_both + store["arrow_cpu"] + store["write_cpu"]
    print(f"floor (start-up + loop + columns + write): {floor_cpu:.2f} CPU s; ingest / floor = {i_cpu / floor_cpu:.2f}x"
          f" CPU (target <= 3x); wall: ingest {i_wall:.1f} s against start-up + the 2-process loop + columns + write "
          f"{floor_wall:.1f} s = {i_wall / floor_wall:.2f}x")
    need = required_passes(args.work, args.tree)
    passes = need["gate_cpu"] + need["decoded_cpu"] + need["words_cpu"]
    print(f"  required passes, each alone: redaction gate over {need['bytes'] / 1e6:.1f} MB of trace text "
          f"{need['gate_cpu']:.2f} CPU s (of it, reading and decoding the files alone {need['read_cpu']:.2f}), the "
          f"stored texts redacted as decoded {need['decoded_cpu']:.2f}, the word "
          f"index's statement over {need['steps']:,} steps ({need['word_rows']:,} rows) {need['words_cpu']:.2f}; "
          f"floor + these = {floor_cpu + passes:.2f} CPU s = {(floor_cpu + passes) / floor_cpu:.2f}x the floor, "
          f"leaving {3 * floor_cpu - floor_cpu - passes:.2f} CPU s of the 3x for the parsers, rules and commits",
          flush=True)
    print(f"ingest CPU per run above the floor: {(i_cpu - floor_cpu) / runs:.3f} s ({runs} runs; an upper bound of "
          f"the fixed cost per run, target <= 0.05); above the start-up alone: {(i_cpu - s_cpu) / runs:.3f} s")
    if args.small:
        small_mb = sum(p.stat().st_size for p in ingest_bench.trace_files(args.small)) / 1e6
        small_runs = sum(1 for p in args.small.glob("*/*") if p.is_dir() and not p.parent.name.startswith(("_", ".")))
        assert small_runs == runs, f"--small has {small_runs} run dirs, the tree {runs}"
        w_wall, _, w_summary, w_cpu = ingest_bench.timed_ingest(args.work, "small", args.small)
        per_mb = ((i_cpu - s_cpu) - (w_cpu - s_cpu)) / (megabytes - small_mb)
        fixed = ((w_cpu - s_cpu) - per_mb * small_mb) / runs
        print(f"  ingest of --small ({small_mb:.1f} MB): {w_cpu:.2f} CPU s {w_wall:.2f} wall s | {w_summary}")
        print(f"fit of the two ingests above the start-up: {fixed:.3f} CPU s per run (target <= 0.05) + "
              f"{per_mb:.3f} CPU s per MB of trace (the loop: {l_cpu / megabytes:.4f})")


if __name__ == "__main__":
    main()
