"""What the static export's site pages are computed from, as named sources whose digests say whether a page must be
rendered again (issue 24: one run's new trace re-rendered every site page, 46 CPU s at K=90, although no byte of
them changed).

A site-scoped declaration names the sources its pages read (``distill_inputs`` in its app's ``urls.py``,
``ptbsite.distill``); the exporter renders its pages again only when the code or one of those digests changed
(``export.exporter.Exporter.site_pages``). A source is one or more :class:`TableRead`: the rows and columns of a
warehouse table, hashed in SQL (md5 over each row cast to text, in the order of that text: the digest depends on
the content alone, not on the order DuckDB returns rows in nor on the warehouse's version token). At K=90 (2,613
runs) each costs ~10-60 CPU ms.

A source must cover everything its pages read: a page read a table no source of its declaration covers, or a
column of it the source leaves out, would be left stale after a write. ``tests/test_export_inputs.py`` renders each
site declaration's pages with every warehouse statement recorded and fails on such a read.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import duckdb

from traces.selectors.runs import RUN_COLUMNS


@dataclass(frozen=True)
class TableRead:
    """The part of a warehouse table a source covers: ``columns`` (None: every column) of the rows ``where`` (SQL
    condition on the table's columns; None: every row)."""

    table: str
    columns: tuple[str, ...] | None = None
    where: str | None = None

    def digest_sql(self) -> str:
        """SQL of one row (count, md5 hex) over this part: each row as text (a struct cast to VARCHAR), the texts
        joined in their own sorted order, so equal content gives an equal digest whatever order rows come in."""
        row = (f"CAST(struct_pack({', '.join(f'{c} := x.{c}' for c in self.columns)}) AS VARCHAR)"
               if self.columns else "CAST(x AS VARCHAR)")
        where = f" WHERE {self.where}" if self.where else ""
        return (f"SELECT count(*), md5(coalesce(string_agg(t.row, chr(10) ORDER BY t.row), '')) "
                f"FROM (SELECT {row} AS row FROM {self.table} x{where}) t")


def _columns(text: str) -> tuple[str, ...]:
    return tuple(c.strip() for c in text.split(","))


# The published data (leaderboard.services.import_published; the suites' rows): small tables, whole.
PUBLISHED_TABLES = ("suites", "agents", "base_models", "benchmarks", "reported_cells", "reported_facts",
                    "reported_scores", "reported_times", "reported_series")

# {source name: the parts of tables it covers}. Declarations name these in ``distill_inputs``.
SOURCES: dict[str, tuple[TableRead, ...]] = {
    "published": tuple(TableRead(table) for table in PUBLISHED_TABLES),
    # methods: each agent's names, scaffold, effort, results root (written by the ingest)
    "methods": (TableRead("methods"),),
    # what the pages over the latest runs read (migration 0021, kept at write time by
    # traces.services.refresh_latest_runs): score, state, verdicts, overrides, facets, phases, tokens per latest run
    "latest_runs": (TableRead("latest_runs"),),
    # which runs exist and where (the leaderboard's count of runs per suite, the judges' runs): not their content
    "run_names": (TableRead("runs", _columns("id, method, suite, benchmark, base_model, run_dir, is_latest")),),
    # what the runs list and api/runs.json show of each run (traces.selectors.runs.RUN_COLUMNS): not its content hash
    "runs_listed": (TableRead("runs", _columns(RUN_COLUMNS)),),
    "evaluations": (TableRead("evaluations"),),
    "verdicts": (TableRead("verdicts"),),
    "overrides": (TableRead("verdict_overrides"),),
    "challenges": (TableRead("verdict_challenges"), TableRead("challenge_events")),
    # the steps the judges' report card cites: the agent trace's steps the site's rules found suspicious
    "suspicious_steps": (TableRead("steps", ("run_id", "idx", "suspicious"),
                                   "x.trace = 'agent' AND x.suspicious IS NOT NULL"),),
}


def source_digests(con: duckdb.DuckDBPyConnection, names: set[str]) -> dict[str, str]:
    """{source name: sha256 hex over its tables' parts (:meth:`TableRead.digest_sql`)} of the sources ``names``.

    Raises:
        KeyError: a name that is not in SOURCES (a declaration naming an unknown source).
    """
    out: dict[str, str] = {}
    for name in sorted(names):
        digest = hashlib.sha256(name.encode())
        for part in SOURCES[name]:
            row = con.execute(part.digest_sql()).fetchone()
            digest.update(f"{part.table}:{row}".encode())
        out[name] = digest.hexdigest()
    return out
