"""Writes of the traces app: storing ingested runs (``RunWriter``, ``write_runs``, ``StepWriter``, called by
``ingest``; the rows are the write models of ``traces.records``), and the writes other apps make to runs (a rerun's evaluation, a reviewer's override, a re-run judge's verdicts).

A run is stored in one transaction (with the other runs of its ingest batch): with all its steps or not at all. A step's input or output longer than
``traces.vocabulary.STEP_TEXT_CAP`` (256 KiB of UTF-8) is stored cut at that size in the steps table (the pages say how many
bytes are not shown); the whole text is kept in ``step_texts``, zlib-compressed in chunks of ``vocabulary.TEXT_CHUNK``
bytes, and served range by range (``traces.selectors.step_text``). Each batch of steps written also writes its
rows of the word index ``step_words`` (``traces.search_index``), from the steps' whole texts, in the same
transaction. Every write that changes what a page over a suite's latest runs reads (an ingest batch, a rerun's
evaluation, an override, a re-run judge) replaces the rows of ``latest_runs`` it touched in the same transaction
(:func:`refresh_latest_runs`). Reading results trees is ``ingest``.
"""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Protocol

from ptbsite import warehouse

from . import records, search_across, search_index
from .records import (EvaluationRow, FacetRow, MethodRow, MonitorRow, ParsedRun, PhaseRow, RunRow, StepRow,
                      StepTextRow, StepWrite, VerdictRow)
from .verdicts import OVERRIDABLE_KINDS, Verdict, effective_flags

STEP_BATCH_ROWS = 4096      # step rows a StepWriter writes at a time ...
STEP_BATCH_BYTES = 16 * 1024 * 1024  # ... or fewer, holding this many bytes of text


def delete_run(con, run_id: str) -> None:
    """Delete a stored run's rows (runs, steps, texts, word index and its ``word_runs`` entries, verdicts, facets,
    phases, monitor, its original evaluation), inside the caller's transaction; a run not stored (the common
    case) costs one query."""
    # A new run skips the deletes, each a scan of a table that grows with every run ingested.
    if con.execute("SELECT count(*) FROM runs WHERE id = ?", [run_id]).fetchone()[0] == 0:
        return
    for table in ("runs", "steps", "step_texts", "step_words", "verdicts", *_ANALYSIS_TABLES):
        con.execute(f"DELETE FROM {table} WHERE {'id' if table == 'runs' else 'run_id'} = ?", [run_id])
    search_index.forget_run(con, run_id)
    con.execute("DELETE FROM evaluations WHERE run_id = ? AND origin = 'original'", [run_id])


def insert_records(con, cls: type[records.Row], rows: Sequence[records.Row], *, tables: Sequence[Any] = (),
                   order: str = "") -> None:
    """Insert ``rows`` (write models of ``traces.records``, all of type ``cls``) into ``cls.TABLE`` by column name
    as one Arrow table, inside the caller's transaction (one statement: on DuckLake each costs a round of catalog
    work; a 50-hour run has 3,000 monitor samples); ``tables``: more rows of ``cls`` already made Arrow tables
    (``records.arrow_schema(cls)``: a worker's ``ParsedRun.pack``), inserted before ``rows`` in the same
    statement, their chunks not copied; ``order``: an ``ORDER BY`` clause for the rows. Step rows also write
    their rows of the word index. Raises duckdb.Error."""
    parts = [t for t in tables if t.num_rows] + ([records.arrow_table(cls, rows)] if rows else [])
    if not parts:
        return
    table = parts[0] if len(parts) == 1 else records.concat(cls, parts)
    names = ", ".join(records.columns(cls))
    con.register("new_rows", table)
    try:
        con.execute(f"INSERT INTO {cls.TABLE} ({names}) SELECT {names} FROM new_rows{order}")
        if cls is StepRow:
            search_index.index_rows(con, "new_rows")
    finally:
        con.unregister("new_rows")


def _insert_steps(con, steps: list[StepRow], texts: list[StepTextRow], *, step_tables: Sequence[Any] = (),
                  text_tables: Sequence[Any] = ()) -> None:
    """Insert step rows (in trace and index order) and their whole texts, with their rows of the word index;
    ``step_tables``, ``text_tables``: more of them already made Arrow tables (:func:`insert_records`)."""
    insert_records(con, StepRow, steps, tables=step_tables, order=" ORDER BY trace, idx")
    whole = [StepTextRow(**row) for table in text_tables for row in table.to_pylist()] + texts
    if whole:
        insert_records(con, StepTextRow, texts, tables=text_tables)
        search_index.index_whole_texts(con, whole)


