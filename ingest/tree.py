"""Walking a results tree (spec section 1) and storing each of its runs, each in its own transaction.

Runs are read (parsed, redacted, facets and evidence derived) by a pool of worker processes, one per core, and
stored by this process alone: a plain DuckDB file admits one writing process, and on DuckLake one writer never
meets a commit conflict between runs (DuckLake retries those, but each retry runs the whole unit again). A run's
rows travel from its worker as one pickled ``traces.records.ParsedRun``: the runs of a results tree are 0.3-1.3 MB
of trace each. Every run is stored through one ``traces.services.RunWriter``: the pool's runs in batches
(``settings.PTB_INGEST_BATCH_RUNS`` runs or :data:`BATCH_BYTES` of trace, one transaction and one statement per
table for the whole batch), since on DuckLake a run's fixed cost is its statements and its commit; a batch that
fails is stored again run by run, so a broken run is reported and skipped and the others of its batch are stored. A run whose trace is larger than :data:`IN_PROCESS_BYTES` is read in this process
instead, as a stream: its steps are parsed, redacted, derived and written in batches inside its transaction, so
memory is bounded by a batch and the facts it holds, not by the trace (``ingest.reader``). With one
process (``workers=1``) every run is read so.
"""
from __future__ import annotations

import gc
import logging
import multiprocessing
import os
import queue
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from django.conf import settings

from ptbsite import warehouse
from traces import layout
from traces.records import MethodRow, ParsedRun
from traces.services import Outcome, RunWriter, record_dir_times, refresh_agents

from .files import RefusedFile, RunFiles, refusal
from .reader import Ingester, RunIngestError, agent_trace_path, content_hash, dir_time
from .redaction import Redactor

log = logging.getLogger(__name__)

SYNTHETIC_MARKER = "SYNTHETIC"  # a file at the results root that marks a generated (demo) tree
IN_PROCESS_BYTES = 32 * 1024 * 1024  # bytes of agent trace above which a run is read in the storing process
BATCH_BYTES = 64 * 1024 * 1024  # a batch of runs is stored once it holds this many bytes of agent trace


@dataclass
class IngestReport:
    """What one ``ingest_tree`` call did. ``problems`` are "path: message" strings; nothing in them is fatal."""

    root: str
    stored: int = 0
    unchanged: int = 0
    failed: int = 0
    steps: int = 0
    bytes_read: int = 0
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    workers: int = 1

    def __str__(self) -> str:
        return (f"{self.root}: {self.stored} runs stored, {self.unchanged} unchanged, {self.failed} failed, "
                f"{self.steps} steps, {self.bytes_read / 1e6:.1f} MB of traces, {len(self.problems)} problems, "
                f"{self.seconds:.1f} s on {self.workers} {'process' if self.workers == 1 else 'processes'}")


@dataclass(frozen=True)
class TreeProgress:
    """Where an ``ingest_tree`` stands, after each run: runs and agent-trace bytes done of those to read (runs
    skipped as unchanged are not counted), seconds since it started, and the run just done ("method/run dir")."""

    runs_done: int
    runs_total: int
    bytes_done: int
    bytes_total: int
    seconds: float
    last: str


@dataclass(frozen=True)
class _Job:
    """One run directory to read and store; ``index`` is its position in the tree's order."""

    index: int
    method: layout.MethodName
    method_row: MethodRow
    run_dir: Path
    baseline: bool
    content_hash: str
    trace_bytes: int


_worker_ingester: Ingester | None = None
_worker_started: Any = None  # a worker's queue of (job index, pid, time.monotonic()) as it starts each job


WORKER_GC_THRESHOLD = (50_000, 20, 100)  # a reading process's gc.set_threshold (Python's default: 700, 10, 10)


