"""Reading one run directory into the rows the warehouse stores (``traces.records.ParsedRun``, stored by
``traces.services.RunWriter``).

Every text is redacted (``ingest.redaction``) before it is parsed or stored, and the run records how many
secrets that replaced. Text is made storable first: invalid UTF-8 and lone UTF-16 surrogates become U+FFFD
(counted per run), NUL characters the visible U+2400. A step's input or output longer than
``traces.vocabulary.STEP_TEXT_CAP`` (256 KiB of UTF-8) is stored cut at that size in the steps table; the whole text
goes to ``step_texts``, zlib-compressed in chunks of ``traces.vocabulary.TEXT_CHUNK`` bytes.

Every trace file (the agent's and the judges') is read one way, as a stream pulled from its end: the writer
(``traces.services.RunWriter.stream``, the storing process) or the run's ``ParsedRun`` (``Ingester.parse_run``: a
worker process's run, whose rows travel to the storing process; the judges' traces) pulls step rows from
``Ingester._read_trace``, which pulls steps from the format's parser (``ingest.parsers.stream_trace``), which pulls
framed lines, which pull blocks of :data:`READ_BLOCK` bytes cut at a newline, decoded, redacted and scanned
(``ingest.blocks.TraceText``). Each step is made storable, redacted as decoded text, its call scanned, classified
and marked (the agent's), and its row yielded. Control flows one way, down (``tests/test_ingest_walk.py``). The rows
do not depend on where they go, nor on the block, step window and batch sizes (``tests/test_ingest_stream.py``).
What stays in memory: the tool calls, each settled once its evidence marks are taken (``facets.Call.settle``: the
answers the facets will read of its text are kept, the text, the parsed input and the call step's input let go),
each step's kind, index and time (the phases), and only the tool outputs an output rule may read.
"""
from __future__ import annotations

import hashlib
import json
import re
import time
import zlib
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ptbsite.suites import known_agents, load_suite
from traces import layout
from traces.records import (EvaluationRow, FacetRow, LateUsage, MethodRow, MonitorRow, ParsedRun, PhaseRow, RunRow,
                            StepRow, StepTextRow, StepWrite, VerdictRow, text_fields)
from traces.steps import ParsedTrace, Step
from traces.verdicts import read_verdicts
from traces.vocabulary import STEP_TEXT_CAP, TEXT_CHUNK

from . import evidence, facets
from .monitor import parse_monitor
from .blocks import ReadLimit as ReadLimit, RunIngestError as RunIngestError, TraceText
from .parsers import storable, stream_trace
from ptbsite.jsontext import loads
from .parsers.utf8 import decode
from .redaction import Counting, Redactor, learn_values
from .files import RunFiles, open_regular, read_blocks
from .reindex import suite_contexts, versions_json
from .state import API_LIMIT_MARKERS, derive_state, read_accuracy

_FINAL_EVAL = re.compile(r"^(?:z_new_\d+_)?final_eval(?:_(\d+))?\.txt$")
_JUDGE_TRACE = re.compile(r"^judge_output(?:_(?P<judge>(?!rerun)[a-z0-9_]+?))?(?P<rerun>_rerun)?\.json$")
REDACT_STEPS = 256  # steps redacted as decoded text at a time (Redactor.redact_many: one gate over them all)
READ_BLOCK = 1024 * 1024  # bytes read at a time from a streamed trace (a larger block is no faster and holds more)
MAX_LINE_BYTES = 256 * 1024 * 1024  # a streamed trace with a longer line is refused (memory stays bounded)
TRACE_NAMES = ("solve_out.txt", "trace.txt", "solve_parsed.txt")  # the agent trace, first present wins
_HMS = re.compile(r"^(\d+):([0-5]\d):([0-5]\d)$")


def _hours_minutes_seconds(text: str) -> int | None:
    match = _HMS.match(text.strip())
    return int(match[1]) * 3600 + int(match[2]) * 60 + int(match[3]) if match else None


@dataclass
class _Counts:
    """What reading one run's files replaced: secrets (redacted) and characters (invalid UTF-8 -> U+FFFD)."""

    secrets: int = 0
    replaced: int = 0


