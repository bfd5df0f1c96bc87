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

On DuckLake the digests are kept with the snapshot they were read at (:func:`current_digests`): the next export
computes again only those of the sources whose tables' rows changed since (``ducklake_snapshots``' changes), so an
unchanged re-export reads none and one run's new trace reads those over ``runs`` and ``steps``.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import duckdb

from ptbsite import warehouse
from traces.selectors import FINGERPRINT_TABLES, FingerprintRow, RunFingerprintParts, read_fingerprint_rows
from traces.selectors.runs import RUN_COLUMNS


@dataclass(frozen=True)
class TableRead:
    """The part of a warehouse table a source covers: ``columns`` (None: every column) of the rows ``where`` (SQL
    condition on the table's columns; None: every row)."""

    table: str
    columns: tuple[str, ...] | None = None
    where: str | None = None

    def row_sql(self) -> str:
        """SQL of one row of this part as text, on the table as ``x``: a struct of its columns (or the row) cast to
        VARCHAR."""
        return (f"CAST(struct_pack({', '.join(f'{c} := x.{c}' for c in self.columns)}) AS VARCHAR)"
                if self.columns else "CAST(x AS VARCHAR)")


def digests_sql(parts: tuple[TableRead, ...]) -> str:
    """SQL of one row: for each of ``parts`` (parts of one table with one ``where``) in turn, (count, md5 hex) over
    its rows as text (:meth:`TableRead.row_sql`), the texts joined in their own sorted order, so equal content gives
    an equal digest whatever order rows come in; in one scan of the table (on DuckLake each scan costs its catalog
    work), the condition pushed into it."""
    rows = ", ".join(f"{part.row_sql()} AS row{n}" for n, part in enumerate(parts))
    where = f" WHERE {parts[0].where}" if parts[0].where else ""
    return "SELECT " + ", ".join(f"count(*), md5(coalesce(string_agg(t.row{n}, chr(10) ORDER BY t.row{n}), ''))"
                                 for n in range(len(parts))) + f" FROM (SELECT {rows} FROM {parts[0].table} x{where}) t"


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
    """{source name: sha256 hex over its tables' parts' (count, md5 hex) (:func:`digests_sql`)} of the sources
    ``names``, in one statement per table and condition (``runs_listed`` and ``run_names`` read ``runs`` once).

    Raises:
        KeyError: a name that is not in SOURCES (a declaration naming an unknown source).
    """
    wanted = sorted(names)
    by_table: dict[tuple[str, str | None], list[TableRead]] = {}
    for name in wanted:
        for part in SOURCES[name]:
            if part not in by_table.setdefault((part.table, part.where), []):
                by_table[(part.table, part.where)].append(part)
    rows: dict[TableRead, tuple] = {}
    for parts in by_table.values():
        row = con.execute(digests_sql(tuple(parts))).fetchone()
        assert row is not None
        rows.update({part: (row[2 * n], row[2 * n + 1]) for n, part in enumerate(parts)})
    out: dict[str, str] = {}
    for name in wanted:
        digest = hashlib.sha256(name.encode())
        for part in SOURCES[name]:
            digest.update(f"{part.table}:{rows[part]}".encode())
        out[name] = digest.hexdigest()
    return out


# DuckLake's kinds of change (``ducklake_snapshots``' ``changes``: {kind: [table id, ...]}) that change the rows of
# the tables they name, and only those; a snapshot with any other kind (a table created, altered or dropped, a
# schema, a view) counts as a change of every table.
ROW_CHANGES = frozenset({"tables_inserted_into", "tables_deleted_from", "inlined_insert", "inlined_delete",
                         "merge_adjacent"})


def snapshot_changes(con: duckdb.DuckDBPyConnection, since: list | None) -> tuple[list | None, set[str] | None]:
    """(the DuckLake snapshot ``con``'s transaction reads, as [id, commit time as text]: the time tells a snapshot
    from the same id in a copy of the catalog that went its own way; the names of the tables whose rows changed
    after the snapshot ``since``, an earlier answer's, up to it), in one query when ``since`` is known. The
    snapshot is None on a plain DuckDB file; the tables None when they cannot be told: not DuckLake, ``since``
    None, gone (expired) or not that snapshot (another catalog), a snapshot between them gone, or a change other
    than of rows (``ROW_CHANGES``)."""
    if not warehouse.parse_spec(warehouse.warehouse_spec()).is_ducklake:
        return None, None
    alias = warehouse.ALIAS
    current = f"(SELECT id FROM ducklake_current_snapshot('{alias}'))"
    rows = []
    if since is not None and len(since) == 2 and isinstance(since[0], int):
        rows = con.execute(f"SELECT snapshot_id, CAST(snapshot_time AS VARCHAR), changes FROM ducklake_snapshots("
                           f"'{alias}') WHERE snapshot_id BETWEEN ? AND {current} ORDER BY snapshot_id",
                           [since[0]]).fetchall()
    if not rows or [rows[0][0], rows[0][1]] != since:
        row = con.execute(f"SELECT snapshot_id, CAST(snapshot_time AS VARCHAR) FROM ducklake_snapshots('{alias}') "
                          f"WHERE snapshot_id = {current}").fetchone()
        return (None if row is None else [row[0], row[1]]), None
    snapshot = [rows[-1][0], rows[-1][1]]
    if [row[0] for row in rows] != list(range(since[0], snapshot[0] + 1)):
        return snapshot, None  # a snapshot in between expired: its changes cannot be told
    ids: set[str] = set()
    for _, _, changes in rows[1:]:
        if set(changes) - ROW_CHANGES:
            return snapshot, None
        ids.update(str(table) for tables in changes.values() for table in tables)
    if not ids:
        return snapshot, set()
    # the names from the catalog database itself (~2 CPU ms; ducklake_table_info counts every table's files, ~10):
    # every name a table id had (a rename is not a change of rows: the snapshot above answered None already)
    return snapshot, {name for (name,) in con.execute(
        f"SELECT DISTINCT table_name FROM __ducklake_metadata_{alias}.ducklake_table "
        "WHERE list_contains(?::VARCHAR[], CAST(table_id AS VARCHAR))", [sorted(ids)]).fetchall()}