def _init_worker(ingester: Ingester, started: Any = None) -> None:
    """A reading process starts: the objects it inherits from the storing process (Django, the suite, the
    ingester's rules) moved out of the garbage collector's sight (``gc.freeze``), so that its collections,
    frequent while a trace's steps are built, do not walk them again and again (nor copy their pages); and
    collections made rarer (:data:`WORKER_GC_THRESHOLD`): a run's rows are thousands of objects that live until
    it is sent, which every young collection walked again (the 142 runs of 5 method dirs, 60 MB of trace: 2,034
    collections and 0.84 CPU s of 11 in one process against 235 and 0.19 s; the rows hold no reference cycles,
    so memory does not wait on a collection)."""
    global _worker_ingester, _worker_started
    gc.freeze()
    gc.set_threshold(*WORKER_GC_THRESHOLD)
    _worker_ingester, _worker_started = ingester, started


def _message(job: _Job, exc: Exception) -> str:
    """The problem a run that could not be stored reports: the refusal of the layout, the suite or the files as it
    is (naming the run's directory), any other failure (logged) as "<run dir>: not stored: <type>: <message>"."""
    if isinstance(exc, (layout.LayoutError, RunIngestError, RefusedFile)):
        return str(exc) if str(job.run_dir) in str(exc) else f"{job.run_dir}: {exc}"
    log.error("ingest of %s failed", job.run_dir, exc_info=exc)
    return f"{job.run_dir}: not stored: {type(exc).__name__}: {exc}"


def _read_job(job: _Job, ingester: Ingester | None = None) -> tuple[int, str, object]:
    """``(job index, outcome, value)``: ``("rows", rows)``, the rows made Arrow tables (``ParsedRun.pack``: what
    a worker sends), or ``("failed", message)`` (:func:`_message`). Raises nothing."""
    ingester = ingester or _worker_ingester
    assert ingester is not None
    if _worker_started is not None:
        _worker_started.put((job.index, os.getpid(), time.monotonic()))
    try:
        rows = ingester.parse_run(job.method, job.run_dir, baseline=job.baseline, known_hash=job.content_hash)
        rows.pack()  # its rows travel as Arrow columns, not pickled one object each
    except Exception as exc:  # noqa: BLE001 - one broken run must not stop the tree
        return job.index, "failed", _message(job, exc)
    return job.index, "rows", rows


def _store_here(job: _Job, ingester: Ingester, writer: RunWriter) -> Outcome:
    """Read and store one run in this process, in one transaction (``RunWriter.stream``): the writer pulls the
    agent trace's step rows from the reader as they are read and writes them in batches (``Ingester.open_run``),
    reading stopped at ``settings.PTB_INGEST_RUN_SECONDS``. Returns the outcome. Raises nothing."""
    reading = ingester.open_run(job.method, job.run_dir, baseline=job.baseline, known_hash=job.content_hash,
                                limit_s=settings.PTB_INGEST_RUN_SECONDS)
    return writer.stream(job, layout.run_id(job.method.raw, job.run_dir.name), job.method_row, reading)


def _pool_results(pool: Any, jobs: list[_Job], started: Any, limit: float) -> Iterator[tuple[int, str, object]]:
    """Submit ``jobs`` to ``pool`` now; the returned iterator yields ``(job index, outcome, value)`` as
    :func:`_read_job` does, as they finish. A job still running ``limit`` seconds after its worker started it
    (``started``: the workers' queue of ``(index, pid, time.monotonic())``) has its worker killed (the pool starts
    another; the other jobs go on) and yields ``("error", message)`` naming the run and the limit."""
    done: queue.SimpleQueue = queue.SimpleQueue()
    for job in jobs:
        def failed(exc: BaseException, job: _Job = job) -> None:  # the result could not come back (pickling)
            done.put((job.index, "error", f"{job.run_dir}: not stored: {type(exc).__name__}: {exc}"))

        pool.apply_async(_read_job, (job,), callback=done.put, error_callback=failed)

    def collect() -> Iterator[tuple[int, str, object]]:
        left = {job.index: job for job in jobs}
        running: dict[int, tuple[int, float]] = {}
        while left:
            try:
                index, outcome, value = done.get(timeout=0.2)
            except queue.Empty:
                pass
            else:
                if left.pop(index, None) is not None:
                    running.pop(index, None)
                    yield index, outcome, value
            while True:
                try:
                    index, pid, since = started.get_nowait()
                except queue.Empty:
                    break
                if index in left:
                    running[index] = (pid, since)
            now = time.monotonic()
            for index, (pid, since) in list(running.items()):
                if now - since > limit:
                    del running[index]
                    job = left.pop(index)
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    log.warning("ingest of %s stopped after %.0f s", job.run_dir, now - since)
                    yield index, "error", (f"{job.run_dir}: not stored: reading it took longer than "
                                           f"PTB_INGEST_RUN_SECONDS ({limit:g} s); its worker was stopped")

    return collect()