def _read(path: Path, redactor: Redactor, counts: _Counts | None = None, files: RunFiles | None = None) -> str | None:
    """The file's text, decoded (invalid UTF-8 -> U+FFFD) and redacted, counting both into ``counts``; None when
    it is not a file, or ``files`` (the run's readable entries) refuses it."""
    data = files.read_bytes(path) if files is not None else (path.read_bytes() if path.is_file() else None)
    if data is None:
        return None
    text, replaced = decode(data)
    text, secrets = redactor.redact_counted(text)
    if counts is not None:
        counts.secrets += secrets
        counts.replaced += replaced
    return text



def dir_time(run_dir: Path, files: RunFiles | None = None) -> tuple[datetime | None, str | None]:
    """The run directory's own time (naive UTC) and where it came from, the run's date when its trace has no
    timestamps: the ISO 8601 stamp in ``timestamp.txt`` (baseline runs, spec 1.4; a stamp without a zone is UTC),
    else the earliest modification time of the files directly in the directory (``"file times"``: the first file
    the harness wrote, e.g. ``prompt.txt`` before the agent starts). ``(None, None)`` for a directory without
    files. Modification times are what the copy of the tree kept: a copy that did not preserve them dates the
    run to the copy."""
    files = files or RunFiles(run_dir, run_dir.parent.parent)
    stamp = files.read_bytes(run_dir / "timestamp.txt")
    if stamp is not None:
        try:
            moment = datetime.fromisoformat(stamp.decode(errors="replace").strip())
        except ValueError:
            moment = None
        if moment is not None:
            return _naive(moment), "timestamp.txt"
    times = [p.stat().st_mtime for p in run_dir.iterdir() if files.is_file(p)]
    if not times:
        return None, None
    return datetime.fromtimestamp(min(times), timezone.utc).replace(tzinfo=None), "file times"


def agent_trace_path(run_dir: Path, files: RunFiles | None = None) -> Path | None:
    """The run's agent trace: ``solve_out.txt``, else ``trace.txt``, else ``solve_parsed.txt``; None without one
    (a trace ``files`` refuses is absent)."""
    present = files.is_file if files is not None else Path.is_file
    return next((run_dir / n for n in TRACE_NAMES if present(run_dir / n)), None)


def learn_run_values(run_dir: Path, files: RunFiles) -> dict[str, str]:
    """``ingest.redaction.learn_values`` over every readable regular file at the top of the run directory, read
    in :data:`READ_BLOCK` blocks (a trace of any size in bounded memory)."""
    found: dict[str, str] = {}
    for path in sorted(run_dir.iterdir()):
        if files.is_file(path):
            for name, value in learn_values(read_blocks(path, files.root, READ_BLOCK)).items():
                if value not in found.values():
                    found[name if name not in found else f"{path.name}:{name}"] = value
    return found


def content_hash(run_dir: Path, files: RunFiles | None = None) -> str:
    """The run's content hash (64 hex chars): sha256 over the run's top-level files (names and bytes) and the
    names under task/ and final_model/. An entry ``files`` (default: the run's, its root two levels up) refuses
    counts by its name and refusal only: it is never opened."""
    files = files or RunFiles(run_dir, run_dir.parent.parent)
    digest = hashlib.sha256()
    for path in sorted(run_dir.iterdir()):
        digest.update(path.name.encode() + b"\0")
        if not files.ok(path):
            digest.update(b"refused\0")
        elif path.is_file():
            with open_regular(path, files.root) as handle:
                while chunk := handle.read(1 << 20):
                    digest.update(chunk)
        elif path.is_dir():
            for sub in sorted(path.rglob("*")):
                digest.update(str(sub.relative_to(run_dir)).encode() + b"\0")
    return digest.hexdigest()