Changes = tuple[list | None, set[str] | None]  # an answer of snapshot_changes


def current_digests(con: duckdb.DuckDBPyConnection, names: set[str], kept: dict | None,
                    changes: Changes | None = None) -> dict:
    """{"snapshot": the DuckLake snapshot read at (:func:`snapshot_changes`; None on a DuckDB file), "sources":
    {name: digest}} of the sources ``names`` (:func:`source_digests`) as of ``con``'s transaction; the digests of
    ``kept`` (an earlier answer of this function) reused for the sources none of whose tables' rows changed since
    its snapshot, the others computed. ``changes``: :func:`snapshot_changes` since ``kept``'s snapshot, when the
    caller read it already in this transaction."""
    snapshot, changed = changes or snapshot_changes(con, (kept or {}).get("snapshot"))
    reusable: set[str] = set()
    if kept and changed is not None:
        reusable = {name for name in names & set(kept.get("sources") or {})
                    if not {part.table for part in SOURCES[name]} & changed}
    sources = {name: kept["sources"][name] for name in reusable} if kept else {}
    sources.update(source_digests(con, names - reusable))
    return {"snapshot": snapshot, "sources": dict(sorted(sources.items()))}


def changed_runs(con: duckdb.DuckDBPyConnection, since: int, until: int, tables: set[str]) -> set[str]:
    """The ids of the runs whose fingerprint rows (``traces.selectors.read_fingerprint_rows``) can have changed
    from DuckLake snapshot ``since`` (excluded) to ``until``, by the change feed (``ducklake_table_insertions``
    and ``ducklake_table_deletions``: every row inserted or deleted, an update's before and after) of those of
    ``tables`` (whose rows changed) that the rows are read from (``FINGERPRINT_TABLES``): the run a changed row
    names, or every run of a changed method; in one query."""
    feeds = []
    for table, column in FINGERPRINT_TABLES.items():
        if table in tables:
            # insertions and deletions (an update is both): ~5 CPU ms each, where ducklake_table_changes pairs
            # them up at ~30
            feed = " UNION ".join(f"SELECT {column or 'id'} FROM ducklake_table_{kind}('{warehouse.ALIAS}', 'main', "
                                  f"'{table}', {since + 1}, {until})" for kind in ("insertions", "deletions"))
            feeds.append(feed if column else f"SELECT r.id FROM runs r WHERE r.method IN ({feed})")
    if not feeds:
        return set()
    return {row[0] for row in con.execute(" UNION ".join(feeds)).fetchall()}


def current_fingerprints(con: duckdb.DuckDBPyConnection, kept: dict | None, scope: str,
                         changes: Changes | None = None) -> tuple[RunFingerprintParts, dict]:
    """(:class:`RunFingerprintParts` of every agent run as of ``con``'s transaction, {"scope": ``scope``,
    "snapshot": the DuckLake snapshot read at, "runs": {run id: [its FingerprintRow's fields..., its
    fingerprint]}} for the manifest): the rows of ``kept`` (an earlier answer's second part, of the same
    ``scope``: the code that computes fingerprints) reused but for the runs the change feed names since its
    snapshot (:func:`changed_runs`), which are read again; every row read when that cannot be told
    (:func:`snapshot_changes`: a plain DuckDB file, a snapshot expired or of another catalog, a change other than
    of rows) or nothing is kept. The fingerprints and peers are computed again only in the cells where a row
    changed, came or went (``RunFingerprintParts.kept``). ``changes``: :func:`snapshot_changes` since ``kept``'s
    snapshot, when the caller read it already in this transaction."""
    kept = kept if kept and kept.get("scope") == scope else {}
    snapshot, changed = changes or snapshot_changes(con, kept.get("snapshot"))
    previous = {run_id: (FingerprintRow(*entry[:-1]), entry[-1]) for run_id, entry in (kept.get("runs") or {}).items()}
    # verdict_overrides, which the rows read, as an empty copy when it never held a row (warehouse.rows_in_memory)
    if snapshot is None or changed is None or not previous:
        with warehouse.rows_in_memory(con, unwritten=("verdict_overrides",)):
            rows = read_fingerprint_rows(con)
    else:
        ids = changed_runs(con, kept["snapshot"][0], snapshot[0], changed)
        rows = {run_id: row for run_id, (row, _) in previous.items() if run_id not in ids}
        if ids:
            with warehouse.rows_in_memory(con, unwritten=("verdict_overrides",)):
                rows = dict(sorted({**rows, **read_fingerprint_rows(con, ids)}.items()))
    parts = RunFingerprintParts(rows, previous)
    fingerprints = parts.combined()
    return parts, {"scope": scope, "snapshot": snapshot,
                   "runs": {run_id: [*row, fingerprints[run_id]] for run_id, row in rows.items()}}