def _readable_dirs(folder: Path, root: Path, report: IngestReport) -> list[Path]:
    """The subdirectories of ``folder`` (method or run directories) the ingest may read, sorted by name: a
    symbolic link out of ``root``, a FIFO, socket or device is refused, with a problem naming it in ``report``
    (``ingest.files.refusal``); other files are not directories and are left alone."""
    out = []
    for path in sorted(folder.iterdir()):
        problem = refusal(path, root, size_limit=False)
        if problem is not None:
            report.problems.append(problem)
        elif path.is_dir():
            out.append(path)
    return out


def default_workers() -> int:
    """Worker processes an ingest uses by default: the cores this process may run on (``PTB_INGEST_WORKERS``
    overrides); 1 inside a daemonic process (a Celery worker's child cannot have children)."""
    if multiprocessing.current_process().daemon:
        return 1
    if os.environ.get("PTB_INGEST_WORKERS"):
        return max(1, int(os.environ["PTB_INGEST_WORKERS"]))
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)



@contextmanager
def _one_duckdb_thread() -> Iterator[None]:
    """This process's DuckDB runs its statements on one thread while an ingest writes, then as before: the
    ingest's parallelism is its reading processes, and the writer's statements (a batch of runs, its word index)
    are small, so DuckDB's other threads cost more CPU than they save: an ingest of 144 runs (~45 MB of traces)
    took 24.4 CPU s with one thread against 30.5 with DuckDB's default of one per core (bench/RESULTS.md, i24i).
    The setting is the DuckDB instance's (one per process, ``ptbsite.warehouse.connections``)."""
    with warehouse.connect() as con:
        row = con.execute("SELECT current_setting('threads')").fetchone()
        threads = int(row[0]) if row else 0
        con.execute("SET threads = 1")
    try:
        yield
    finally:
        if threads and threads != 1:
            with warehouse.connect() as con:
                con.execute(f"SET threads = {threads}")


@warehouse.retrying
def _stored(methods: list[str]) -> tuple[dict[str, dict[str, tuple[str, bool]]], dict[str, tuple[Any, ...]]]:
    """What is stored of the ``methods`` (names of method directories), in one connection: ``({method: {run dir:
    (content hash, whether its directory's time is stored)}}, {method with a stored run: (agent key, agent name,
    reasoning effort)})``. One query for the tree, not one per method: each cost 40-80 CPU ms on DuckLake (the
    ``runs`` table of a fresh warehouse, never written, the most), 17 of them 1.3 s of the walk of a 520-run tree
    (bench/RESULTS.md, i24walk)."""
    runs: dict[str, dict[str, tuple[str, bool]]] = {}
    with warehouse.connect() as con:
        for method, run_dir, digest, dated in con.execute(
                "SELECT method, run_dir, content_hash, dir_time_source IS NOT NULL FROM runs "
                "WHERE list_contains(?, method)", [methods]).fetchall():
            runs.setdefault(method, {})[run_dir] = (digest, dated)
        agents = {i: tuple(agent) for i, *agent in con.execute(
            "SELECT id, agent_key, agent_name, reasoning_effort FROM methods WHERE list_contains(?, id)",
            [sorted(runs)]).fetchall()} if runs else {}
    return runs, agents