class Ingester:
    """Ingest state for one tree: the suite's models and agents, the redactor, the evidence contexts."""

    def __init__(self, *, suite_id: str, redactor: Redactor, synthetic: bool, root: Path | None = None):
        self.root = root  # the results root (files.py: nothing outside it is read); None: each run's, two levels up
        self.suite = load_suite(suite_id)
        self.suite_id = suite_id
        self.redactor = redactor
        self.synthetic = synthetic
        self.base_by_safe = {layout.model_safe(m["hf_id"]): m for m in self.suite["base_models"]}
        self.instruct_by_safe = {layout.model_safe(m["instruct_hf_id"]): m for m in self.suite["base_models"]}
        self.datasets = {b["id"]: tuple(b.get("datasets", [])) for b in self.suite["benchmarks"]}
        self.contexts = suite_contexts(suite_id)
        self.rules_version = versions_json()

    def method_row(self, name: layout.MethodName, root: Path) -> MethodRow:
        """The ``methods`` row of a method directory (``root``: the results root it was read from)."""
        known = layout.match_known_agent(name.raw, known_agents(self.suite))
        key = known["key"] if known else name.raw
        # A method in no agent's list is its own row, keyed by the method name, and never joins a group (upstream
        # aggregates only the listed methods); it is named after its model config and harness agent, e.g.
        # "gpt-5.1-codex-max (codexhigh)".
        display = known["name"] if known else f"{name.config} ({name.harness_agent})"
        effort = (known or {}).get("reasoning_effort") or name.reasoning_effort
        return MethodRow(id=name.raw, suite=self.suite_id, harness_agent=name.harness_agent, config=name.config,
                         budget_hours=name.budget_hours, gpus=name.gpus, experiment=name.experiment,
                         scaffold=name.scaffold, agent_key=key, agent_name=display, reasoning_effort=effort,
                         synthetic=self.synthetic, results_root=str(root),
                         ingested_at=datetime.now(timezone.utc).replace(tzinfo=None))

    def parse_run(self, method: layout.MethodName, run_dir: Path, *, baseline: bool = False,
                  known_hash: str | None = None) -> ParsedRun:
        """Read one run directory whole into rows for runs / steps / verdicts / evaluations (nothing written):
        :meth:`open_run`'s steps collected into the rows (a worker process's run, whose rows travel to the storing
        process). ``known_hash``: the directory's :func:`content_hash` when the caller has it already. Returns the
        run's rows (``traces.records.ParsedRun``), its problems ("path: message" strings) and ``stored_steps``
        (how many step rows, every trace).

        Raises:
            RunIngestError: an unknown base model or benchmark. OSError: a file could not be read.
        """
        reading = self.open_run(method, run_dir, baseline=baseline, known_hash=known_hash)
        writes = list(reading.steps())
        rows = reading.finish()
        rows.steps[:0] = [w.row for w in writes]
        rows.texts[:0] = [text for w in writes for text in w.texts]
        return rows

    def open_run(self, method: layout.MethodName, run_dir: Path, *, baseline: bool = False,
                 known_hash: str | None = None, limit_s: float | None = None) -> RunReading:
        """One run directory to read as a stream, by whoever stores it (``traces.services.RunWriter.stream``
        pulls its steps, then takes the rest of its rows): nothing is read before then. ``limit_s``: seconds
        reading the agent's trace may take (else :class:`ReadLimit`)."""
        return RunReading(self, method, run_dir, baseline=baseline, known_hash=known_hash, limit_s=limit_s)

    def _run_rows(self, method: layout.MethodName, run_dir: Path, *, baseline: bool, known_hash: str | None,
                  deadline: float | None) -> Generator[StepWrite, None, ParsedRun]:
        """The agent trace's step rows as they are read, then (returned) the run's other rows, the judges' step
        rows among them (:class:`RunReading`)."""
        run_name = layout.parse_run_name(run_dir.name)
        models = self.instruct_by_safe | self.base_by_safe if baseline else self.base_by_safe
        model = models.get(run_name.model_safe)
        if model is None:
            raise RunIngestError(f"{run_dir}: unknown base model {run_name.model_safe!r}")
        if run_name.benchmark not in self.datasets:
            raise RunIngestError(f"{run_dir}: unknown benchmark {run_name.benchmark!r}")
        files = RunFiles(run_dir, self.root or run_dir.parent.parent)
        # Values the run's own files assign to key variables (an `env` dump, an export) are known secrets for
        # the whole run, wherever else and in whatever decoded form they appear (ingest.redaction.learn_values).
        redactor = self.redactor.with_known(learn_run_values(run_dir, files))
        is_instruct = baseline and run_name.model_safe in self.instruct_by_safe and run_name.model_safe not in self.base_by_safe
        rid = layout.run_id(method.raw, run_dir.name)
        problems: list[str] = []
        counts = _Counts()

        metrics_text = _read(run_dir / "metrics.json", redactor, counts, files)
        metrics = None
        if metrics_text is not None:
            try:
                metrics = loads(metrics_text)
                if not isinstance(metrics, dict):
                    raise ValueError("not a JSON object")
            except ValueError as exc:
                problems.append(f"{run_dir / 'metrics.json'}: unreadable ({exc}); counted as no score")
                metrics = None
        accuracy, accuracy_problem = read_accuracy(metrics, run_dir / "metrics.json")
        if accuracy_problem:
            problems.append(accuracy_problem)

        trace_path = agent_trace_path(run_dir, files)
        raw_size = trace_path.stat().st_size if trace_path else 0
        if trace_path is None:
            agent = _Trace(ParsedTrace(format="none"), [], [], [], "")
        else:
            agent = yield from self._read_trace(rid, "agent", trace_path, counts, files, redactor,
                                                scaffold=method.harness_agent, context=self.contexts[run_name.benchmark],
                                                deadline=deadline)
        parsed = agent.parsed
        problems += [f"{run_dir.name}/{p}" for p in parsed.problems]
        warnings = agent.warnings
        replaced = counts.replaced + parsed.replaced_chars

        state, detail = (("scored", "baseline evaluation") if baseline and metrics
                         else derive_state(run_dir, agent.text, metrics, files))
        calls = agent.calls
        steps: list[StepRow] = []  # the judges' step rows, held in the run's rows
        texts: list[StepTextRow] = []
        for path in sorted(run_dir.iterdir()):
            m = _JUDGE_TRACE.match(path.name)
            if (m or path.name == "judgement.log") and files.is_file(path):
                judge = f"judge:{(m and m['judge']) or 'codex'}" + (":rerun" if m and m["rerun"] else "")
                # (what decoding a judge's file replaced goes to counts.replaced, read above: not counted, as ever)
                judge_parsed = _held(self._read_trace(rid, judge, path, counts, files, redactor), steps, texts).parsed
                replaced += judge_parsed.replaced_chars
                problems += [f"{run_dir.name}/{p}" for p in judge_parsed.problems]

        def redact_decoded(text: str) -> str:
            redacted, n = redactor.redact_decoded(text)
            counts.secrets += n
            return redacted

        redact_verdict = Counting(redactor)
        verdicts = [] if baseline else read_verdicts(run_dir, redact_verdict, readable=files.is_file)
        counts.secrets += redact_verdict.secrets
        time_taken = _read(run_dir / "time_taken.txt", redactor, counts, files)
        times = [s.time for s in agent.steps if s.time is not None]
        now = datetime.now(timezone.utc).replace(tzinfo=None)
        eval_attempts = sum(1 for p in run_dir.iterdir() if _FINAL_EVAL.match(p.name))
        moment, moment_source = dir_time(run_dir, files)
        run = RunRow(
            id=rid, method=method.raw, run_dir=run_dir.name, suite=self.suite_id, benchmark=run_name.benchmark,
            base_model=(model["instruct_id"] if is_instruct else model["id"]),
            base_model_hf=(model["instruct_hf_id"] if is_instruct else model["hf_id"]),
            cluster_id=run_name.cluster_id, is_latest=True, state=state, state_detail=detail,
            time_taken_s=_hours_minutes_seconds(time_taken) if time_taken else None,
            budget_hours=method.budget_hours, accuracy=accuracy,
            metrics_json=redact_decoded(json.dumps(metrics)) if metrics is not None else None,
            prompt=_read(run_dir / "prompt.txt", redactor, counts, files),
            has_final_model=files.is_dir(run_dir / "final_model"), eval_attempts=eval_attempts,
            trace_file=trace_path.name if trace_path else None, trace_format=parsed.format,
            trace_bytes=raw_size, step_count=agent.count,
            started_at=_naive(min(times)) if times else None, ended_at=_naive(max(times)) if times else None,
            tokens_in=parsed.tokens_in, tokens_out=parsed.tokens_out, cost_usd=parsed.cost_usd,
            trace_model=parsed.model, problems=json.dumps(problems), redaction_warnings=json.dumps(warnings),
            synthetic=self.synthetic, content_hash=known_hash or content_hash(run_dir, files), ingested_at=now,
            dir_time=moment, dir_time_source=moment_source,
            trace_incomplete=parsed.incomplete, rules_version=self.rules_version,
            unknown_events=json.dumps(parsed.unknown_events, sort_keys=True) if parsed.unknown_events else None,
        )
        evaluations = []
        if accuracy is not None:
            # Stamped with metrics.json's mtime, when the harness scored the run: re-ingesting an unchanged score
            # must not make it newer than a later rerun (the newest evaluation is the one that counts).
            scored_at = datetime.fromtimestamp((run_dir / "metrics.json").stat().st_mtime, timezone.utc)
            evaluations.append(EvaluationRow(
                id=f"{rid}-original", run_id=rid, origin="original", accuracy=float(accuracy),
                metrics_json=run.metrics_json or "",
                provenance_json=json.dumps({"source": "metrics.json", "eval_attempts": eval_attempts}),
                created_at=scored_at.replace(tzinfo=None)))
        verdict_rows = [VerdictRow(run_id=rid, judge=v.judge, attempt=v.attempt, era=v.era, kind=v.kind, value=v.value,
                                   flagged=v.flagged, text=v.text, note=v.note, source_file=v.source_file)
                        for v in verdicts]
        facet_rows, phase_rows, monitor_rows = _analysis_rows(rid, agent.steps, calls, run_dir, redactor, counts,
                                                              files)
        rows = ParsedRun(run=run, steps=steps, texts=texts, verdicts=verdict_rows, evaluations=evaluations,
                         facets=facet_rows, phases=phase_rows, monitor=monitor_rows, problems=problems,
                         late_usage=[LateUsage(trace="agent", idx=idx, tokens_in=t_in, tokens_out=t_out)
                                     for idx, (t_in, t_out) in parsed.late_usage.items()],
                         stored_steps=len(steps) + agent.count)
        problems[:0] = files.problems  # the refused entries first (files.py), each naming its path
        counts.secrets += _redact_rows(rows, redactor)
        replaced += _make_rows_storable(rows)
        run.secrets_redacted, run.chars_replaced = counts.secrets, replaced
        return rows

    def _read_trace(self, rid: str, trace: str, path: Path, counts: _Counts, files: RunFiles, redactor: Redactor, *,
                    scaffold: str | None = None, context: evidence.EvidenceContext | None = None,
                    deadline: float | None = None) -> Generator[StepWrite, None, _Trace]:
        """Read one trace file of the run (``trace``: ``agent`` or ``judge:...``) as a stream, the one way a trace
        is read: a generator of its step rows as they come, pulled from the parser's generator of steps
        (``stream_trace``), which pulls the file's redacted text (``ingest.blocks.TraceText``), that returns the
        :class:`_Trace`. Each step is redacted again as decoded text (:data:`REDACT_STEPS` at a time). The agent's
        trace (``context`` given) is also scanned for residual key prefixes and API-limit markers, and each of its
        tool calls scanned, classified and marked as it comes; held: the (settled) tool calls and a slim copy of
        each step (kind, index, time) for the phases.

        Raises:
            ReadLimit: reading went past ``deadline`` or met a line over :data:`MAX_LINE_BYTES`.
        """
        text = TraceText(path, files, redactor, scan=context is not None, block=READ_BLOCK, max_line=MAX_LINE_BYTES,
                         deadline=deadline)
        collector = facets.CallCollector(slim=True)
        kept: list[Step] = []
        start: datetime | None = None
        waiting: list[Step] = []  # steps yielded by the parser, redacted together (one RE2 gate) every REDACT_STEPS
        stream = stream_trace(text, source=path.name, scaffold=scaffold)
        parsed: ParsedTrace | None = None
        while parsed is None:
            try:
                waiting.append(next(stream))
                if len(waiting) < REDACT_STEPS:
                    continue
            except StopIteration as stop:
                parsed = stop.value
            counts.secrets += redact_steps(waiting, redactor)
            for step in waiting:
                if start is None and step.time is not None:
                    start = step.time
                yield _step_write(rid, trace, step, start, collector, context, kept)
            waiting.clear()
        counts.secrets += text.secrets
        counts.replaced += text.replaced
        # derive_state looks for the first API-limit marker (in its order) in the text: these are all it can find.
        found = "\n".join(m for m in API_LIMIT_MARKERS if m in text.markers)
        return _Trace(parsed, kept, collector.calls, text.warnings, found)


