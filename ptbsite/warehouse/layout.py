"""How the per-run tables lie in their Parquet files on DuckLake: sorted by run, in row groups of a bounded size.

A page of one run reads its rows by ``run_id = ?``. DuckDB skips a Parquet row group only when the group's
min/max statistics of ``run_id`` exclude the id, and otherwise decompresses every column the query names over
the whole group. Run ids are hashes, so the rows of an ingest batch, written in the order their runs were read,
give every row group the whole range of ids: at K=90 (``bench/scale.py``'s trees, 2,669 runs) a steps page read
all of ``steps``' 310,058 rows in 3 groups of up to 122,880 (DuckDB's default), and its statement cost 34-47 CPU
ms against 16 at K=9, for the same ~200 steps. Sorted by run in groups of :data:`ROW_GROUP_ROWS` rows, the same
statement reads one or two groups at any K (15-21 ms at K=90; bench/run_layout.py, bench/RESULTS.md "Per-run
tables laid out by run").

DuckLake keeps a table's sort order and row-group size in its catalog (``ALTER TABLE ... SET SORTED BY``, the
``parquet_row_group_size`` option: https://ducklake.select/docs/stable/duckdb/advanced_features/sorted_tables):
it sorts every insert's rows and every compaction's merged files by it. What was written before the order was set
keeps its layout, so :func:`apply` rewrites such a table once, in groups of runs (:func:`rewrite`); compaction
(``maintenance.compact``) calls it first. A plain DuckDB file has no such setting and is left as it is.
"""
from __future__ import annotations

from dataclasses import dataclass

import duckdb

from .connections import ALIAS

ROW_GROUP_ROWS = 16_384  # rows per Parquet row group of a table with text: a run's read decompresses 1-2 groups
NUMERIC_ROW_GROUP_ROWS = 65_536  # of a table of numbers, cheap to decompress: fewer groups cost less to plan
REWRITE_ROWS = 250_000  # rows copied at once while a table is rewritten in its new order (memory bound)


@dataclass(frozen=True)
class Layout:
    """A table's layout: ``sort``, the columns its rows are sorted by (ascending; the first is ``run_id``), which
    also decide the order of a run's rows, and ``row_group_rows``, the rows per Parquet row group."""

    table: str
    sort: tuple[str, ...]
    row_group_rows: int = ROW_GROUP_ROWS

    def sorted_by(self) -> str:
        """The sort key as SQL, e.g. ``"run_id, trace, idx"`` (``SET SORTED BY`` and ``ORDER BY`` alike)."""
        return ", ".join(self.sort)


# The per-run tables that pages and the export read one run (or a few) at a time, and that grow with the runs:
# each key orders a run's rows as its readers do (steps by trace and index, samples by time, phases by start).
# Row groups measured at K=90 (bench/run_layout.py; /tmp scratch runs of 4,096-122,880 rows, bench/RESULTS.md):
# a steps page's statement 38.8 ms sorted in 122,880-row groups, 25.4 in 65,536, 17.7 in 16,384, 19.0 in 4,096;
# a run's monitor samples 8.3, 7.6, 9.8, 10.0.
LAYOUTS = (
    Layout("steps", ("run_id", "trace", "idx")),
    Layout("monitor", ("run_id", "time"), NUMERIC_ROW_GROUP_ROWS),
    Layout("phases", ("run_id", "start_s")),
)


