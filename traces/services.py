"""Writes of the traces app: storing ingested runs (``write_runs``, ``write_run``, ``StepWriter``, called by
``traces.ingest``), and the writes other apps make to runs (a rerun's evaluation, a reviewer's override, a re-run judge's verdicts).

A run is stored in one transaction (with the other runs of its ingest batch): with all its steps or not at all. A step's input or output longer than
:data:`STEP_TEXT_CAP` (256 KiB of UTF-8) is stored cut at that size in the steps table (the pages say how many
bytes are not shown); the whole text is kept in ``step_texts``, zlib-compressed in chunks of :data:`TEXT_CHUNK`
bytes, and served range by range (``traces.selectors.step_text``). Each batch of steps written also writes its
rows of the word index ``step_words`` (``traces.search_index``), from the steps' whole texts, in the same
transaction. Reading results trees is ``traces.ingest``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone

from functools import cache
from typing import Any

from ptbsite import warehouse

from . import search_index
from .verdicts import SCORED_KINDS, Verdict, effective_flags

STEP_TEXT_CAP = 256 * 1024  # bytes (UTF-8) of a step's input or output stored in the steps table
TEXT_CHUNK = 1024 * 1024    # bytes of a whole text per compressed chunk in step_texts
STEP_BATCH_ROWS = 4096      # step rows a StepWriter writes at a time ...
STEP_BATCH_BYTES = 16 * 1024 * 1024  # ... or fewer, holding this many bytes of text


STEP_COLUMNS = ["run_id", "trace", "idx", "time", "elapsed_s", "kind", "tool", "input", "output", "is_error",
                "call_id", "tokens_in", "tokens_out", "cost_usd", "line", "suspicious", "label", "input_bytes",
                "output_bytes"]


@cache
def _arrow_types() -> dict[str, list]:
    """The Arrow types of the rows written as Arrow tables. pyarrow is imported here, on the first write, not when a
    web worker imports this module for a constant (~70 MB of RSS; bench/web_memory.py)."""
    import pyarrow as pa

    return {
        "steps": [pa.string(), pa.string(), pa.int32(), pa.timestamp("us"), pa.float64(), pa.string(), pa.string(),
                  pa.string(), pa.string(), pa.bool_(), pa.string(), pa.int64(), pa.int64(), pa.float64(), pa.int32(),
                  pa.string(), pa.string(), pa.int64(), pa.int64()],
        "texts": [pa.string(), pa.string(), pa.int32(), pa.string(), pa.int32(), pa.binary()],
        "facets": [pa.string(), pa.string(), pa.string(), pa.float64(), pa.string()],
        "phases": [pa.string(), pa.string(), pa.float64(), pa.float64(), pa.int32(), pa.int32()],
        "monitor": [pa.string(), pa.timestamp("us"), pa.float64(), pa.float64(), pa.float64(), pa.float64()],
    }


def __getattr__(name: str) -> Any:
    """``STEP_TYPES`` and ``TEXT_TYPES`` (Arrow types of ``steps`` and ``step_texts`` rows), built on first use."""
    if name == "STEP_TYPES":
        return _arrow_types()["steps"]
    if name == "TEXT_TYPES":
        return _arrow_types()["texts"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def delete_run(con, run_id: str) -> None:
    """Delete a stored run's rows (runs, steps, texts, word index, verdicts, facets, phases, monitor, its original
    evaluation), inside the caller's transaction; a run not stored (the common case) costs one query."""
    # A new run skips the deletes, each a scan of a table that grows with every run ingested.
    if con.execute("SELECT count(*) FROM runs WHERE id = ?", [run_id]).fetchone()[0] == 0:
        return
    for table in ("runs", "steps", "step_texts", "step_words", "verdicts", *_ANALYSIS_TABLES):
        con.execute(f"DELETE FROM {table} WHERE {'id' if table == 'runs' else 'run_id'} = ?", [run_id])
    con.execute("DELETE FROM evaluations WHERE run_id = ? AND origin = 'original'", [run_id])


def _insert_steps(con, steps: list[tuple], texts: list[tuple]) -> None:
    import pyarrow as pa

    if steps:
        columns = list(zip(*steps))
        table = pa.table({name: pa.array(column, type=typ)
                          for name, column, typ in zip(STEP_COLUMNS, columns, _arrow_types()["steps"])})
        con.register("new_steps", table)
        try:
            con.execute(f"INSERT INTO steps ({', '.join(STEP_COLUMNS)}) SELECT * FROM new_steps ORDER BY trace, idx")
            search_index.index_rows(con, "new_steps")
        finally:
            con.unregister("new_steps")
    if texts:
        table = pa.table({f"c{i}": pa.array([r[i] for r in texts], type=t) for i, t in enumerate(_arrow_types()["texts"])})
        con.register("new_texts", table)
        try:
            con.execute("INSERT INTO step_texts SELECT * FROM new_texts")
        finally:
            con.unregister("new_texts")
        search_index.index_whole_texts(con, texts)


