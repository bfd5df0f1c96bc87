"""Batched ingest (``ingest.tree``: the pool's runs stored several per transaction by
``traces.services.write_runs``): the same rows as one run per transaction, fewer transactions, and a run whose
write fails is reported while the rest of its batch is stored."""
from __future__ import annotations

import duckdb
import pytest

from ptbsite import warehouse
from traces import layout, services
from ingest.tree import ingest_tree

TABLES = ("runs", "steps", "step_texts", "step_words", "verdicts", "evaluations", "facets", "phases", "monitor",
          "methods")
# Columns that differ between two ingests of the same tree by design (when they ran).
VOLATILE = {"runs": ("ingested_at",), "methods": ("ingested_at",)}


def _dump(path) -> dict[str, list[tuple]]:
    con = duckdb.connect(str(path))
    try:
        out = {}
        for table in TABLES:
            columns = [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()
                       if r[0] not in VOLATILE.get(table, ())]
            out[table] = sorted(con.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall(), key=repr)
        return out
    finally:
        con.close()


def _ingest(demo_tree, path, settings, **kwargs):
    settings.PTB_WAREHOUSE = str(path)
    warehouse.reset_migration_cache()
    return ingest_tree(root=demo_tree.root, **kwargs)


def test_batches_store_what_one_run_per_transaction_stores(demo_tree, tmp_path, settings, monkeypatch):
    transactions = []
    real = warehouse.run_in_transaction
    monkeypatch.setattr(warehouse, "run_in_transaction", lambda unit: transactions.append(1) or real(unit))
    batched = _ingest(demo_tree, tmp_path / "batched.duckdb", settings, workers=2)
    batched_transactions = len(transactions)
    settings.PTB_INGEST_BATCH_RUNS = 1
    transactions.clear()
    single = _ingest(demo_tree, tmp_path / "single.duckdb", settings, workers=2)
    assert (batched.stored, batched.failed) == (single.stored, single.failed) == (len(demo_tree.runs) +
                                                                                 len(demo_tree.baseline_runs), 0)
    assert batched.problems == single.problems
    assert len(transactions) == single.stored  # one run, one transaction
    assert batched_transactions < single.stored / 4, batched_transactions
    assert _dump(tmp_path / "batched.duckdb") == _dump(tmp_path / "single.duckdb")
    # the latest run of every cell, whichever batch its retries landed in
    con = duckdb.connect(str(tmp_path / "batched.duckdb"))
    try:
        latest = {r[0]: r[1] for r in con.execute("SELECT id, is_latest FROM runs").fetchall()}
    finally:
        con.close()
    for demo in demo_tree.runs:
        assert latest[layout.run_id(*demo.run_dir.split("/"))] == demo.is_latest, demo.run_dir


def test_a_run_that_cannot_be_written_loses_nothing_of_its_batch(demo_tree, tmp_path, settings, monkeypatch):
    victim = demo_tree.runs[3]
    victim_id = layout.run_id(*victim.run_dir.split("/"))
    real_insert = services._insert_steps

    def failing_insert(con, steps, texts, **tables):
        # fault injection: the warehouse refuses this run's steps (a full disk, a constraint), nothing else's;
        # a worker's run comes packed as Arrow tables (ParsedRun.pack)
        packed = {run_id for table in tables.get("step_tables", ()) for run_id in table.column("run_id").to_pylist()}
        if victim_id in packed or any(step.run_id == victim_id for step in steps):
            raise duckdb.IOException("injected write failure")
        real_insert(con, steps, texts, **tables)

    monkeypatch.setattr(services, "_insert_steps", failing_insert)
    report = _ingest(demo_tree, tmp_path / "one-broken.duckdb", settings, workers=2)
    total = len(demo_tree.runs) + len(demo_tree.baseline_runs)
    assert (report.stored, report.failed) == (total - 1, 1)
    assert [p for p in report.problems if "injected write failure" in p] == [
        f"{demo_tree.root / victim.run_dir}: not stored: IOException: injected write failure"]
    con = duckdb.connect(str(tmp_path / "one-broken.duckdb"))
    try:
        stored = {r[0] for r in con.execute("SELECT id FROM runs").fetchall()}
        orphans = con.execute("SELECT count(*) FROM steps WHERE run_id = ?", [victim_id]).fetchone()[0]
    finally:
        con.close()
    assert victim_id not in stored and len(stored) == total - 1
    assert orphans == 0
    # the next ingest stores it, once the warehouse takes it again
    monkeypatch.setattr(services, "_insert_steps", real_insert)
    again = ingest_tree(root=demo_tree.root)
    assert (again.stored, again.unchanged, again.failed) == (1, total - 1, 0)


