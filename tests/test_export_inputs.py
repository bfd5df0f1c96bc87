"""The static export renders a site page again only when what it reads changed (``export.inputs``, issue 24): each
site-scoped declaration names its sources (``distill_inputs``). These tests record every statement a site page
sends to the warehouse while it renders and fail when it reads a table, or a column of one, that no source it
declares covers: such a page would be left stale by a write to it."""
from __future__ import annotations

import json
import re
from typing import Any

import duckdb
import pytest

from export.exporter import Exporter
from export.inputs import SOURCES, TableRead
from ptbsite import warehouse
from ptbsite.warehouse import connections

# Read by the connection layer itself (whether the schema is migrated), not by a page.
CONNECTION_TABLES = {"schema_migrations"}
# Statements that read no table's rows (the connection layer's); any other statement is parsed.
NO_ROWS = {"USE", "BEGIN", "COMMIT", "ROLLBACK", "SET", "RESET", "ATTACH", "DETACH", "CHECKPOINT", "LOAD"}


class RecordingConnection:
    """A warehouse connection that records the SQL of every statement sent through it, then sends it on."""

    def __init__(self, con: duckdb.DuckDBPyConnection, log: list[str]):
        self._con = con
        self._log = log

    def execute(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        self._log.append(sql)
        return self._con.execute(sql, *args, **kwargs)

    def executemany(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        self._log.append(sql)
        return self._con.executemany(sql, *args, **kwargs)

    def sql(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        self._log.append(sql)
        return self._con.sql(sql, *args, **kwargs)

    query = sql

    def table(self, name: str) -> Any:
        self._log.append(f"SELECT * FROM {name}")
        return self._con.table(name)

    def cursor(self) -> RecordingConnection:
        return RecordingConnection(self._con.cursor(), self._log)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)


@pytest.fixture
def recorded(export_warehouse, monkeypatch) -> list[str]:
    """Every statement units of work send to the warehouse from now on (``connections._open`` patched, as its
    docstring allows: every connection of the warehouse layer comes from it)."""
    log: list[str] = []
    real_open, real_close = connections._open, connections.close
    monkeypatch.setattr(connections, "_open", lambda text: RecordingConnection(real_open(text), log))
    monkeypatch.setattr(connections, "close", lambda text, con, clean=False: real_close(
        text, con._con if isinstance(con, RecordingConnection) else con, clean=clean))
    return log


def _parsed(sql: str) -> str:
    return re.sub(r"\?|\$\d+", "NULL", sql)  # parameters: the parser binds no prepared parameter here


def _nodes(tree: Any) -> Any:
    """Every dict in a serialized statement (``json_serialize_sql``), depth first."""
    if isinstance(tree, dict):
        yield tree
        for value in tree.values():
            yield from _nodes(value)
    elif isinstance(tree, list):
        for value in tree:
            yield from _nodes(value)


def _direct_tables(ref: Any) -> dict[str, str]:
    """{alias or name: table} of the base tables a FROM clause names directly (joins walked, not subqueries)."""
    if not isinstance(ref, dict):
        return {}
    if ref.get("type") == "BASE_TABLE":
        return {ref["alias"] or ref["table_name"]: ref["table_name"]}
    if ref.get("type") == "JOIN":
        return {**_direct_tables(ref.get("left")), **_direct_tables(ref.get("right"))}
    return {}


def reads(sql: str) -> tuple[set[str], set[str], set[str]]:
    """(tables, column names, tables read with ``*``) of one statement: the tables DuckDB's parser finds in it
    (``duckdb.get_table_names``: CTE names left out), every column name it references (whatever table: an
    over-approximation), and the base tables a ``*`` or ``<alias>.*`` selects every column of."""
    tables = duckdb.get_table_names(_parsed(sql))
    with duckdb.connect() as con:  # the parser alone: no warehouse
        row = con.execute("SELECT json_serialize_sql(?)", [_parsed(sql)]).fetchone()
    assert row is not None
    tree = json.loads(row[0])
    assert not tree.get("error"), (sql, tree)
    columns = {node["column_names"][-1] for node in _nodes(tree) if node.get("class") == "COLUMN_REF"}
    starred: set[str] = set()
    for node in _nodes(tree):
        if node.get("type") == "SELECT_NODE":
            direct = _direct_tables(node.get("from_table"))
            for item in node.get("select_list", []):
                if item.get("class") == "STAR" and not item.get("columns"):
                    relation = item.get("relation_name") or ""
                    starred |= set(direct.values()) if not relation else {direct[relation]} if relation in direct \
                        else set()
    return set(tables), columns, starred


def test_reads_sees_tables_columns_and_stars():
    assert reads("SELECT p.*, (SELECT max(e.x) FROM evaluations e WHERE e.run_id = p.id) "
                 "FROM (SELECT r.id, r.state FROM runs r WHERE r.suite = ?) p") == (
        {"evaluations", "runs"}, {"x", "run_id", "id", "state", "suite"}, set())
    assert reads("SELECT * FROM runs r JOIN methods m ON m.id = r.method")[2] == {"runs", "methods"}
    assert reads("SELECT m.*, r.id FROM runs r JOIN methods m ON m.id = r.method")[2] == {"methods"}
    assert reads("WITH t AS (SELECT id FROM runs) SELECT * FROM t")[0] == {"runs"}


def _covered(declared: tuple[str, ...]) -> dict[str, set[str] | None]:
    """{table: the columns the sources ``declared`` cover of it (None: every column)}: a part's columns and the
    columns its row condition names."""
    out: dict[str, set[str] | None] = {}
    for name in declared:
        for part in SOURCES[name]:
            before = out.get(part.table, set())
            if part.columns is None or before is None:
                out[part.table] = None  # a whole table
            else:
                out[part.table] = before | set(part.columns) | set(re.findall(r"\bx\.(\w+)", part.where or ""))
    return out


def _table_columns(table: str) -> set[str]:
    with warehouse.connect() as con:
        con.execute(f"SELECT * FROM {table} LIMIT 0")
        return {d[0] for d in con.description or []}


def test_every_site_page_reads_only_what_its_declaration_names(recorded, tmp_path):
    """Each site-scoped declaration's pages (its distill_func included), rendered with the warehouse's statements
    recorded (its results kept per version forgotten first: a page computes them itself): every table they read
    is covered by a source the declaration names, every column of a table covered in part is among the part's
    columns, and no ``*`` selects a table covered in part. The pages only the export has read nothing."""
    exporter = Exporter(tmp_path / "site")
    declared = exporter.site_declarations()
    assert declared and all(d.inputs is not None for d in declared.values()), \
        [name for name, d in declared.items() if d.inputs is None]
    checked = 0
    for name, d in declared.items():
        assert set(d.inputs or ()) <= set(SOURCES), name
        warehouse.memo.forget()
        recorded.clear()
        pages = list(d.pages() if d.pages else [{}])
        for params in pages:
            url = exporter.url_of(name, params)
            if d.render:
                d.render(exporter.fetch)
            else:
                exporter.fetch(url)
        covered = _covered(d.inputs or ())
        for sql in list(recorded):  # (_table_columns below reads too)
            if sql.split(None, 1)[0].upper() in NO_ROWS or not duckdb.get_table_names(_parsed(sql)) - CONNECTION_TABLES:
                continue  # the connection layer's own (USE, BEGIN, whether the schema is migrated)
            tables, columns, starred = reads(sql)
            for table in tables - CONNECTION_TABLES:
                assert table in covered, f"{name} reads {table}, which none of {d.inputs} covers: {sql}"
                part = covered[table]
                if part is None:
                    continue
                assert table not in starred, f"{name} reads every column of {table} (covered in part): {sql}"
                extra = (columns & _table_columns(table)) - part
                assert not extra, f"{name} reads {sorted(extra)} of {table}, not covered by {d.inputs}: {sql}"
                checked += 1
    assert checked  # the runs list, the leaderboard and the judges read tables covered in part
    recorded.clear()
    exporter.export_only_pages()
    assert not [sql for sql in recorded if duckdb.get_table_names(_parsed(sql))]


def test_a_source_digest_follows_its_rows_not_their_order_or_other_columns(export_warehouse):
    from export.inputs import digests_sql, source_digests

    with warehouse.connect() as con:
        before = source_digests(con, {"run_names", "runs_listed", "latest_runs"})
        run_id = con.execute("SELECT id FROM runs ORDER BY id LIMIT 1").fetchone()[0]
    with warehouse.transaction() as con:
        con.execute("UPDATE runs SET content_hash = 'changed' WHERE id = ?", [run_id])
    with warehouse.connect() as con:
        assert source_digests(con, {"run_names", "runs_listed", "latest_runs"}) == before
    with warehouse.transaction() as con:
        con.execute("UPDATE runs SET step_count = step_count + 1 WHERE id = ?", [run_id])
    with warehouse.connect() as con:
        after = source_digests(con, {"run_names", "runs_listed", "latest_runs"})
    assert after["run_names"] == before["run_names"] and after["runs_listed"] != before["runs_listed"]
    assert digests_sql((TableRead("runs", ("id",)),)).startswith("SELECT count(*), md5(")


def test_digests_kept_on_ducklake_are_computed_again_only_where_a_table_changed(warehouse_factory, settings,
                                                                                   monkeypatch):
    from django.core.management import call_command

    from export import inputs

    settings.PTB_WAREHOUSE = warehouse_factory.make("ducklake-sqlite")
    warehouse.reset_migration_cache()
    call_command("import_published")
    names = {"published", "methods", "run_names"}
    computed: list[set[str]] = []
    real = inputs.source_digests

    def recording(con, some):
        computed.append(set(some))
        return real(con, some)

    monkeypatch.setattr(inputs, "source_digests", recording)

    def current(kept):
        with warehouse.snapshot() as con:
            return inputs.current_digests(con, names, kept), real(con, names)

    first, whole = current(None)
    assert first["snapshot"] is not None and first["sources"] == whole and computed == [names]
    again, _ = current(first)
    assert again == first and computed[-1] == set()  # nothing changed: no table read
    with warehouse.transaction() as con:
        con.execute("UPDATE agents SET name = name || ' (renamed)' WHERE key = (SELECT min(key) FROM agents)")
    renamed, whole = current(again)
    assert computed[-1] == {"published"} and renamed["sources"] == whole
    assert renamed["sources"]["published"] != first["sources"]["published"]
    assert renamed["sources"]["methods"] == first["sources"]["methods"]
    # the same snapshot id in a catalog that went its own way (another commit time): everything computed again
    current({**renamed, "snapshot": [renamed["snapshot"][0], "2000-01-01 00:00:00+00"]})
    assert computed[-1] == names
    # a change other than rows (a table created): everything computed again
    with warehouse.transaction() as con:
        con.execute("CREATE TABLE scratch (x INTEGER)")
    _, _ = current(renamed)
    assert computed[-1] == names


def test_digests_on_a_duckdb_file_are_computed_every_time(export_warehouse):
    from export import inputs

    with warehouse.snapshot() as con:
        first = inputs.current_digests(con, {"methods"}, None)
        assert first["snapshot"] is None
        assert inputs.current_digests(con, {"methods"}, first) == first


def test_fingerprints_kept_on_ducklake_are_read_again_only_for_the_runs_the_change_feed_names(
        warehouse_factory, settings, monkeypatch, demo_tree):
    from django.core.management import call_command

    from export import inputs
    from ingest.tree import ingest_tree
    from traces import selectors

    settings.PTB_WAREHOUSE = warehouse_factory.make("ducklake-sqlite")
    warehouse.reset_migration_cache()
    call_command("import_published")
    ingest_tree(root=demo_tree.root)
    read: list[set[str] | None] = []
    real = inputs.read_fingerprint_rows

    def recording(con, run_ids=None):
        read.append(None if run_ids is None else set(run_ids))
        return real(con, run_ids)

    monkeypatch.setattr(inputs, "read_fingerprint_rows", recording)

    def current(kept, scope="code"):
        """(parts, manifest entry) as kept, and the same computed from every row, nothing kept."""
        with warehouse.snapshot() as con:
            parts, entry = inputs.current_fingerprints(con, kept, scope)
            whole, whole_entry = inputs.current_fingerprints(con, None, scope)
        read.pop()  # the whole read's
        assert entry == whole_entry and parts.rows == whole.rows and parts.combined() == whole.combined()
        assert parts.peers == whole.peers and parts.cell_fingerprints() == whole.cell_fingerprints()
        assert parts.combined() == selectors.run_fingerprints()
        return entry

    first = current(None)
    assert first["snapshot"] is not None and read == [None] and len(first["runs"]) > 4
    again = current(first)
    assert again == first and len(read) == 1  # nothing changed: no row read
    one, two, three, gone = sorted(first["runs"])[:4]
    with warehouse.transaction() as con:
        con.execute("UPDATE runs SET content_hash = 'changed' WHERE id = ?", [one])
    changed = current(again)
    assert read[-1] == {one} and changed["runs"][one] != again["runs"][one]
    with warehouse.transaction() as con:
        con.execute("UPDATE evaluations SET accuracy = 0.123 WHERE run_id = ?", [two])
        con.execute("INSERT INTO verdict_overrides (run_id, kind, flagged, reason, reviewer, created_at) "
                    "VALUES (?, 'reward_hacking', TRUE, 'test', 'tester', now())", [three])
    overridden = current(changed)
    assert read[-1] <= {two, three} and three in read[-1]
    method = first["runs"][one][0]
    with warehouse.transaction() as con:  # a method's names: every run of it
        con.execute("UPDATE methods SET agent_name = agent_name || ' (renamed)' WHERE id = ?", [method])
        con.execute("DELETE FROM runs WHERE id = ?", [gone])
    renamed = current(overridden)
    assert read[-1] == {gone} | {r for r, entry in overridden["runs"].items() if entry[0] == method}
    assert gone not in renamed["runs"]
    # another scope (the code changed), another catalog's snapshot, a change other than of rows: every row read
    current(renamed, scope="other code")
    assert read[-1] is None
    current({**renamed, "snapshot": [renamed["snapshot"][0], "2000-01-01 00:00:00+00"]})
    assert read[-1] is None
    with warehouse.transaction() as con:
        con.execute("CREATE TABLE scratch (x INTEGER)")
    current(renamed)
    assert read[-1] is None


def test_fingerprints_on_a_duckdb_file_are_read_every_time_and_reused_per_unchanged_cell(export_warehouse,
                                                                                          monkeypatch):
    from export import inputs
    from traces.selectors import feeds

    picked: list[str] = []
    real = feeds.pick_peers
    monkeypatch.setattr(feeds, "pick_peers", lambda run, cell: picked.append(run.id) or real(run, cell))
    with warehouse.snapshot() as con:
        parts, first = inputs.current_fingerprints(con, None, "code")
        assert first["snapshot"] is None and len(picked) == len(first["runs"])
        picked.clear()
        again, second = inputs.current_fingerprints(con, first, "code")
        assert second == first and again.combined() == parts.combined() and picked == []
    run_id = sorted(first["runs"])[0]
    with warehouse.transaction() as con:
        con.execute("UPDATE runs SET content_hash = 'changed' WHERE id = ?", [run_id])
    with warehouse.snapshot() as con:
        changed, third = inputs.current_fingerprints(con, second, "code")
        assert picked == [run_id]  # its own part alone changed: no other run's peers or fingerprint can have
        whole = feeds.RunFingerprintParts(feeds.read_fingerprint_rows(con))
    assert changed.combined() == whole.combined() and third["runs"][run_id] != first["runs"][run_id]
    picked.clear()
    with warehouse.transaction() as con:  # what a peer list shows of it: every run of its cell
        con.execute("UPDATE runs SET run_dir = run_dir || '-moved' WHERE id = ?", [run_id])
    with warehouse.snapshot() as con:
        moved, _ = inputs.current_fingerprints(con, third, "code")
        cell = first["runs"][run_id][4:7]
        assert set(picked) == {r for r, entry in first["runs"].items() if entry[4:7] == cell} and len(picked) > 1
        whole = feeds.RunFingerprintParts(feeds.read_fingerprint_rows(con))
    assert moved.combined() == whole.combined() and moved.peers == whole.peers