class StepWriter:
    """Step rows (and ``step_texts`` rows) of a run written in batches inside the caller's transaction, so that
    a long trace is never held whole: :meth:`add` rows in order, :meth:`flush` at the end. A batch is written
    when it holds ``batch_rows`` steps or ``batch_bytes`` bytes of text."""

    def __init__(self, con, *, batch_rows: int | None = None, batch_bytes: int | None = None) -> None:
        self.con = con
        self.batch_rows = batch_rows or STEP_BATCH_ROWS
        self.batch_bytes = batch_bytes or STEP_BATCH_BYTES
        self.steps: list[tuple] = []
        self.texts: list[tuple] = []
        self.written = 0
        self._bytes = 0

    def add(self, row: tuple, size: int) -> None:
        """One steps-table row (STEP_COLUMNS order); ``size``: bytes of text it (and its texts rows) hold."""
        self.steps.append(row)
        self._bytes += size
        if len(self.steps) >= self.batch_rows or self._bytes >= self.batch_bytes:
            self.flush()

    def flush(self) -> None:
        """Write the rows held. Raises duckdb.Error."""
        _insert_steps(self.con, self.steps, self.texts)
        self.written += len(self.steps)
        self.steps, self.texts, self._bytes = [], [], 0


@dataclass(frozen=True)
class RunWrite:
    """One parsed run to store: ``rows`` as ``traces.ingest.Ingester.parse_run`` gives them, its method's row
    (``methods`` column order), and what the caller knows of the warehouse (see :func:`write_run`)."""

    rows: dict
    method_row: tuple
    replace: bool = True
    method_stored: bool = False
    alone: bool = False


def write_run(con, rows: dict, *, method_row: tuple, replace: bool = True, method_stored: bool = False,
              alone: bool = False) -> None:
    """Store one run inside the caller's transaction: upsert the method, (``replace``: delete
    the run stored before, see :func:`delete_run`), insert the run's rows, apply ``rows["late_usage"]``
    (``[(tokens_in, tokens_out, trace, idx)]`` for steps a :class:`StepWriter` wrote already), and recompute the
    latest-run flags of its cell. Raises duckdb.Error.

    What the caller may know already, so that fewer statements run (on DuckLake each one costs a round of
    catalog work, ~10-25 ms): ``replace=False``, the run is not stored (no delete is tried); ``method_stored``,
    ``method_row`` is stored as it is (an earlier run of the same ingest wrote it); ``alone``, no other run of
    the run's cell (method, benchmark, base model) is stored, so it is the cell's latest and no flag changes.
    """
    write_runs(con, [RunWrite(rows, method_row, replace=replace, method_stored=method_stored, alone=alone)])


def write_runs(con, batch: list[RunWrite]) -> None:
    """Store several runs inside the caller's transaction with one statement per table for the whole batch
    (each :class:`RunWrite` as :func:`write_run` would, in order; a later method row of the same method wins):
    the per-run cost of an ingest on DuckLake is its statements, each a round of catalog work, so a batch of N
    runs costs about what one run did (bench/ingest_batch.py). Raises duckdb.Error: nothing of the batch is
    stored once the caller rolls back."""
    if not batch:
        return
    methods = {w.method_row[0]: w.method_row for w in batch if not w.method_stored}
    if methods:
        con.execute(f"DELETE FROM methods WHERE id IN ({', '.join('?' * len(methods))})", list(methods))
        warehouse.insert_rows(con, "methods", list(methods.values()))
    for w in batch:
        if w.replace:
            delete_run(con, w.rows["run"]["id"])
    import pyarrow as pa  # on the first write (_arrow_types)

    runs = _latest_in_batch([w.rows["run"] for w in batch])
    columns = list(runs[0])
    table = pa.Table.from_pylist([{c: run[c] for c in columns} for run in runs])
    con.register("new_runs", table)
    try:
        con.execute(f"INSERT INTO runs ({', '.join(columns)}) SELECT * FROM new_runs")
    finally:
        con.unregister("new_runs")
    _insert_steps(con, [step for w in batch for step in w.rows["steps"]],
                  [text for w in batch for text in w.rows.get("texts") or []])
    for w in batch:
        for tokens_in, tokens_out, trace, idx in w.rows.get("late_usage", []):
            con.execute("UPDATE steps SET tokens_in = ?, tokens_out = ? WHERE run_id = ? AND trace = ? AND idx = ?",
                        [tokens_in, tokens_out, w.rows["run"]["id"], trace, idx])
    warehouse.insert_rows(con, "verdicts", [v for w in batch for v in w.rows["verdicts"]])
    warehouse.insert_rows(con, "evaluations", [e for w in batch for e in w.rows["evaluations"]])
    _store_analysis(con, {table: [r for w in batch for r in w.rows.get(table) or []] for table in _ANALYSIS_TABLES})
    cells = sorted({(w.rows["run"]["method"], w.rows["run"]["benchmark"], w.rows["run"]["base_model"])
                    for w in batch if not (w.alone and w.rows["run"]["is_latest"])})
    if not cells:
        return
    # The latest run of a cell is the one with the highest cluster id; only rows whose flag changes are written
    # (DuckLake writes every updated row again). One statement for every cell of the batch.
    values = ", ".join("(?, ?, ?)" for _ in cells)
    con.execute(
        f"UPDATE runs SET is_latest = (runs.cluster_id = top.cluster_id) FROM ("
        f"SELECT r.method, r.benchmark, r.base_model, max(r.cluster_id) AS cluster_id FROM runs r "
        f"JOIN (VALUES {values}) AS cell(method, benchmark, base_model) USING (method, benchmark, base_model) "
        f"GROUP BY ALL) AS top WHERE runs.method = top.method AND runs.benchmark = top.benchmark AND "
        f"runs.base_model = top.base_model AND runs.is_latest IS DISTINCT FROM (runs.cluster_id = top.cluster_id)",
        [value for cell in cells for value in cell])