class StepWriter:
    """Step rows (and ``step_texts`` rows) of a run written in batches inside the caller's transaction, so that
    a long trace is never held whole: :meth:`add` rows in order, :meth:`flush` at the end. A batch is written
    when it holds ``batch_rows`` steps or ``batch_bytes`` bytes of text: the writer's bounded batch."""

    def __init__(self, con, *, batch_rows: int | None = None, batch_bytes: int | None = None) -> None:
        self.con = con
        self.batch_rows = batch_rows or STEP_BATCH_ROWS
        self.batch_bytes = batch_bytes or STEP_BATCH_BYTES
        self.steps: list[StepRow] = []
        self.texts: list[StepTextRow] = []
        self.written = 0
        self._bytes = 0

    def add(self, write: StepWrite) -> None:
        """One step: its row, its whole texts (a field cut at the cap) and its size (characters of text)."""
        self.steps.append(write.row)
        self.texts.extend(write.texts)
        self._bytes += write.size
        if len(self.steps) >= self.batch_rows or self._bytes >= self.batch_bytes:
            self.flush()

    def flush(self) -> None:
        """Write the rows held. Raises duckdb.Error."""
        _insert_steps(self.con, self.steps, self.texts)
        self.written += len(self.steps)
        self.steps, self.texts, self._bytes = [], [], 0


class RunStream(Protocol):
    """A run read as a stream (``ingest.reader.RunReading``): :meth:`steps` yields the agent trace's step rows as
    they are read (each call reads the run again from the start), then :meth:`finish` gives its other rows."""

    def steps(self) -> Iterator[StepWrite]:
        """The agent trace's step rows, in order."""

    def finish(self) -> ParsedRun:
        """The run's other rows, once :meth:`steps` is exhausted."""


@dataclass(frozen=True)
class Outcome:
    """What became of a run given to a :class:`RunWriter`: committed (``rows``), or not (``error``); ``key``:
    whatever the caller gave the run with."""

    key: Any
    rows: ParsedRun | None = None
    error: Exception | None = None


@dataclass(frozen=True)
class RunWrite:
    """One parsed run to store: ``rows`` as ``ingest.reader.Ingester.parse_run`` gives them, and its method's row."""

    rows: ParsedRun
    method: MethodRow