class RunReading:
    """One run directory read as a stream (``Ingester.open_run``): :meth:`steps` yields the agent trace's step
    rows as they are read (the caller writes them in batches, so memory is bounded by a batch and the facts held,
    not by the trace), then :meth:`finish` gives the run's other rows. Calling :meth:`steps` again reads the run
    again from the start (a unit of work retried)."""

    def __init__(self, ingester: Ingester, method: layout.MethodName, run_dir: Path, *, baseline: bool,
                 known_hash: str | None, limit_s: float | None) -> None:
        self.ingester, self.method, self.run_dir = ingester, method, run_dir
        self.baseline, self.known_hash, self.limit_s = baseline, known_hash, limit_s
        self._rows: ParsedRun | None = None

    def steps(self) -> Iterator[StepWrite]:
        """The agent trace's step rows, in order, as they are read.

        Raises:
            RunIngestError: an unknown base model or benchmark; ReadLimit: reading went over ``limit_s`` seconds
            or met too long a line. OSError: a file could not be read.
        """
        self._rows = None
        deadline = None if self.limit_s is None else time.monotonic() + self.limit_s
        self._rows = yield from self.ingester._run_rows(self.method, self.run_dir, baseline=self.baseline,
                                                        known_hash=self.known_hash, deadline=deadline)

    def finish(self) -> ParsedRun:
        """The run's rows but the agent's steps (``stored_steps`` counts them), once :meth:`steps` is exhausted."""
        if self._rows is None:
            raise RuntimeError(f"{self.run_dir}: finish() before every step was read")
        return self._rows