def _latest_in_batch(runs: list[dict]) -> list[dict]:
    """The batch's run rows with ``is_latest`` already False where a run of the same cell (method, benchmark, base
    model) in the batch has a higher cluster id: the rows go in with the flag the UPDATE after the insert would
    give them, so it rewrites only rows of earlier batches. An UPDATE of a row just inserted leaves a delete file
    beside every batch's runs file, which ``merge_adjacent_files`` cannot merge and every query of ``runs`` then
    reads (K=90: 58 files, 56 with deletes: a scan of ``runs`` cost 16 CPU ms against 4; bench/RESULTS.md)."""
    top: dict[tuple, int] = {}
    for run in runs:
        cell = (run["method"], run["benchmark"], run["base_model"])
        top[cell] = max(top.get(cell, run["cluster_id"]), run["cluster_id"])
    return [{**run, "is_latest": False} if run["is_latest"] and
            run["cluster_id"] != top[(run["method"], run["benchmark"], run["base_model"])] else run for run in runs]


_ANALYSIS_TABLES = ("facets", "phases", "monitor")


def _store_analysis(con, rows: dict[str, list[tuple]]) -> None:
    """Insert facets, phases and monitor samples (``rows``: table -> rows of any number of runs), inside the
    caller's transaction, which has deleted earlier versions of those runs.

    Rows go in as Arrow tables: a 50-hour run has 3,000 monitor samples, too many for row-by-row inserts.
    """
    import pyarrow as pa

    for table in _ANALYSIS_TABLES:
        types = _arrow_types()[table]
        if rows.get(table):
            data = pa.table({f"c{i}": pa.array([r[i] for r in rows[table]], type=t) for i, t in enumerate(types)})
            con.register("new_rows", data)
            con.execute(f"INSERT INTO {table} SELECT * FROM new_rows")
            con.unregister("new_rows")


def refresh_agent(method_row: tuple) -> None:
    """Give a stored method the agent the suite maps it to now (key, name, effort): unchanged runs are skipped on
    re-ingest, but an edited suite file must still regroup them."""
    method, key, name, effort = method_row[0], method_row[8], method_row[9], method_row[10]

    def write(con) -> None:
        con.execute("UPDATE methods SET agent_key = ?, agent_name = ?, reasoning_effort = ? WHERE id = ? AND "
                    "(agent_key <> ? OR agent_name <> ? OR reasoning_effort IS DISTINCT FROM ?)",
                    [key, name, effort, method, key, name, effort])

    warehouse.run_in_transaction(write)



class UnknownRun(LookupError):
    """No run with this id is stored."""


def record_dir_times(times: list[tuple[str, datetime | None, str | None]]) -> None:
    """Set ``runs.dir_time`` and ``dir_time_source`` of stored runs, ``[(run id, time (naive UTC), source)]``, in
    one transaction: runs stored before migration 0016 get their directory's time at the next ingest of the tree,
    although their files did not change (``traces.ingest.tree``). Raises warehouse.WarehouseUnavailable."""
    if not times:
        return

    def write(con) -> None:
        for run_id, moment, source in times:
            con.execute("UPDATE runs SET dir_time = ?, dir_time_source = ? WHERE id = ?", [moment, source, run_id])

    warehouse.run_in_transaction(write)


def _require_run(con, run_id: str) -> None:
    if con.execute("SELECT count(*) FROM runs WHERE id = ?", [run_id]).fetchone()[0] == 0:
        raise UnknownRun(f"no run {run_id}")


