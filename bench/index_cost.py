"""What a search index of a trace costs to build: the word index the ingest writes against trigram indexes (issue 18).

Usage: .venv/bin/python bench/index_cost.py WAREHOUSE [--run ID] [--repeat 3] [--substring-steps 2000]

Reads the agent steps of one run of a plain-file warehouse (default: its longest run; ``bench/ingest_process.py --work DIR``
leaves ``DIR/warehouse-big.duckdb``, the 180 MB / 145,364-step trace) into memory and, in batches of
``traces.services.STEP_BATCH_ROWS`` steps as the ingest does, builds each index into an in-memory DuckDB table,
printing CPU seconds (this process, DuckDB's threads included; the least of ``--repeat``) and the (step, key)
pairs stored:

- ``words``: the shipped index (``traces.search_index``: DuckDB's ``regexp_extract_all`` of the lower-cased text,
  one row per (run, trace, word) with its steps);
- ``trigrams, Python``: every trigram of each lower-cased text, ``set(zip(s, s[1:], s[2:]))`` per step, one row per
  (trigram, steps);
- ``trigrams, DuckDB regexp``: the trigrams found by three ``regexp_extract_all(..., '...')`` at offsets 0, 1, 2;
- ``trigrams, DuckDB substring``: ``substring(text, i, 3)`` for every position, on the first
  ``--substring-steps`` steps only (it is quadratic in a text's length), with the time scaled to the whole trace by
  characters.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import duckdb
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from traces import search_index  # noqa: E402 - after the path
from traces.services import STEP_BATCH_ROWS  # noqa: E402

_TRIGRAMS = ("(list_concat(regexp_extract_all(X, '(?s)...'), regexp_extract_all(substring(X, 2), '(?s)...'), "
             "regexp_extract_all(substring(X, 3), '(?s)...')))")


def _batches(table: pa.Table):
    for start in range(0, table.num_rows, STEP_BATCH_ROWS):
        yield table.slice(start, STEP_BATCH_ROWS)


def words(con, table: pa.Table) -> int:
    con.execute("CREATE OR REPLACE TABLE step_words (run_id VARCHAR, trace VARCHAR, word VARCHAR, steps INTEGER[])")
    for batch in _batches(table):
        con.register("b", batch)
        search_index.index_rows(con, "b")
        con.unregister("b")
    return con.execute("SELECT sum(len(steps)) FROM step_words").fetchone()[0]


def trigrams_python(con, table: pa.Table) -> int:
    con.execute("CREATE OR REPLACE TABLE grams (gram VARCHAR, steps INTEGER[])")
    pairs = 0
    for batch in _batches(table):
        postings: dict[str, list[int]] = {}
        for idx, text_in, text_out in zip(*(batch.column(c).to_pylist() for c in ("idx", "input", "output"))):
            grams: set[tuple[str, str, str]] = set()
            for text in (text_in, text_out):
                if text:
                    low = text.lower()
                    grams.update(zip(low, low[1:], low[2:]))
            for gram in map("".join, grams):
                postings.setdefault(gram, []).append(idx)
        pairs += sum(map(len, postings.values()))
        con.register("g", pa.table({"gram": list(postings), "steps": list(postings.values())}))
        con.execute("INSERT INTO grams SELECT * FROM g")
        con.unregister("g")
    return pairs


def trigrams_duckdb(con, table: pa.Table, how: str) -> int:
    con.execute("CREATE OR REPLACE TABLE grams (gram VARCHAR, steps INTEGER[])")
    if how == "regexp":
        grams = "unnest(list_distinct(list_concat({i}, {o})))".format(
            i=_TRIGRAMS.replace("X", "lower(coalesce(input, ''))"), o=_TRIGRAMS.replace("X", "lower(output)"))
        source = "SELECT idx, {grams} AS gram FROM b"
    else:
        source = ("SELECT DISTINCT idx, substring(x, i, 3) AS gram FROM (SELECT idx, "
                  "lower(concat_ws(' ', input, output)) AS x FROM b), range(1, length(x) - 1) r(i)")
        grams = ""
    for batch in _batches(table):
        con.register("b", batch)
        con.execute(f"INSERT INTO grams SELECT gram, list(idx) FROM ({source.format(grams=grams)}) GROUP BY gram")
        con.unregister("b")
    return con.execute("SELECT sum(len(steps)) FROM grams").fetchone()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("warehouse", type=Path)
    parser.add_argument("--run", help="run id (default: the run with most steps)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--substring-steps", type=int, default=2000)
    args = parser.parse_args()
    source = duckdb.connect(str(args.warehouse), read_only=True)
    run = args.run or source.execute("SELECT id FROM runs ORDER BY step_count DESC LIMIT 1").fetchall()[0][0]
    table = source.execute("SELECT run_id, trace, idx, input, output FROM steps WHERE run_id = ? AND trace = 'agent' "
                           "ORDER BY idx", [run]).to_arrow_table()
    source.close()
    chars = sum(len(t or "") for c in ("input", "output") for t in table.column(c).to_pylist())
    some = table.slice(0, args.substring_steps)
    some_chars = sum(len(t or "") for c in ("input", "output") for t in some.column(c).to_pylist())
    print(f"run {run}: {table.num_rows:,} steps, {chars / 1e6:.1f} M characters; CPU s, least of {args.repeat}")
    con = duckdb.connect()
    cases = [("words (shipped)", lambda: words(con, table), 1.0),
             ("trigrams, Python", lambda: trigrams_python(con, table), 1.0),
             ("trigrams, DuckDB regexp", lambda: trigrams_duckdb(con, table, "regexp"), 1.0),
             (f"trigrams, DuckDB substring (first {some.num_rows:,} steps, scaled)",
              lambda: trigrams_duckdb(con, some, "substring"), chars / max(1, some_chars))]
    for label, build, scale in cases:
        best, pairs = float("inf"), 0
        for _ in range(args.repeat if scale == 1.0 else 1):
            started = time.process_time()
            pairs = build()
            best = min(best, time.process_time() - started)
        print(f"{label:>58}: {best * scale:7.2f} s CPU, {pairs:,} (step, key) pairs", flush=True)


if __name__ == "__main__":
    main()
