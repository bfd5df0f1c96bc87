"""Bulk inserts: one multi-row VALUES statement per chunk (DuckLake pays a round of catalog work per statement)."""
from __future__ import annotations

import duckdb


def insert_rows(con: duckdb.DuckDBPyConnection, table: str, rows: list[tuple], *, columns: str = "",
                chunk: int = 500) -> None:
    """Insert ``rows`` (tuples in the table's column order, or ``columns``' order) with one multi-row VALUES
    statement per ``chunk`` rows: on DuckLake each statement costs a round of catalog work, so ``executemany``
    (one statement per row) is slow there."""
    for start in range(0, len(rows), chunk):
        part = rows[start:start + chunk]
        marks = ", ".join("(" + ", ".join("?" * len(row)) + ")" for row in part)
        con.execute(f"INSERT INTO {table} {f'({columns}) ' if columns else ''}VALUES {marks}",
                    [value for row in part for value in row])