def _method(method_dir: Path, root: Path, ingester: Ingester, suite_id: str) -> tuple[layout.MethodName, MethodRow]:
    """The method of a method directory and its ``methods`` row (a baseline directory's: the baseline's).
    Raises layout.LayoutError: the directory's name is not a method's."""
    if layout.is_baseline_dir(method_dir.name):
        method = layout.MethodName(method_dir.name, "baseline", "", 0.0, 1, "", "none", None)
        return method, MethodRow(id=method.raw, suite=suite_id, harness_agent="baseline", config="",
                                 budget_hours=0.0, gpus=1, experiment="", scaffold="none", agent_key="baseline",
                                 agent_name="Baseline evaluations", reasoning_effort=None,
                                 synthetic=ingester.synthetic, results_root=str(root),
                                 ingested_at=datetime.now(timezone.utc).replace(tzinfo=None))
    method = layout.parse_method_name(method_dir.name)
    return method, ingester.method_row(method, root)


def _jobs(root: Path, ingester: Ingester, suite_id: str, report: IngestReport) -> list[_Job]:
    """The runs under ``root`` that changed since they were stored, in tree order (methods, then runs, sorted by
    name); counts unchanged runs and a method directory's bad name into ``report``. Refreshes the agent of
    methods already stored whose agent the suite changed (an edited suite file regroups them), and records the
    directory's time of unchanged runs stored without one (``reader.dir_time``): one transaction each, when
    there is something to write."""
    methods: list[tuple[Path, tuple[layout.MethodName, MethodRow] | layout.LayoutError]] = []
    for method_dir in (p for p in _readable_dirs(root, root, report) if not p.name.startswith(("_", "."))):
        try:
            methods.append((method_dir, _method(method_dir, root, ingester, suite_id)))
        except layout.LayoutError as exc:
            methods.append((method_dir, exc))
    named = [m for _, m in methods if not isinstance(m, layout.LayoutError)]
    # (a tree without methods attaches no warehouse)
    known, agents = _stored([method.raw for method, _ in named]) if named else ({}, {})
    refresh_agents([row for method, row in named if method.raw in known
                    and agents.get(method.raw) != (row.agent_key, row.agent_name, row.reasoning_effort)])
    jobs: list[_Job] = []
    undated = []
    for method_dir, found in methods:
        if isinstance(found, layout.LayoutError):
            report.problems.append(f"{method_dir}: {found}")
            continue
        method, method_row = found
        stored = known.get(method.raw, {})
        for run_dir in _readable_dirs(method_dir, root, report):
            files = RunFiles(run_dir, root)
            digest = content_hash(run_dir, files)
            stored_hash, dated = stored.get(run_dir.name, (None, False))
            if stored_hash == digest:
                report.unchanged += 1
                if not dated:  # stored before the runs had their directory's time
                    undated.append((layout.run_id(method.raw, run_dir.name), *dir_time(run_dir, files)))
                continue
            trace = agent_trace_path(run_dir, files)
            jobs.append(_Job(len(jobs), method, method_row, run_dir, layout.is_baseline_dir(method_dir.name),
                             digest, trace.stat().st_size if trace else 0))
    record_dir_times(undated)
    return jobs