def _held(stream: Generator[StepWrite, None, _Trace], steps: list[StepRow], texts: list[StepTextRow]) -> _Trace:
    """Read a trace whose rows are held in the run's rows (a judge's): its step rows appended to ``steps`` and
    ``texts``; returns what ``stream`` returns."""
    while True:
        try:
            write = next(stream)
        except StopIteration as stop:
            return stop.value
        steps.append(write.row)
        texts.extend(write.texts)


def _step_write(rid: str, trace: str, step: Step, start: datetime | None, collector: facets.CallCollector,
                context: evidence.EvidenceContext | None, kept: list[Step]) -> StepWrite:
    """One (redacted) step of trace ``trace`` as its row: for the agent's (``context`` given), its tool call
    collected, scanned, marked and settled, and its slim copy appended to ``kept``; ``start``: the trace's first
    step time."""
    call = collector.add(step) if context is not None else None
    marked = None
    if call is not None and context is not None:
        hits, sure = call.raw_scan
        marked = evidence.mark(step.kind, step.tool, step.input, context, hits=hits, sure=sure, data=call.data)
        call.settle()  # what the facets read of its text is kept, the text let go
    texts: list[StepTextRow] = []
    row = _step_row(rid, trace, step, start, marked, texts)
    if context is not None:
        # Phases read kind, index and time; the (settled) calls hold what the facets read.
        kept.append(call.step if call is not None else Step(index=step.index, kind=step.kind, time=step.time))
    return StepWrite(row, texts, len(row.input or "") + len(row.output))