class RunWriter:
    """The one way an ingest stores its runs: runs added are held in a batch of at most ``batch_runs`` runs or
    ``batch_bytes`` bytes of agent trace and stored together (:func:`write_runs`, one transaction), since on
    DuckLake a run's fixed cost is its statements and its commit (bench/ingest_batch.py); a run read as a stream
    is stored in a transaction of its own (:meth:`stream`). A batch that fails is stored again run by run, so a
    broken run is reported and skipped and the others of its batch are stored.

    What the writer needs to know of the warehouse it learns itself, so that no statement runs whose answer it
    knows: the stored runs' ids and cells (method, benchmark, base model) and the stored methods' ids, read once by
    its first transaction and kept up to date with what it commits (one process ingests at a time), and the methods
    whose row it stored.

    Each method returns the :class:`Outcome` of every run it committed or gave up on, in the order they were
    given: the writer calls nothing of its caller's (control flows one way: walker -> reader -> writer).
    """

    def __init__(self, *, batch_runs: int = 1, batch_bytes: int = 1 << 62) -> None:
        self.batch_runs, self.batch_bytes = max(1, batch_runs), batch_bytes
        self.pending: list[tuple[Any, RunWrite]] = []
        self.methods: set[str] = set()
        self._runs: dict[str, tuple[str, str, str]] | None = None  # stored run id -> its cell
        self._cells: dict[tuple[str, str, str], set[str]] = {}  # cell -> its stored runs' ids
        self._stored_methods: set[str] = set()  # the ids of the methods stored before this writer's first write

    def add(self, key: Any, rows: ParsedRun, method: MethodRow) -> list[Outcome]:
        """Hold one run; the batch is stored once it is full: the outcomes of its runs (none while it is held).
        Raises nothing."""
        self.pending.append((key, RunWrite(rows, method)))
        if (len(self.pending) >= self.batch_runs
                or sum(w.rows.run.trace_bytes for _, w in self.pending) >= self.batch_bytes):
            return self.flush()
        return []

    def flush(self) -> list[Outcome]:
        """Store the runs held, in one transaction; if it fails, each on its own. Returns their outcomes. Raises
        nothing."""
        batch, self.pending = self.pending, []
        if not batch:
            return []
        writes = [w for _, w in batch]

        def unit(con) -> None:
            runs = self._known(con)
            write_runs(con, writes, methods=self._fresh(writes), replaced=[i for i in _ids(writes) if i in runs],
                       shared=self._shared(writes), stored_methods=self._stored_methods)

        try:
            warehouse.run_in_transaction(unit)
        except Exception as exc:  # noqa: BLE001 - one broken run must not stop the tree
            if len(batch) == 1:
                return [Outcome(batch[0][0], error=exc)]
            outcomes = []
            for one in batch:
                self.pending.append(one)
                outcomes += self.flush()
            return outcomes
        self._committed(writes)
        return [Outcome(key, rows=w.rows) for key, w in batch]

    def stream(self, key: Any, run_id: str, method: MethodRow, run: RunStream) -> Outcome:
        """Store one run read as a stream, in a transaction of its own: its stored version (if any) deleted, then
        its steps pulled from ``run`` as they are read and written in bounded batches (:class:`StepWriter`), and
        its other rows written. ``run`` raising, or the write failing, is an outcome with the error. Raises
        nothing."""
        def unit(con) -> ParsedRun:
            if run_id in self._known(con):
                delete_run(con, run_id)  # before its new steps are written
            writer = StepWriter(con)
            for step in run.steps():
                writer.add(step)
            writer.flush()
            rows = run.finish()
            writes = [RunWrite(rows, method)]
            write_runs(con, writes, methods=self._fresh(writes), replaced=[], shared=self._shared(writes),
                       stored_methods=self._stored_methods)
            return rows

        try:
            rows = warehouse.run_in_transaction(unit)
        except Exception as exc:  # noqa: BLE001 - one broken run must not stop the tree
            return Outcome(key, error=exc)
        self._committed([RunWrite(rows, method)])
        return Outcome(key, rows=rows)

    def _known(self, con) -> dict[str, tuple[str, str, str]]:
        """The stored runs' cells by id, read by the first transaction that needs them (and the stored methods'
        ids)."""
        if self._runs is None:
            self._runs = {i: (m, b, bm) for i, m, b, bm in con.execute(
                "SELECT id, method, benchmark, base_model FROM runs").fetchall()}
            self._cells = {}
            for run_id, cell in self._runs.items():
                self._cells.setdefault(cell, set()).add(run_id)
            self._stored_methods = {i for (i,) in con.execute("SELECT id FROM methods").fetchall()}
        return self._runs

    def _shared(self, batch: list[RunWrite]) -> dict[tuple[str, str, str], list[str]]:
        """The cells of ``batch`` that hold a stored run other than the batch's own earlier versions, each with
        the ids of those runs (sorted)."""
        ids = set(_ids(batch))
        shared = {}
        for w in batch:
            others = self._cells.get(cell := _cell(w.rows.run), set()) - ids
            if others:
                shared[cell] = sorted(others)
        return shared

    def _committed(self, batch: list[RunWrite]) -> None:
        """What the writer knows after ``batch`` was committed."""
        runs = self._runs if self._runs is not None else {}
        for w in batch:
            old = runs.get(w.rows.run.id)
            if old is not None:
                self._cells[old].discard(w.rows.run.id)
            runs[w.rows.run.id] = _cell(w.rows.run)
            self._cells.setdefault(_cell(w.rows.run), set()).add(w.rows.run.id)
            self.methods.add(w.method.id)

    def _fresh(self, batch: list[RunWrite]) -> list[MethodRow]:
        """The method rows of ``batch`` not stored by this writer yet (the last of each method)."""
        return list({w.method.id: w.method for w in batch if w.method.id not in self.methods}.values())


