"""A digest of every table an ingest writes, to tell whether two ingests of the same tree stored the same rows
(issue 24, i24i: the ingest made cheaper, its rows unchanged).

Usage: PTB_WAREHOUSE=SPEC .venv/bin/python bench/warehouse_digest.py > A.txt; the same for the other warehouse
> B.txt; diff A.txt B.txt

Printed per table: its row count and a sha256 of its rows in a fixed order, the times of the ingest itself left
out (``methods.ingested_at``, ``runs.ingested_at``) and ``runs.rules_version`` (the code's version: it changes
with any edit of a rule module). Lists a row holds in no set order are sorted first (``step_words.steps``,
``word_runs.runs``). ``step_words`` and ``word_runs`` are also digested as what they index, whatever the rows the
batches split it into: per (run, trace, word) the distinct steps, per word the distinct runs (``*_index``); and
``step_words_sorted`` is the sort's bookkeeping (how many rows were sorted): its row count only. The schema is
digested too: the migrations recorded (not when), every table's columns, every view's definition.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")

QUERIES = {
    "methods": "SELECT * EXCLUDE (ingested_at) FROM methods ORDER BY ALL",
    "runs": "SELECT * EXCLUDE (ingested_at, rules_version) FROM runs ORDER BY ALL",
    "steps": "SELECT * FROM steps ORDER BY run_id, trace, idx",
    "step_texts": "SELECT * FROM step_texts ORDER BY ALL",
    "step_words": "SELECT run_id, trace, word, list_sort(steps) FROM step_words ORDER BY ALL",
    "step_words_index": ("SELECT run_id, trace, word, list_sort(list_distinct(flatten(list(steps)))) FROM step_words "
                         "GROUP BY ALL ORDER BY ALL"),
    "word_runs": "SELECT word, list_sort(runs) FROM word_runs ORDER BY ALL",
    "word_runs_index": "SELECT word, list_sort(list_distinct(flatten(list(runs)))) FROM word_runs GROUP BY ALL "
                       "ORDER BY ALL",
    "verdicts": "SELECT * FROM verdicts ORDER BY ALL",
    "evaluations": "SELECT * FROM evaluations ORDER BY ALL",
    "facets": "SELECT * FROM facets ORDER BY ALL",
    "phases": "SELECT * FROM phases ORDER BY ALL",
    "monitor": "SELECT * FROM monitor ORDER BY ALL",
    "step_words_sorted": "SELECT count(*) FROM step_words_sorted",
    "latest_runs": "SELECT * FROM latest_runs ORDER BY ALL",
    "schema_migrations": "SELECT version, name FROM schema_migrations ORDER BY ALL",
    "columns": ("SELECT table_name, ordinal_position, column_name, data_type, is_nullable, column_default FROM "
                "information_schema.columns WHERE table_catalog = current_database() ORDER BY ALL"),
    "views": "SELECT view_name, sql FROM duckdb_views() WHERE database_name = current_database() ORDER BY ALL",
}


def digest() -> dict[str, tuple[int, str]]:
    """{table: (rows, sha256 of the rows' repr in order)} of the warehouse of ``PTB_WAREHOUSE``."""
    from ptbsite import warehouse

    out = {}
    with warehouse.connect() as con:
        for name, query in QUERIES.items():
            sha, rows = hashlib.sha256(), 0
            cur = con.execute(query)
            while chunk := cur.fetchmany(10_000):
                for row in chunk:
                    sha.update(repr(row).encode("utf-8", "surrogatepass"))
                rows += len(chunk)
            out[name] = (rows, sha.hexdigest()[:16])
    return out


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    import django

    django.setup()
    for name, (rows, sha) in digest().items():
        print(f"{name:20} {rows:10,} {sha}")


if __name__ == "__main__":
    main()