@dataclass
class _Trace:
    """A trace as ``parse_run`` uses it: the parse (totals, problems; its steps were yielded as rows), the agent's
    slim steps (for times and phases) and settled calls, the residual warnings, and the text ``derive_state``
    searches (the API-limit markers found)."""

    parsed: ParsedTrace
    steps: list[Step]
    calls: list[facets.Call]
    warnings: list[str]
    text: str

    @property
    def count(self) -> int:
        """Steps of the agent trace."""
        return len(self.steps)


def _step_row(rid: str, trace: str, s: Step, start: datetime | None, marked: list[str] | None,
              texts: list[StepTextRow]) -> StepRow:
    """One steps-table row; ``start``: the trace's first step time; a field cut at STEP_TEXT_CAP has its whole
    text appended to ``texts`` as step_texts rows."""
    elapsed = (s.time - start).total_seconds() if (s.time is not None and start is not None) else None
    stored_input, input_bytes = _capped(s.input, rid, trace, s.index, "input", texts)
    stored_output, output_bytes = _capped(s.output, rid, trace, s.index, "output", texts)
    return StepRow(run_id=rid, trace=trace, idx=s.index, time=_naive(s.time), elapsed_s=elapsed, kind=s.kind,
                   tool=s.tool, input=stored_input, output=stored_output or "", is_error=s.is_error,
                   call_id=s.call_id, tokens_in=s.tokens_in, tokens_out=s.tokens_out, cost_usd=s.cost_usd,
                   line=s.line, suspicious=",".join(marked) if marked else None, label=s.label,
                   input_bytes=input_bytes, output_bytes=output_bytes)


