"""Writes of the traces app: storing one ingested run (``store_run``, called by ``traces.ingest``), and the
writes other apps make to runs (a rerun's evaluation, a reviewer's override, a re-run judge's verdicts).

A run is stored in one transaction: with all its steps or not at all. A step's input or output longer than
:data:`STEP_TEXT_CAP` (256 KiB of UTF-8) is stored cut at that size in the steps table (the pages say how many
bytes are not shown); the whole text is kept in ``step_texts``, zlib-compressed in chunks of :data:`TEXT_CHUNK`
bytes, and served range by range (``traces.selectors.step_text``). Each batch of steps written also writes its
rows of the word index ``step_words`` (``traces.search_index``), from the steps' whole texts, in the same
transaction. Reading results trees is ``traces.ingest``.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone

import pyarrow as pa

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
STEP_TYPES = [pa.string(), pa.string(), pa.int32(), pa.timestamp("us"), pa.float64(), pa.string(), pa.string(),
              pa.string(), pa.string(), pa.bool_(), pa.string(), pa.int64(), pa.int64(), pa.float64(), pa.int32(),
              pa.string(), pa.string(), pa.int64(), pa.int64()]
TEXT_TYPES = [pa.string(), pa.string(), pa.int32(), pa.string(), pa.int32(), pa.binary()]


def store_run(rows: dict, *, method_row: tuple, replace: bool = True, method_stored: bool = False,
              alone: bool = False) -> None:
    """Replace one run (and upsert its method) in one transaction; recompute the latest-run flags of its cell.

    ``rows`` as ``traces.ingest.Ingester.parse_run`` gives them; ``replace``, ``method_stored`` and ``alone`` as
    :func:`write_run`. Raises:
        warehouse.WarehouseUnavailable, duckdb.Error: nothing of the run is stored then.
    """
    warehouse.run_in_transaction(lambda con: write_run(con, rows, method_row=method_row, replace=replace,
                                                       method_stored=method_stored, alone=alone))


def delete_run(con, run_id: str) -> None:
    """Delete a stored run's rows (runs, steps, texts, word index, verdicts, facets, phases, monitor, its original
    evaluation), inside the caller's transaction; a run not stored (the common case) costs one query."""
    # A new run skips the deletes, each a scan of a table that grows with every run ingested.
    if con.execute("SELECT count(*) FROM runs WHERE id = ?", [run_id]).fetchone()[0] == 0:
        return
    for table in ("runs", "steps", "step_texts", "step_words", "verdicts", *_ANALYSIS_TYPES):
        con.execute(f"DELETE FROM {table} WHERE {'id' if table == 'runs' else 'run_id'} = ?", [run_id])
    con.execute("DELETE FROM evaluations WHERE run_id = ? AND origin = 'original'", [run_id])


def _insert_steps(con, steps: list[tuple], texts: list[tuple]) -> None:
    if steps:
        columns = list(zip(*steps))
        table = pa.table({name: pa.array(column, type=typ)
                          for name, column, typ in zip(STEP_COLUMNS, columns, STEP_TYPES)})
        con.register("new_steps", table)
        try:
            con.execute(f"INSERT INTO steps ({', '.join(STEP_COLUMNS)}) SELECT * FROM new_steps ORDER BY trace, idx")
            search_index.index_rows(con, "new_steps")
        finally:
            con.unregister("new_steps")
    if texts:
        table = pa.table({f"c{i}": pa.array([r[i] for r in texts], type=t) for i, t in enumerate(TEXT_TYPES)})
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


def write_run(con, rows: dict, *, method_row: tuple, replace: bool = True, method_stored: bool = False,
              alone: bool = False) -> None:
    """The body of :func:`store_run`, inside the caller's transaction: upsert the method, (``replace``: delete
    the run stored before, see :func:`delete_run`), insert the run's rows, apply ``rows["late_usage"]``
    (``[(tokens_in, tokens_out, trace, idx)]`` for steps a :class:`StepWriter` wrote already), and recompute the
    latest-run flags of its cell. Raises duckdb.Error.

    What the caller may know already, so that fewer statements run (on DuckLake each one costs a round of
    catalog work, ~10-25 ms): ``replace=False``, the run is not stored (no delete is tried); ``method_stored``,
    ``method_row`` is stored as it is (an earlier run of the same ingest wrote it); ``alone``, no other run of
    the run's cell (method, benchmark, base model) is stored, so it is the cell's latest and no flag changes.
    """
    run = rows["run"]
    columns = list(run)
    if not method_stored:
        con.execute("DELETE FROM methods WHERE id = ?", [method_row[0]])
        con.execute(f"INSERT INTO methods VALUES ({', '.join('?' * len(method_row))})", list(method_row))
    if replace:
        delete_run(con, run["id"])
    con.execute(f"INSERT INTO runs ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                [run[c] for c in columns])
    _insert_steps(con, rows["steps"], rows.get("texts") or [])
    for tokens_in, tokens_out, trace, idx in rows.get("late_usage", []):
        con.execute("UPDATE steps SET tokens_in = ?, tokens_out = ? WHERE run_id = ? AND trace = ? AND idx = ?",
                    [tokens_in, tokens_out, run["id"], trace, idx])
    warehouse.insert_rows(con, "verdicts", rows["verdicts"])
    warehouse.insert_rows(con, "evaluations", rows["evaluations"])
    _store_analysis(con, run["id"], rows)
    if alone and run["is_latest"]:
        return
    # The latest run of the cell is the one with the highest cluster id; only rows whose flag changes are written
    # (DuckLake writes every updated row again).
    con.execute(
        "UPDATE runs SET is_latest = (cluster_id = (SELECT max(cluster_id) FROM runs WHERE method = $1 AND "
        "benchmark = $2 AND base_model = $3)) WHERE method = $1 AND benchmark = $2 AND base_model = $3 AND "
        "is_latest IS DISTINCT FROM (cluster_id = (SELECT max(cluster_id) FROM runs WHERE method = $1 AND "
        "benchmark = $2 AND base_model = $3))", [run["method"], run["benchmark"], run["base_model"]])


_ANALYSIS_TYPES = {
    "facets": [pa.string(), pa.string(), pa.string(), pa.float64(), pa.string()],
    "phases": [pa.string(), pa.string(), pa.float64(), pa.float64(), pa.int32(), pa.int32()],
    "monitor": [pa.string(), pa.timestamp("us"), pa.float64(), pa.float64(), pa.float64(), pa.float64()],
}


def _store_analysis(con, run_id: str, rows: dict) -> None:
    """Insert the run's facets, phases and monitor samples (inside ``store_run``'s transaction, which has
    deleted an earlier version of the run).

    Rows go in as Arrow tables: a 50-hour run has 3,000 monitor samples, too many for row-by-row inserts.
    """
    for table, types in _ANALYSIS_TYPES.items():
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