def ingest_tree(
    *,
    root: Path,
    suite_id: str = settings.DEFAULT_SUITE,
    synthetic: bool | None = None,
    redactor: Redactor | None = None,
    progress: Callable[[str], None] | None = None,
    workers: int | None = None,
    ticker: Callable[[TreeProgress], None] | None = None,
) -> IngestReport:
    """Ingest every method and run under ``root`` (spec section 1); return what happened.

    Method dirs are ``<agent>_<config>_<hours>h...`` (directories starting with ``_`` are skipped);
    ``baseline*/`` dirs hold baseline evaluations. A run whose files did not change since the last ingest
    (same content hash) is skipped, so re-ingesting a tree adds nothing. A run that fails to parse or store is
    reported with its directory and the ingest goes on with the next one. Runs are read in parallel and stored
    by this process, each in its own transaction (module docstring); the report lists problems in tree order,
    whatever order the runs finished in.

    Args:
        synthetic: label the runs as synthetic (generated demo data); default: whether ``root/SYNTHETIC`` exists.
        redactor: secret redaction; default: ``Redactor.from_environ(os.environ)`` (the usual key variables).
        progress: called with one line per stored run ("method/run: state, N steps").
        workers: reading processes; default :func:`default_workers`; 1 reads every run in this process.
        ticker: called with a :class:`TreeProgress` once before the first run and after each run (stored or
            failed): a progress bar's feed.

    Raises:
        FileNotFoundError: ``root`` is not a directory.
    """
    started = time.monotonic()
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: not a directory")
    report = IngestReport(root=str(root))
    ingester = Ingester(
        root=root,
        suite_id=suite_id,
        redactor=redactor or Redactor.from_environ(os.environ),
        synthetic=(root / SYNTHETIC_MARKER).exists() if synthetic is None else synthetic,
    )
    # One open warehouse for the whole tree: a plain file is not reopened and checkpointed for every run.
    with warehouse.hold_open(), ExitStack() as stack:
        jobs = _jobs(root, ingester, suite_id, report)
        if jobs:  # (a tree with nothing to store attaches no warehouse for it)
            stack.enter_context(_one_duckdb_thread())
        workers = min(default_workers() if workers is None else max(1, workers), len(jobs))
        pooled = [j for j in jobs if j.trace_bytes <= IN_PROCESS_BYTES] if workers > 1 else []
        # (not `j not in pooled`: a comparison of every field of every pair of jobs, 135,000 for 520 runs)
        here = [j for j in jobs if j.trace_bytes > IN_PROCESS_BYTES] if pooled else jobs
        report.workers = max(1, workers if pooled else 1)
        problems: dict[int, list[str]] = {}
        done = {"runs": 0, "bytes": 0}
        total_bytes = sum(j.trace_bytes for j in jobs)

        def stored(job: _Job, rows: ParsedRun) -> None:
            """A run committed (an ``Outcome`` of the writer's)."""
            report.stored += 1
            report.steps += rows.stored_steps
            report.bytes_read += rows.run.trace_bytes
            # The report says where: "<method>/<run dir>/<file>:<line>: ..." (a run's page lists its own)
            problems[job.index] = [p if p.startswith(f"{job.method.raw}/") else f"{job.method.raw}/{p}"
                                   for p in rows.problems]
            if progress:
                progress(f"{job.method.raw}/{job.run_dir.name}: {rows.run.state}, {rows.run.step_count} steps")

        def failed(job: _Job, message: str) -> None:
            report.failed += 1
            problems[job.index] = [message]

        def settle(outcomes: list[Outcome]) -> None:
            """What the writer did with runs: each committed, or its failure reported."""
            for outcome in outcomes:
                if outcome.rows is not None:
                    stored(outcome.key, outcome.rows)
                else:
                    assert outcome.error is not None
                    failed(outcome.key, _message(outcome.key, outcome.error))

        # Every run is stored through one writer: the pool's in batches, the long ones as streams.
        writer = RunWriter(batch_runs=settings.PTB_INGEST_BATCH_RUNS, batch_bytes=BATCH_BYTES)

        def tick(job: _Job) -> None:
            done["runs"] += 1
            done["bytes"] += job.trace_bytes
            if ticker:
                ticker(TreeProgress(done["runs"], len(jobs), done["bytes"], total_bytes,
                                    time.monotonic() - started, f"{job.method.raw}/{job.run_dir.name}"))

        if ticker:
            ticker(TreeProgress(0, len(jobs), 0, total_bytes, time.monotonic() - started, ""))
        if pooled:
            # fork: the workers start with this process's modules and the ingester; they touch no warehouse.
            context = multiprocessing.get_context("fork")
            started_queue = context.Queue()
            with context.Pool(workers, initializer=_init_worker, initargs=(ingester, started_queue)) as pool:
                results = _pool_results(pool, pooled, started_queue, settings.PTB_INGEST_RUN_SECONDS)
                for job in here:  # the large runs, read here while the workers read the rest
                    settle([_store_here(job, ingester, writer)])
                    tick(job)
                for index, outcome, value in results:
                    job = jobs[index]
                    if outcome == "rows":
                        assert isinstance(value, ParsedRun)
                        settle(writer.add(job, value, job.method_row))
                    else:
                        failed(job, str(value))
                    tick(job)
                settle(writer.flush())
        else:
            for job in here:
                settle([_store_here(job, ingester, writer)])
                tick(job)
        for index in sorted(problems):
            report.problems += problems[index]
    report.seconds = time.monotonic() - started
    return report