@pytest.mark.parametrize("batch_runs", [2, 5])
def test_batch_boundaries_do_not_change_the_latest_flags(demo_tree, tmp_path, settings, batch_runs):
    settings.PTB_INGEST_BATCH_RUNS = batch_runs
    _ingest(demo_tree, tmp_path / f"b{batch_runs}.duckdb", settings, workers=2)
    con = duckdb.connect(str(tmp_path / f"b{batch_runs}.duckdb"))
    try:
        latest = dict(con.execute("SELECT id, is_latest FROM runs").fetchall())
    finally:
        con.close()
    for demo in demo_tree.runs:
        assert latest[layout.run_id(*demo.run_dir.split("/"))] == demo.is_latest, demo.run_dir


# --- what the storing process is spared (issue 24, i24i) -----------------------------------------------------------

def test_a_run_packed_by_its_worker_holds_the_rows_it_was_read_with(demo_tree, fresh_warehouse):
    """``ParsedRun.pack``: every row list becomes one Arrow table of the same rows, the lists left empty; and it
    pickles as a few buffers per table (smaller than the row objects)."""
    import copy
    import dataclasses
    import pickle

    from django.conf import settings as django_settings

    from ingest.reader import Ingester
    from ingest.redaction import Redactor
    from traces import records

    ingester = Ingester(root=demo_tree.root, suite_id=django_settings.DEFAULT_SUITE, redactor=Redactor({}),
                        synthetic=True)
    demo = next(d for d in demo_tree.runs if d.steps_planned)
    method = layout.parse_method_name(demo.run_dir.split("/")[0])
    rows = ingester.parse_run(method, demo_tree.root / demo.run_dir)
    packed = copy.deepcopy(rows)
    packed.pack()
    lists = dict(records.PACKED)
    assert rows.steps and rows.verdicts and rows.facets and rows.phases
    for name, cls in lists.items():
        assert getattr(packed, name) == []
        expected = [dataclasses.asdict(r) for r in getattr(rows, name)]
        got = packed.packed[cls.TABLE].to_pylist() if cls.TABLE in packed.packed else []
        assert got == expected, name
    assert packed.run == rows.run and packed.problems == rows.problems
    assert len(pickle.dumps(packed)) < len(pickle.dumps(rows))


def test_the_ingest_writes_on_one_duckdb_thread_and_gives_the_setting_back(demo_tree, tmp_path, settings,
                                                                           monkeypatch):
    settings.PTB_WAREHOUSE = str(tmp_path / "threads.duckdb")
    warehouse.reset_migration_cache()
    with warehouse.connect() as con:
        con.execute("SET threads = 3")
    seen = []
    real_write = services.write_runs

    def write_runs(con, *args, **kwargs):
        seen.append(con.execute("SELECT current_setting('threads')").fetchone()[0])
        return real_write(con, *args, **kwargs)

    monkeypatch.setattr(services, "write_runs", write_runs)
    assert ingest_tree(root=demo_tree.root, workers=2).stored > 0
    assert seen and set(seen) == {1}
    with warehouse.connect() as con:
        assert con.execute("SELECT current_setting('threads')").fetchone()[0] == 3