def add_evaluation(*, run_id: str, accuracy: float, metrics: dict, provenance: dict, evaluation_id: str,
                   exploratory: str = "") -> None:
    """Store a rerun's score as a new evaluation of the run; earlier evaluations are kept.

    ``accuracy`` is a fraction 0..1. Storing the same ``evaluation_id`` again replaces that row (a worker's
    repeated report adds nothing). ``exploratory`` empty: the rerun scored the benchmark's own dataset with all
    of its samples, so it is stored with origin ``rerun`` and, being the newest, becomes the run's score
    (traces.selectors). Otherwise it says why it is not such a rerun (e.g. "2 samples, not the whole test set"):
    stored with origin ``rerun-exploratory`` and that reason in the provenance (``exploratory``), shown as an
    exploratory evaluation and never the run's score, so the leaderboard built from runs keeps the original
    (final scores use the benchmark's full test set, spec 4.1).

    Raises:
        UnknownRun: no such run. ValueError: accuracy outside 0..1.
    """
    if not 0.0 <= accuracy <= 1.0:
        raise ValueError(f"accuracy {accuracy} is not a fraction 0..1")
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    if exploratory:
        provenance = {**provenance, "exploratory": exploratory}

    def write(con) -> None:
        _require_run(con, run_id)
        con.execute("DELETE FROM evaluations WHERE id = ?", [evaluation_id])
        con.execute("INSERT INTO evaluations VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [evaluation_id, run_id, "rerun-exploratory" if exploratory else "rerun", float(accuracy),
                     json.dumps(metrics), json.dumps(provenance), now])

    warehouse.run_in_transaction(write)


def override_verdict(*, run_id: str, kind: str, flagged: bool, reason: str, reviewer: str) -> dict:
    """Record a reviewer's verdict on one scored kind (contamination or disallowed_model) of a run.

    Appends to the audit log (``verdict_overrides``, never updated or deleted) with the effective verdict it
    replaces (``previous``: flagged | clean | judge_error); the latest override of a kind decides the run's
    flag from then on (traces.verdicts.effective_flags). Returns the stored row as traces.selectors.override_log
    shapes it.

    Raises:
        UnknownRun: no such run. ValueError: an unscored kind, or an empty reason or reviewer.
    """
    if kind not in SCORED_KINDS:
        raise ValueError(f"kind must be one of {', '.join(SCORED_KINDS)}, not {kind!r}")
    if not reason.strip() or not reviewer.strip():
        raise ValueError("an override needs a written reason and a reviewer")
    now = datetime.now(timezone.utc).replace(tzinfo=None)

    def write(con) -> str:
        _require_run(con, run_id)
        verdicts = [Verdict(*r) for r in con.execute(
            "SELECT judge, attempt, era, kind, value, flagged, text, note, source_file FROM verdicts WHERE run_id = ?",
            [run_id]).fetchall()]
        overrides = dict(con.execute(
            "SELECT kind, flagged FROM verdict_overrides WHERE run_id = ? ORDER BY created_at", [run_id]).fetchall())
        previous = effective_flags(verdicts, overrides)[kind] or "clean"
        con.execute(
            "INSERT INTO verdict_overrides (run_id, kind, flagged, reason, reviewer, created_at, previous) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)", [run_id, kind, flagged, reason.strip(), reviewer, now, previous])
        return previous

    previous = warehouse.run_in_transaction(write)
    return {"kind": kind, "previous": previous, "flagged": flagged, "new": "flagged" if flagged else "clean",
            "reason": reason.strip(), "reviewer": reviewer, "created_at": now}


def store_judge_rerun(*, run_id: str, verdicts: list[Verdict]) -> int:
    """Store a re-run judge's verdicts as ``rerun`` attempts of the run, replacing those of an earlier judge
    rerun with the same (judge, era, kind); returns how many were stored.

    Original verdicts are untouched. As in the results tree's ``*_rerun`` files, a txt-era rerun is shown but
    does not change the effective flag (spec 3.1); a reviewer's override does. Re-ingesting a changed run
    directory replaces all its verdicts with what its files say.

    Raises:
        UnknownRun: no such run.
    """
    rows = [(run_id, v.judge, "rerun", v.era, v.kind, v.value, v.flagged, v.text, v.note, v.source_file)
            for v in verdicts]

    def write(con) -> None:
        _require_run(con, run_id)
        for row in rows:
            con.execute("DELETE FROM verdicts WHERE run_id = ? AND judge = ? AND attempt = 'rerun' AND era = ? AND kind = ?",
                        [run_id, row[1], row[3], row[4]])
        warehouse.insert_rows(con, "verdicts", rows)

    warehouse.run_in_transaction(write)
    return len(rows)