def write_runs(con, batch: list[RunWrite], *, methods: list[MethodRow], replaced: list[str],
               shared: dict[tuple[str, str, str], list[str]], stored_methods: Collection[str]) -> None:
    """Store several runs inside the caller's transaction with one statement per table for the whole batch:
    the ``methods`` rows (replacing those of them in ``stored_methods``, the ids of the stored ones), the stored
    versions of the runs ``replaced`` deleted (:func:`delete_run`), the runs' rows inserted, ``late_usage``
    applied (to steps a :class:`StepWriter` wrote already), the latest-run flags recomputed of the cells (method,
    benchmark, base model) where they may change: those holding two runs of the batch, and the ``shared`` ones,
    which hold a stored run besides (``shared``: such cell -> the ids of those runs), and the rows of
    ``latest_runs`` of the batch's cells replaced (:func:`refresh_latest_runs`, by the ids of the cells' runs:
    the batch's, the replaced ones and the ``shared`` cells' others). What to delete and which cells are shared
    is what :class:`RunWriter` knows. The per-run cost of an ingest on
    DuckLake is its statements, each a round of catalog work, so a batch of N runs costs about what one run did
    (bench/ingest_batch.py); the inverted index ``word_runs`` is merged in the same transaction when the batches'
    rows spread past ``search_index.MERGE_SPREAD`` a word, and ``step_words`` sorted once half of it is not
    (``search_across.sort_step_words``). Raises duckdb.Error: nothing of the batch is stored once the caller rolls
    back."""
    if not batch:
        return
    for run_id in replaced:
        delete_run(con, run_id)
    if stale := [m.id for m in methods if m.id in stored_methods]:
        con.execute(f"DELETE FROM methods WHERE id IN ({', '.join('?' * len(stale))})", stale)
    insert_records(con, MethodRow, methods)
    insert_records(con, RunRow, _latest_in_batch([w.rows.run for w in batch]))
    # Each table's rows of every run of the batch, packed by a worker (ParsedRun.pack) or not, in one statement.
    _insert_steps(con, [step for w in batch for step in w.rows.steps], [text for w in batch for text in w.rows.texts],
                  step_tables=_packed(batch, StepRow), text_tables=_packed(batch, StepTextRow))
    for w in batch:
        for late in w.rows.late_usage:
            con.execute("UPDATE steps SET tokens_in = ?, tokens_out = ? WHERE run_id = ? AND trace = ? AND idx = ?",
                        [late.tokens_in, late.tokens_out, w.rows.run.id, late.trace, late.idx])
    # Facets, phases and monitor samples: the earlier versions of these runs were deleted above.
    insert_records(con, VerdictRow, [v for w in batch for v in w.rows.verdicts], tables=_packed(batch, VerdictRow))
    insert_records(con, EvaluationRow, [e for w in batch for e in w.rows.evaluations],
                   tables=_packed(batch, EvaluationRow))
    insert_records(con, FacetRow, [r for w in batch for r in w.rows.facets], tables=_packed(batch, FacetRow))
    insert_records(con, PhaseRow, [r for w in batch for r in w.rows.phases], tables=_packed(batch, PhaseRow))
    insert_records(con, MonitorRow, [r for w in batch for r in w.rows.monitor], tables=_packed(batch, MonitorRow))
    # Each batch adds a row per word of its own to the inverted index: merged once they spread too far; and
    # unsorted rows to step_words, sorted once they are as many as the sorted ones.
    search_index.merge_word_runs(con)
    search_across.sort_step_words(con)
    in_batch = Counter(_cell(w.rows.run) for w in batch)
    cells = sorted(c for c, n in in_batch.items() if n > 1 or c in shared)  # a run alone in its cell is its latest
    if cells:
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
    # The cells' rows by their runs' ids: a filter DuckDB applies to runs before the view's joins (a join with the
    # cells comes after them: every latest run's row computed, then most dropped; bench/RESULTS.md, i24walk).
    refresh_latest_runs(con, run_ids=[*_ids(batch), *replaced, *(i for ids in shared.values() for i in ids)])


def refresh_latest_runs(con, *, run_ids: Sequence[str]) -> None:
    """Replace, inside the caller's transaction, the rows of ``latest_runs`` (what the pages over a suite's
    latest runs read: migration 0021) of the runs ``run_ids`` (a run whose evaluations, verdicts, overrides,
    facets or phases changed; the runs of the cells an ingest batch wrote, whose latest run may have changed)
    from their definition, the view ``latest_run_rows``. A run that is not the latest of its cell has no row.
    Every write that changes what a row holds calls it: without it, the pages over the latest runs would show
    what was stored before. Two statements (a DELETE, an INSERT from the view), the runs one list parameter.
    Raises duckdb.Error."""
    if not run_ids:
        return
    params = [list(dict.fromkeys(run_ids))]
    con.execute("DELETE FROM latest_runs WHERE list_contains(?, run_id)", params)
    con.execute("INSERT INTO latest_runs SELECT l.* FROM latest_run_rows l WHERE list_contains(?, l.run_id)", params)


def _latest_in_batch(runs: list[RunRow]) -> list[RunRow]:
    """The batch's run rows with ``is_latest`` already False where a run of the same cell (method, benchmark, base
    model) in the batch has a higher cluster id: the rows go in with the flag the UPDATE after the insert would
    give them, so it rewrites only rows of earlier batches. An UPDATE of a row just inserted leaves a delete file
    beside every batch's runs file, which ``merge_adjacent_files`` cannot merge and every query of ``runs`` then
    reads (K=90: 58 files, 56 with deletes: a scan of ``runs`` cost 16 CPU ms against 4; bench/RESULTS.md)."""
    top: dict[tuple[str, str, str], int] = {}
    for run in runs:
        top[_cell(run)] = max(top.get(_cell(run), run.cluster_id), run.cluster_id)
    return [replace(run, is_latest=False) if run.is_latest and run.cluster_id != top[_cell(run)]
            else run for run in runs]