def current(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[tuple[str, ...], int | None]]:
    """{table: (its sort columns, its row-group option or None)} of the live tables of the DuckLake warehouse's
    main schema on ``con``, from the catalog database (``ducklake_sort_info`` and ``ducklake_sort_expression``,
    whose expressions DuckLake keeps as SQL, a keyword column quoted: ``"time"``; ``ducklake_metadata``'s
    table-scoped ``parquet_row_group_size``); a table without a sort order has ``()``."""
    meta = f"__ducklake_metadata_{ALIAS}"
    rows = con.execute(
        "SELECT t.table_name, list(trim(e.expression, '\"') ORDER BY e.sort_key_index) "
        "FILTER (WHERE e.expression IS NOT NULL), any_value(m.value) "
        f"FROM {meta}.ducklake_table t JOIN {meta}.ducklake_schema s ON s.schema_id = t.schema_id "
        f"LEFT JOIN {meta}.ducklake_sort_info i ON i.table_id = t.table_id AND i.end_snapshot IS NULL "
        f"LEFT JOIN {meta}.ducklake_sort_expression e ON e.sort_id = i.sort_id AND e.table_id = t.table_id "
        f"LEFT JOIN {meta}.ducklake_metadata m ON m.scope = 'table' AND m.scope_id = t.table_id "
        "AND m.key = 'parquet_row_group_size' "
        "WHERE s.schema_name = 'main' AND t.end_snapshot IS NULL AND s.end_snapshot IS NULL "
        "GROUP BY t.table_name").fetchall()
    return {name: (tuple(sort or ()), int(size) if size is not None else None) for name, sort, size in rows}


def pending(con: duckdb.DuckDBPyConnection) -> list[Layout]:
    """The :data:`LAYOUTS` whose table's catalog settings differ from them (a table not yet laid out)."""
    now = current(con)
    return [layout for layout in LAYOUTS
            if layout.table in now and now[layout.table] != (layout.sort, layout.row_group_rows)]


def apply(con: duckdb.DuckDBPyConnection, layout: Layout, *, batch_rows: int = REWRITE_ROWS) -> int:
    """Inside the caller's transaction: give ``layout.table`` its sort order and row-group size in the catalog and
    rewrite its rows in that order (:func:`rewrite`); returns the rows rewritten. Raises duckdb.Error."""
    con.execute(f"ALTER TABLE {layout.table} SET SORTED BY ({layout.sorted_by()})")
    con.execute(f"CALL {ALIAS}.set_option('parquet_row_group_size', {int(layout.row_group_rows)}, "
                f"table_name => '{layout.table}')")
    return rewrite(con, layout, batch_rows=batch_rows)


def rewrite(con: duckdb.DuckDBPyConnection, layout: Layout, *, batch_rows: int = REWRITE_ROWS) -> int:
    """Rewrite every row of ``layout.table`` in ``layout.sort`` order, inside the caller's transaction, a range of
    runs at a time (consecutive run ids holding at most ``batch_rows`` rows, or one run): each range copied into a
    temporary table, deleted, and inserted back sorted, so memory holds one range, and each range's new file
    covers a narrow span of ids. The old files, emptied, are dropped by compaction (``ducklake_rewrite_data_files``,
    which follows). Returns the rows rewritten; what the table holds is unchanged. Raises duckdb.Error.

    Not a time-travel read (``AT (VERSION => ...)``) after one DELETE: DuckLake 1.5.5 applies the transaction's own
    deletes to it too, and reads nothing."""
    counts = con.execute(f"SELECT run_id, count(*) FROM {layout.table} GROUP BY run_id ORDER BY run_id").fetchall()
    ranges: list[tuple[str, str]] = []
    held = 0
    for run_id, rows in counts:
        if ranges and held + rows <= batch_rows:
            ranges[-1] = (ranges[-1][0], run_id)
            held += rows
        else:
            ranges.append((run_id, run_id))
            held = rows
    for low, high in ranges:
        con.execute(f"CREATE TEMPORARY TABLE layout_rows AS SELECT * FROM {ALIAS}.main.{layout.table} "
                    f"WHERE run_id BETWEEN ? AND ?", [low, high])
        try:
            con.execute(f"DELETE FROM {layout.table} WHERE run_id BETWEEN ? AND ?", [low, high])
            con.execute(f"INSERT INTO {layout.table} SELECT * FROM temp.main.layout_rows ORDER BY {layout.sorted_by()}")
        finally:
            con.execute("DROP TABLE IF EXISTS temp.main.layout_rows")
    return sum(rows for _, rows in counts)