def _utf8_size(text: str) -> int:
    """Bytes of ``text`` in UTF-8; ASCII text is not encoded to count it."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _capped(text: str | None, rid: str, trace: str, idx: int, field: str,
            texts: list[StepTextRow]) -> tuple[str | None, int | None]:
    """``(text to store in the steps table, UTF-8 size of the whole text)``: a text over STEP_TEXT_CAP bytes is
    cut there (at a character boundary) and its whole bytes go to ``texts`` as zlib chunks of TEXT_CHUNK (the
    step ``idx`` of ``trace`` of run ``rid``, its ``field``)."""
    if text is None:
        return None, None
    size = _utf8_size(text)
    if size <= STEP_TEXT_CAP:
        return text, size
    data = text.encode("utf-8")
    for n in range(0, len(data), TEXT_CHUNK):
        texts.append(StepTextRow(run_id=rid, trace=trace, idx=idx, field=field, chunk=n // TEXT_CHUNK,
                                 data=zlib.compress(data[n:n + TEXT_CHUNK], 6)))
    return data[:STEP_TEXT_CAP].decode("utf-8", "ignore"), size


STEP_TEXT_FIELDS = ("tool", "input", "output", "call_id", "label")  # the strings of a Step
# The run row's columns that are names the tree or the code gave (ids, hashes, formats), not text from a file.
_RUN_NAMES = frozenset({"id", "method", "run_dir", "suite", "benchmark", "base_model", "base_model_hf", "state",
                        "trace_file", "trace_format", "content_hash", "rules_version", "dir_time_source"})


def redact_steps(steps: list[Step], redactor: Redactor) -> int:
    """Redact every string of ``steps`` (:data:`STEP_TEXT_FIELDS`) in place as decoded text, deltas merged
    (``Redactor.redact_many``: one RE2 gate over them all); returns the secrets replaced. The raw lines were
    redacted before parsing; this pass sees what decoding JSON (``\\uXXXX``, ``\\/``) and merging streamed
    deltas made of them."""
    if not steps:
        return 0
    values = [getattr(step, name) for step in steps for name in STEP_TEXT_FIELDS]
    redacted, total = redactor.redact_many(values)
    if total or redacted != values:
        width = len(STEP_TEXT_FIELDS)
        for k, step in enumerate(steps):
            for j, name in enumerate(STEP_TEXT_FIELDS):
                value = redacted[k * width + j]
                if value is not values[k * width + j]:
                    setattr(step, name, value if name != "output" else value or "")
    return total


# Per table, the fields that are ids and names the code gave (kept as they are by _redact_rows).
_ROW_NAMES = {VerdictRow: frozenset({"run_id"}), EvaluationRow: frozenset({"id", "run_id"}),
              FacetRow: frozenset({"run_id"}), PhaseRow: frozenset({"run_id"})}


def _redact_rows(rows: ParsedRun, redactor: Redactor) -> int:
    """Redact, as decoded text, every string of the run's rows that did not come from a step (the run's texts
    but its names, verdicts, evaluations, facets, phases, problems); returns the secrets replaced."""
    problems, total = redactor.redact_many(list(rows.problems))
    rows.problems = [p or "" for p in problems]
    run = rows.run
    run.problems = json.dumps(rows.problems)
    total += _redact_fields([run], _RUN_NAMES | {"problems"}, redactor)
    for table, names in ((rows.verdicts, _ROW_NAMES[VerdictRow]), (rows.evaluations, _ROW_NAMES[EvaluationRow]),
                         (rows.facets, _ROW_NAMES[FacetRow]), (rows.phases, _ROW_NAMES[PhaseRow])):
        total += _redact_fields(table, names, redactor)
    return total


def _redact_fields(table: Sequence[RunRow | VerdictRow | EvaluationRow | FacetRow | PhaseRow],
                   names: frozenset[str], redactor: Redactor) -> int:
    """Redact in place every text field of the rows of ``table`` (one type) but ``names``, with one
    ``redact_many`` over them all; returns the secrets replaced."""
    if not table:
        return 0
    keys = [k for k in text_fields(type(table[0])) if k not in names]
    values = [getattr(row, k) for row in table for k in keys]
    if not any(values):
        return 0
    redacted, total = redactor.redact_many(values)
    for at, (row, k) in enumerate((row, k) for row in table for k in keys):
        setattr(row, k, redacted[at])
    return total


def _make_rows_storable(rows: ParsedRun) -> int:
    """Make every string of the run's rows but the steps (already made storable by the parsers) storable
    (``ingest.parsers.storable``: a verdict's JSON with ``"\\ud83d"``, a surrogate-escaped file name); returns the
    surrogates replaced."""
    replaced = 0
    table: Sequence[RunRow | VerdictRow | EvaluationRow | FacetRow | PhaseRow]
    for table in ([rows.run], rows.verdicts, rows.evaluations, rows.facets, rows.phases):
        for row in table:
            for key in text_fields(type(row)):
                value = getattr(row, key)
                if isinstance(value, str):
                    fixed, n = storable(value)
                    setattr(row, key, fixed)
                    replaced += n
    rows.problems = [storable(p)[0] for p in rows.problems]
    return replaced


def _naive(moment: datetime | None) -> datetime | None:
    """UTC-aware -> naive UTC (the warehouse's TIMESTAMP columns hold UTC)."""
    return None if moment is None else _naive_utc(moment)


def _naive_utc(moment: datetime) -> datetime:
    """UTC-aware -> naive UTC; a naive time is UTC already."""
    if moment.tzinfo is timezone.utc:  # the parsers' times: no conversion to make
        return moment.replace(tzinfo=None)
    return moment.astimezone(timezone.utc).replace(tzinfo=None) if moment.tzinfo else moment



def _analysis_rows(rid: str, steps: list[Step], calls: list[facets.Call], run_dir: Path, redactor: Redactor,
                   counts: _Counts, files: RunFiles) -> tuple[list[FacetRow], list[PhaseRow], list[MonitorRow]]:
    """The run's facets, phases and monitor samples (``ingest.facets``, ``.monitor``); ``steps``: the agent
    trace's; ``calls``: ``facets.tool_calls(steps)``, shared with the evidence marks.

    Monitor times are put on the trace's axis (seconds since its first timed step); without trace times, since
    the first sample. ``system_monitor.log`` is read from the run dir, else from ``task/``.
    """
    facet_rows = [FacetRow(run_id=rid, facet=f.facet, value=f.value, value_num=f.value_num,
                           steps=",".join(map(str, f.steps))) for f in facets.extract(steps, calls=calls)]
    phase_rows = [PhaseRow(run_id=rid, phase=p.phase, start_s=p.start_s, end_s=p.end_s, step_from=p.step_from,
                           step_to=p.step_to) for p in facets.phases(steps, calls=calls)]
    path = next((p for p in (run_dir / "system_monitor.log", run_dir / "task" / "system_monitor.log")
                 if files.is_file(p)), None)
    samples = parse_monitor(_read(path, redactor, counts, files) or "") if path else []
    if not samples:
        return facet_rows, phase_rows, []
    origin = next((s.time for s in steps if s.time is not None), samples[0].time)
    monitor_rows = [MonitorRow(run_id=rid, time=_naive_utc(s.time), t_s=(s.time - origin).total_seconds(),
                               gpu_util=s.gpu_util, gpu_mem_mib=s.gpu_mem_mib, gpu_mem_total_mib=s.gpu_mem_total_mib)
                    for s in samples]
    return facet_rows, phase_rows, monitor_rows