def _packed(batch: list[RunWrite], cls: type[records.Row]) -> list[Any]:
    """The batch's rows of ``cls`` that its runs hold as Arrow tables (``ParsedRun.pack``)."""
    return [w.rows.packed[cls.TABLE] for w in batch if cls.TABLE in w.rows.packed]


def _cell(run: RunRow) -> tuple[str, str, str]:
    return run.method, run.benchmark, run.base_model


def _ids(batch: list[RunWrite]) -> list[str]:
    return [w.rows.run.id for w in batch]


_ANALYSIS_TABLES = ("facets", "phases", "monitor")  # deleted with their run (delete_run)


def refresh_agents(methods: Sequence[MethodRow]) -> None:
    """Give stored methods the agent the suite maps them to now (key, name, effort), in one transaction and one
    statement (a row is written only where one of them differs): unchanged runs are skipped on re-ingest, but an
    edited suite file must still regroup them. Nothing is written (no transaction) for no methods. Raises
    warehouse.WarehouseUnavailable."""
    if not methods:
        return
    values = ", ".join("(?, ?, ?, CAST(? AS VARCHAR))" for _ in methods)
    params = [v for m in methods for v in (m.id, m.agent_key, m.agent_name, m.reasoning_effort)]

    def write(con) -> None:
        con.execute(f"UPDATE methods SET agent_key = mapped.agent_key, agent_name = mapped.agent_name, reasoning_effort = "
                    f"mapped.reasoning_effort FROM (VALUES {values}) AS mapped(id, agent_key, agent_name, reasoning_effort) "
                    "WHERE methods.id = mapped.id AND (methods.agent_key <> mapped.agent_key OR methods.agent_name <> "
                    "mapped.agent_name OR methods.reasoning_effort IS DISTINCT FROM mapped.reasoning_effort)", params)

    warehouse.run_in_transaction(write)


class UnknownRun(LookupError):
    """No run with this id is stored."""


def record_dir_times(times: list[tuple[str, datetime | None, str | None]]) -> None:
    """Set ``runs.dir_time`` and ``dir_time_source`` of stored runs, ``[(run id, time (naive UTC), source)]``, in
    one transaction: runs stored before migration 0016 get their directory's time at the next ingest of the tree,
    although their files did not change (``ingest.tree``). Raises warehouse.WarehouseUnavailable."""
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
        insert_records(con, EvaluationRow, [EvaluationRow(
            id=evaluation_id, run_id=run_id, origin="rerun-exploratory" if exploratory else "rerun",
            accuracy=float(accuracy), metrics_json=json.dumps(metrics), provenance_json=json.dumps(provenance),
            created_at=now)])
        refresh_latest_runs(con, run_ids=[run_id])

    warehouse.run_in_transaction(write)


def override_verdict(*, run_id: str, kind: str, flagged: bool, reason: str, reviewer: str) -> dict:
    """Record a reviewer's verdict on one question of a run whose flag makes it fall back (OVERRIDABLE_KINDS:
    contamination, disallowed_model, disallowed_api_usage).

    Appends to the audit log (``verdict_overrides``, never updated or deleted) with the effective verdict it
    replaces (``previous``: flagged | clean | judge_error); the latest override of a kind decides the run's
    flag from then on (traces.verdicts.effective_flags). Returns the stored row as traces.selectors.override_log
    shapes it.

    Raises:
        UnknownRun: no such run. ValueError: another kind, or an empty reason or reviewer.
    """
    if kind not in OVERRIDABLE_KINDS:
        raise ValueError(f"kind must be one of {', '.join(OVERRIDABLE_KINDS)}, not {kind!r}")
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
        refresh_latest_runs(con, run_ids=[run_id])
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
    rows = [VerdictRow(run_id=run_id, judge=v.judge, attempt="rerun", era=v.era, kind=v.kind, value=v.value,
                       flagged=v.flagged, text=v.text, note=v.note, source_file=v.source_file) for v in verdicts]

    def write(con) -> None:
        _require_run(con, run_id)
        for row in rows:
            con.execute("DELETE FROM verdicts WHERE run_id = ? AND judge = ? AND attempt = 'rerun' AND era = ? AND kind = ?",
                        [run_id, row.judge, row.era, row.kind])
        insert_records(con, VerdictRow, rows)
        refresh_latest_runs(con, run_ids=[run_id])

    warehouse.run_in_transaction(write)
    return len(rows)
