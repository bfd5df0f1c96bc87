"""Writes of the traces app: ingesting results trees into the warehouse, and the writes other apps make to
runs (a rerun's evaluation, a reviewer's override, a re-run judge's verdicts).

``ingest_tree`` walks a PostTrainBench results tree (spec section 1) and stores each run (method, names,
state, time, prompt, metrics, verdicts of every era, the judge's trace and the agent's trace as typed steps),
each run in its own transaction: a run is stored with all its steps or not at all. Every text is redacted
(``traces.redaction``) before it is parsed or stored, and the run records how many secrets that replaced.

Text is made storable first: invalid UTF-8 and lone UTF-16 surrogates become U+FFFD (counted per run), NUL
characters the visible U+2400. A step's input or output longer than :data:`STEP_TEXT_CAP` (256 KiB of UTF-8) is
stored cut at that size in the steps table (the pages say how many bytes are not shown); the whole text is kept
in ``step_texts``, zlib-compressed in chunks of :data:`TEXT_CHUNK` bytes, and served range by range
(``traces.selectors.step_text``).
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa

from ptbsite import warehouse
from ptbsite.suites import known_agents, load_suite

from . import evidence, facets, layout
from .monitor import parse_monitor
from .parsers import parse_trace, storable
from .parsers.framing import decode, loads
from .redaction import Redactor
from .steps import ParsedTrace
from .verdicts import SCORED_KINDS, Verdict, effective_flags, read_verdicts

log = logging.getLogger(__name__)

# Strings in solve_out.txt that mean the agent's API account ran dry (spec 1.3).
API_LIMIT_MARKERS = ("You've hit your limit", "spending_limit", "billing_hard_limit", "insufficient_quota",
                     "budget_exceeded", "plan does not yet include", "token_expired", "Failed to refresh token")
STATES = ("scored", "no_final_model", "eval_failed", "never_finished", "timed_out", "cuda_failure", "api_limit")
_FINAL_EVAL = re.compile(r"^(?:z_new_\d+_)?final_eval(?:_(\d+))?\.txt$")
_JUDGE_TRACE = re.compile(r"^judge_output(?:_(?P<judge>(?!rerun)[a-z0-9_]+?))?(?P<rerun>_rerun)?\.json$")
_HMS = re.compile(r"^(\d+):([0-5]\d):([0-5]\d)$")
SYNTHETIC_MARKER = "SYNTHETIC"  # a file at the results root that marks a generated (demo) tree
STEP_TEXT_CAP = 256 * 1024  # bytes (UTF-8) of a step's input or output stored in the steps table
TEXT_CHUNK = 1024 * 1024    # bytes of a whole text per compressed chunk in step_texts


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

    def __str__(self) -> str:
        return (f"{self.root}: {self.stored} runs stored, {self.unchanged} unchanged, {self.failed} failed, "
                f"{self.steps} steps, {self.bytes_read / 1e6:.1f} MB of traces, {len(self.problems)} problems")


class RunIngestError(RuntimeError):
    """One run could not be stored; the message names its directory."""


def _hours_minutes_seconds(text: str) -> int | None:
    match = _HMS.match(text.strip())
    return int(match[1]) * 3600 + int(match[2]) * 60 + int(match[3]) if match else None


@dataclass
class _Counts:
    """What reading one run's files replaced: secrets (redacted) and characters (invalid UTF-8 -> U+FFFD)."""

    secrets: int = 0
    replaced: int = 0


def _read(path: Path, redactor: Redactor, counts: _Counts | None = None) -> str | None:
    """The file's text, decoded (invalid UTF-8 -> U+FFFD) and redacted, counting both into ``counts``; None when
    it is not a file."""
    if not path.is_file():
        return None
    text, replaced = decode(path.read_bytes())
    text, secrets = redactor.redact_counted(text)
    if counts is not None:
        counts.secrets += secrets
        counts.replaced += replaced
    return text


def read_accuracy(metrics: dict | None, path: Path) -> tuple[float | None, str | None]:
    """``(accuracy, problem)`` of a parsed ``metrics.json`` (spec 4.1: ``accuracy`` is a fraction in [0, 1]).

    A number (not a bool) is the score; a string holding a finite number (``"0.85"``) is parsed. Anything else
    under ``accuracy`` (text, NaN, a number outside 0..1, a bool, a list) is no score and a problem naming the
    file and the value; a missing ``accuracy`` is no score without a problem. Raises nothing.
    """
    if metrics is None or "accuracy" not in metrics:
        return None, None
    value = metrics["accuracy"]
    number: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is not None and math.isfinite(number) and 0.0 <= number <= 1.0:
        return number, None
    shown = json.dumps(value, ensure_ascii=False)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    why = "is not a number" if number is None else "is not a fraction between 0 and 1"
    return None, f"{path}: accuracy {shown} {why}; counted as no score"


def _content_hash(run_dir: Path) -> str:
    """sha256 over the run's top-level files (names and bytes) and the names under task/ and final_model/."""
    digest = hashlib.sha256()
    for path in sorted(run_dir.iterdir()):
        digest.update(path.name.encode() + b"\0")
        if path.is_file():
            with path.open("rb") as handle:
                while chunk := handle.read(1 << 20):
                    digest.update(chunk)
        elif path.is_dir():
            for sub in sorted(path.rglob("*")):
                digest.update(str(sub.relative_to(run_dir)).encode() + b"\0")
    return digest.hexdigest()


def derive_state(run_dir: Path, trace_text: str, metrics: dict | None) -> tuple[str, str]:
    """(state, human-readable detail) of a run from its files (spec section 1.3, "Run-level states").

    Precedence: CUDA failure, timed out (``error.log`` starts with ``Terminated`` or the diagnostics say so),
    never finished (no ``time_taken.txt``), scored (an ``accuracy`` :func:`read_accuracy` accepts), API limit
    (marker strings in the trace), evaluation failed (``final_model/`` present), no final model.
    """
    error_log = (run_dir / "error.log").read_text(errors="replace") if (run_dir / "error.log").is_file() else ""
    output_log = (run_dir / "output.log").read_text(errors="replace") if (run_dir / "output.log").is_file() else ""
    if (run_dir / "task" / "cuda_not_available").exists():
        return "cuda_failure", "the CUDA check failed; the agent never started"
    if error_log.lstrip().startswith("Terminated") or "killed by timeout" in output_log:
        return "timed_out", "the job was killed at its time limit"
    if not (run_dir / "time_taken.txt").is_file():
        detail = "killed (out of memory)" if "Killed" in error_log else "no time_taken.txt"
        return "never_finished", f"the agent never finished: {detail}"
    if read_accuracy(metrics, run_dir / "metrics.json")[0] is not None:
        return "scored", "metrics.json holds the score"
    marker = next((m for m in API_LIMIT_MARKERS if m in trace_text), None)
    if marker:
        return "api_limit", f"the agent hit its API limit ({marker!r} in the trace)"
    if (run_dir / "final_model").is_dir():
        return "eval_failed", "final_model/ exists but every evaluation attempt failed"
    return "no_final_model", "the agent left no final_model/"


class Ingester:
    """Ingest state for one tree: the suite's models and agents, the redactor, the evidence contexts."""

    def __init__(self, *, suite_id: str, redactor: Redactor, synthetic: bool):
        self.suite = load_suite(suite_id)
        self.suite_id = suite_id
        self.redactor = redactor
        self.synthetic = synthetic
        self.base_by_safe = {layout.model_safe(m["hf_id"]): m for m in self.suite["base_models"]}
        self.instruct_by_safe = {layout.model_safe(m["instruct_hf_id"]): m for m in self.suite["base_models"]}
        self.datasets = {b["id"]: tuple(b.get("datasets", [])) for b in self.suite["benchmarks"]}
        instruct = tuple(m["instruct_hf_id"] for m in self.suite["base_models"])
        self.contexts = {bid: evidence.EvidenceContext(names, instruct) for bid, names in self.datasets.items()}

    def method_row(self, name: layout.MethodName, root: Path) -> tuple:
        known = layout.match_known_agent(name.raw, known_agents(self.suite))
        key = known["key"] if known else name.raw
        # A method in no agent's list is its own row, keyed by the method name, and never joins a group (upstream
        # aggregates only the listed methods); it is named after its model config and harness agent, e.g.
        # "gpt-5.1-codex-max (codexhigh)".
        display = known["name"] if known else f"{name.config} ({name.harness_agent})"
        effort = (known or {}).get("reasoning_effort") or name.reasoning_effort
        return (name.raw, self.suite_id, name.harness_agent, name.config, name.budget_hours, name.gpus,
                name.experiment, name.scaffold, key, display, effort, self.synthetic, str(root),
                datetime.now(timezone.utc).replace(tzinfo=None))

    def parse_run(self, method: layout.MethodName, run_dir: Path, *, baseline: bool = False) -> dict:
        """Read one run directory into rows for runs / steps / verdicts / evaluations (nothing written)."""
        run_name = layout.parse_run_name(run_dir.name)
        models = self.instruct_by_safe | self.base_by_safe if baseline else self.base_by_safe
        model = models.get(run_name.model_safe)
        if model is None:
            raise RunIngestError(f"{run_dir}: unknown base model {run_name.model_safe!r}")
        if run_name.benchmark not in self.datasets:
            raise RunIngestError(f"{run_dir}: unknown benchmark {run_name.benchmark!r}")
        is_instruct = baseline and run_name.model_safe in self.instruct_by_safe and run_name.model_safe not in self.base_by_safe
        rid = layout.run_id(method.raw, run_dir.name)
        problems: list[str] = []
        counts = _Counts()

        metrics_text = _read(run_dir / "metrics.json", self.redactor, counts)
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

        trace_path = next((run_dir / n for n in ("solve_out.txt", "trace.txt", "solve_parsed.txt")
                           if (run_dir / n).is_file()), None)
        raw_size = trace_path.stat().st_size if trace_path else 0
        trace_text = _read(trace_path, self.redactor, counts) if trace_path else ""
        parsed = parse_trace(trace_text, source=trace_path.name if trace_path else "", scaffold=method.harness_agent) \
            if trace_path else ParsedTrace(format="none")
        problems += [f"{run_dir.name}/{p}" for p in parsed.problems]
        warnings = self.redactor.residual_warnings(trace_text) if trace_text else []
        replaced = counts.replaced + parsed.replaced_chars

        state, detail = ("scored", "baseline evaluation") if baseline and metrics else derive_state(run_dir, trace_text, metrics)
        # Each tool call is scanned and classified once; facets, phases and evidence all read these calls.
        calls = facets.tool_calls(parsed.steps)
        marks = evidence.call_marks(calls, self.contexts[run_name.benchmark])
        texts: list[tuple] = []
        steps = list(self._step_rows(rid, "agent", parsed, marks, texts))
        for path in sorted(run_dir.iterdir()):
            m = _JUDGE_TRACE.match(path.name)
            if m or path.name == "judgement.log":
                judge = f"judge:{(m and m['judge']) or 'codex'}" + (":rerun" if m and m["rerun"] else "")
                judge_parsed = parse_trace(_read(path, self.redactor, counts) or "", source=path.name)
                replaced += judge_parsed.replaced_chars
                problems += [f"{run_dir.name}/{p}" for p in judge_parsed.problems]
                steps += list(self._step_rows(rid, judge, judge_parsed, {}, texts))

        def redact_verdict(text: str) -> str:
            redacted, n = self.redactor.redact_counted(text)
            counts.secrets += n
            return redacted

        verdicts = [] if baseline else read_verdicts(run_dir, redact_verdict)
        time_taken = _read(run_dir / "time_taken.txt", self.redactor, counts)
        times = [s.time for s in parsed.steps if s.time is not None]
        now = datetime.now(timezone.utc).replace(tzinfo=None)
        eval_attempts = sum(1 for p in run_dir.iterdir() if _FINAL_EVAL.match(p.name))
        run = {
            "id": rid, "method": method.raw, "run_dir": run_dir.name, "suite": self.suite_id,
            "benchmark": run_name.benchmark, "base_model": (model["instruct_id"] if is_instruct else model["id"]),
            "base_model_hf": (model["instruct_hf_id"] if is_instruct else model["hf_id"]),
            "cluster_id": run_name.cluster_id, "is_latest": True, "state": state, "state_detail": detail,
            "time_taken_s": _hours_minutes_seconds(time_taken) if time_taken else None,
            "budget_hours": method.budget_hours, "accuracy": accuracy,
            "metrics_json": json.dumps(metrics) if metrics is not None else None,
            "prompt": _read(run_dir / "prompt.txt", self.redactor, counts),
            "has_final_model": (run_dir / "final_model").is_dir(), "eval_attempts": eval_attempts,
            "trace_file": trace_path.name if trace_path else None, "trace_format": parsed.format,
            "trace_bytes": raw_size, "step_count": len(parsed.steps),
            "started_at": _naive(min(times)) if times else None, "ended_at": _naive(max(times)) if times else None,
            "tokens_in": parsed.tokens_in, "tokens_out": parsed.tokens_out, "cost_usd": parsed.cost_usd,
            "trace_model": parsed.model, "problems": json.dumps(problems), "redaction_warnings": json.dumps(warnings),
            "synthetic": self.synthetic, "content_hash": _content_hash(run_dir), "ingested_at": now,
            "trace_incomplete": parsed.incomplete,
            "unknown_events": json.dumps(parsed.unknown_events, sort_keys=True) if parsed.unknown_events else None,
        }
        evaluations = []
        if accuracy is not None:
            # Stamped with metrics.json's mtime, when the harness scored the run: re-ingesting an unchanged score
            # must not make it newer than a later rerun (the newest evaluation is the one that counts).
            scored_at = datetime.fromtimestamp((run_dir / "metrics.json").stat().st_mtime, timezone.utc)
            evaluations.append((f"{rid}-original", rid, "original", float(accuracy), run["metrics_json"],
                                json.dumps({"source": "metrics.json", "eval_attempts": eval_attempts}),
                                scored_at.replace(tzinfo=None)))
        verdict_rows = [(rid, v.judge, v.attempt, v.era, v.kind, v.value, v.flagged, v.text, v.note, v.source_file)
                        for v in verdicts]
        rows = {"run": run, "steps": steps, "verdicts": verdict_rows, "evaluations": evaluations, "problems": problems,
                "texts": texts, **_analysis_rows(rid, parsed, calls, run_dir, self.redactor, counts)}
        replaced += _make_rows_storable(rows)
        run["secrets_redacted"], run["chars_replaced"] = counts.secrets, replaced
        return rows

    def _step_rows(self, rid: str, trace: str, parsed: ParsedTrace, marks: dict[int, list[str]],
                   texts: list[tuple]) -> Iterator[tuple]:
        """Rows of the steps table for one parsed trace (``marks``: step index -> evidence rule ids, as
        ``evidence.call_marks`` gives them); the whole text of any field cut at STEP_TEXT_CAP is appended to
        ``texts`` as step_texts rows."""
        start = next((s.time for s in parsed.steps if s.time is not None), None)
        for s in parsed.steps:
            marked = marks.get(s.index)
            elapsed = (s.time - start).total_seconds() if (s.time is not None and start is not None) else None
            stored_input, input_bytes = _capped(s.input, (rid, trace, s.index, "input"), texts)
            stored_output, output_bytes = _capped(s.output, (rid, trace, s.index, "output"), texts)
            yield (rid, trace, s.index, _naive(s.time), elapsed, s.kind, s.tool, stored_input, stored_output or "",
                   s.is_error, s.call_id, s.tokens_in, s.tokens_out, s.cost_usd, s.line, ",".join(marked) if marked else None,
                   s.label, input_bytes, output_bytes)


def utf8_size(text: str | None) -> int | None:
    """Bytes of ``text`` in UTF-8 (None for None); ASCII text is not encoded to count it."""
    if text is None:
        return None
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _capped(text: str | None, key: tuple, texts: list[tuple]) -> tuple[str | None, int | None]:
    """``(text to store in the steps table, UTF-8 size of the whole text)``: a text over STEP_TEXT_CAP bytes is
    cut there (at a character boundary) and its whole bytes go to ``texts`` as zlib chunks of TEXT_CHUNK."""
    size = utf8_size(text)
    if text is None or size <= STEP_TEXT_CAP:
        return text, size
    data = text.encode("utf-8")
    for n in range(0, len(data), TEXT_CHUNK):
        texts.append((*key, n // TEXT_CHUNK, zlib.compress(data[n:n + TEXT_CHUNK], 6)))
    return data[:STEP_TEXT_CAP].decode("utf-8", "ignore"), size


def _make_rows_storable(rows: dict) -> int:
    """Make every string of the run's rows but the steps (already made storable by the parsers) storable
    (``traces.parsers.storable``: a verdict's JSON with ``"\\ud83d"``, a surrogate-escaped file name); returns the
    surrogates replaced."""
    replaced = 0
    run = rows["run"]
    for key, value in run.items():
        if isinstance(value, str):
            run[key], n = storable(value)
            replaced += n
    for table in ("verdicts", "evaluations", "facets", "phases"):
        fixed_rows = []
        for row in rows.get(table, []):
            fixed = []
            for value in row:
                if isinstance(value, str):
                    value, n = storable(value)
                    replaced += n
                fixed.append(value)
            fixed_rows.append(tuple(fixed))
        rows[table] = fixed_rows
    rows["problems"] = [storable(p)[0] for p in rows["problems"]]
    return replaced


def _naive(moment: datetime | None) -> datetime | None:
    """UTC-aware -> naive UTC (the warehouse's TIMESTAMP columns hold UTC)."""
    if moment is None:
        return None
    return moment.astimezone(timezone.utc).replace(tzinfo=None) if moment.tzinfo else moment


STEP_COLUMNS = ["run_id", "trace", "idx", "time", "elapsed_s", "kind", "tool", "input", "output", "is_error",
                "call_id", "tokens_in", "tokens_out", "cost_usd", "line", "suspicious", "label", "input_bytes",
                "output_bytes"]
STEP_TYPES = [pa.string(), pa.string(), pa.int32(), pa.timestamp("us"), pa.float64(), pa.string(), pa.string(),
              pa.string(), pa.string(), pa.bool_(), pa.string(), pa.int64(), pa.int64(), pa.float64(), pa.int32(),
              pa.string(), pa.string(), pa.int64(), pa.int64()]
TEXT_TYPES = [pa.string(), pa.string(), pa.int32(), pa.string(), pa.int32(), pa.binary()]


def store_run(rows: dict, *, method_row: tuple) -> None:
    """Replace one run (and upsert its method) in one transaction; recompute the latest-run flags of its cell.

    Raises:
        warehouse.WarehouseUnavailable, duckdb.Error: nothing of the run is stored then.
    """
    run = rows["run"]
    columns = list(run)
    steps = pa.table(
        {name: pa.array([r[i] for r in rows["steps"]], type=typ) for i, (name, typ) in enumerate(zip(STEP_COLUMNS, STEP_TYPES))}
    )

    def write(con) -> None:
        con.execute("DELETE FROM methods WHERE id = ?", [method_row[0]])
        con.execute(f"INSERT INTO methods VALUES ({', '.join('?' * len(method_row))})", list(method_row))
        # A run stored before is replaced; a new one (the common case) skips the deletes, each a scan of a table
        # that grows with every run ingested.
        stored = con.execute("SELECT count(*) FROM runs WHERE id = ?", [run["id"]]).fetchone()[0] > 0
        if stored:
            for table in ("runs", "steps", "step_texts", "verdicts", *_ANALYSIS_TYPES):
                con.execute(f"DELETE FROM {table} WHERE {'id' if table == 'runs' else 'run_id'} = ?", [run["id"]])
            con.execute("DELETE FROM evaluations WHERE run_id = ? AND origin = 'original'", [run["id"]])
        con.execute(f"INSERT INTO runs ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                    [run[c] for c in columns])
        con.register("new_steps", steps)
        try:
            con.execute(f"INSERT INTO steps ({', '.join(STEP_COLUMNS)}) SELECT * FROM new_steps ORDER BY trace, idx")
        finally:
            con.unregister("new_steps")
        if rows.get("texts"):
            texts = pa.table({f"c{i}": pa.array([r[i] for r in rows["texts"]], type=t) for i, t in enumerate(TEXT_TYPES)})
            con.register("new_texts", texts)
            try:
                con.execute("INSERT INTO step_texts SELECT * FROM new_texts")
            finally:
                con.unregister("new_texts")
        warehouse.insert_rows(con, "verdicts", rows["verdicts"])
        warehouse.insert_rows(con, "evaluations", rows["evaluations"])
        _store_analysis(con, run["id"], rows)
        con.execute(
            "UPDATE runs SET is_latest = (cluster_id = (SELECT max(r.cluster_id) FROM runs r WHERE r.method = runs.method "
            "AND r.benchmark = runs.benchmark AND r.base_model = runs.base_model)) "
            "WHERE method = ? AND benchmark = ? AND base_model = ?",
            [run["method"], run["benchmark"], run["base_model"]],
        )

    warehouse.run_in_transaction(write)

def _analysis_rows(rid: str, parsed: ParsedTrace, calls: list[facets.Call], run_dir: Path, redactor: Redactor,
                   counts: _Counts) -> dict:
    """The run's facets, phases and monitor samples as rows for ``store_run`` (``traces.facets``, ``.monitor``);
    ``calls``: ``facets.tool_calls(parsed.steps)``, shared with the evidence marks.

    Monitor times are put on the trace's axis (seconds since its first timed step); without trace times, since
    the first sample. ``system_monitor.log`` is read from the run dir, else from ``task/``.
    """
    facet_rows = [(rid, f.facet, f.value, f.value_num, ",".join(map(str, f.steps))) for f in facets.extract(parsed.steps, calls=calls)]
    phase_rows = [(rid, p.phase, p.start_s, p.end_s, p.step_from, p.step_to)
                  for p in facets.phases(parsed.steps, calls=calls)]
    path = next((p for p in (run_dir / "system_monitor.log", run_dir / "task" / "system_monitor.log") if p.is_file()),
                None)
    samples = parse_monitor(_read(path, redactor, counts) or "") if path else []
    origin = next((s.time for s in parsed.steps if s.time is not None), None) or (samples[0].time if samples else None)
    monitor_rows = [(rid, _naive(s.time), (s.time - origin).total_seconds(), s.gpu_util, s.gpu_mem_mib,
                     s.gpu_mem_total_mib) for s in samples]
    return {"facets": facet_rows, "phases": phase_rows, "monitor": monitor_rows}


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


def _refresh_agent(method_row: tuple) -> None:
    """Give a stored method the agent the suite maps it to now (key, name, effort): unchanged runs are skipped on
    re-ingest, but an edited suite file must still regroup them."""
    method, key, name, effort = method_row[0], method_row[8], method_row[9], method_row[10]

    def write(con) -> None:
        con.execute("UPDATE methods SET agent_key = ?, agent_name = ?, reasoning_effort = ? WHERE id = ? AND "
                    "(agent_key <> ? OR agent_name <> ? OR reasoning_effort IS DISTINCT FROM ?)",
                    [key, name, effort, method, key, name, effort])

    warehouse.run_in_transaction(write)


@warehouse.retrying
def _stored_hashes(method: str) -> dict[str, str]:
    with warehouse.connect() as con:
        return dict(con.execute("SELECT run_dir, content_hash FROM runs WHERE method = ?", [method]).fetchall())


def ingest_tree(
    *,
    root: Path,
    suite_id: str = "posttrainbench",
    synthetic: bool | None = None,
    redactor: Redactor | None = None,
    progress: Callable[[str], None] | None = None,
) -> IngestReport:
    """Ingest every method and run under ``root`` (spec section 1); return what happened.

    Method dirs are ``<agent>_<config>_<hours>h...`` (directories starting with ``_`` are skipped);
    ``baseline*/`` dirs hold baseline evaluations. A run whose files did not change since the last ingest
    (same content hash) is skipped, so re-ingesting a tree adds nothing. A run that fails to parse or store is
    reported with its directory and the ingest goes on with the next one.

    Args:
        synthetic: label the runs as synthetic (generated demo data); default: whether ``root/SYNTHETIC`` exists.
        redactor: secret redaction; default: ``Redactor.from_environ(os.environ)`` (the usual key variables).
    """
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: not a directory")
    report = IngestReport(root=str(root))
    ingester = Ingester(
        suite_id=suite_id,
        redactor=redactor or Redactor.from_environ(os.environ),
        synthetic=(root / SYNTHETIC_MARKER).exists() if synthetic is None else synthetic,
    )
    # One open warehouse for the whole tree: a plain file is not reopened and checkpointed for every run.
    with warehouse.hold_open():
        for method_dir in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))):
            baseline = layout.is_baseline_dir(method_dir.name)
            if baseline:
                method = layout.MethodName(method_dir.name, "baseline", "", 0.0, 1, "", "none", None)
                method_row = (method.raw, suite_id, "baseline", "", 0.0, 1, "", "none", "baseline",
                              "Baseline evaluations", None, ingester.synthetic, str(root),
                              datetime.now(timezone.utc).replace(tzinfo=None))
            else:
                try:
                    method = layout.parse_method_name(method_dir.name)
                except layout.LayoutError as exc:
                    report.problems.append(f"{method_dir}: {exc}")
                    continue
                method_row = ingester.method_row(method, root)
            known = _stored_hashes(method.raw)
            if known:
                _refresh_agent(method_row)
            for run_dir in sorted(p for p in method_dir.iterdir() if p.is_dir()):
                try:
                    if known.get(run_dir.name) == _content_hash(run_dir):
                        report.unchanged += 1
                        continue
                    rows = ingester.parse_run(method, run_dir, baseline=baseline)
                    store_run(rows, method_row=method_row)
                except (layout.LayoutError, RunIngestError) as exc:
                    report.failed += 1
                    report.problems.append(str(exc) if str(run_dir) in str(exc) else f"{run_dir}: {exc}")
                    continue
                except Exception as exc:  # noqa: BLE001 - one broken run must not stop the tree
                    report.failed += 1
                    report.problems.append(f"{run_dir}: not stored: {type(exc).__name__}: {exc}")
                    log.exception("ingest of %s failed", run_dir)
                    continue
                report.stored += 1
                report.steps += len(rows["steps"])
                report.bytes_read += rows["run"]["trace_bytes"]
                report.problems += rows["problems"]
                if progress:
                    progress(f"{method_dir.name}/{run_dir.name}: {rows['run']['state']}, {rows['run']['step_count']} steps")
    return report


class UnknownRun(LookupError):
    """No run with this id is stored."""


def _require_run(con, run_id: str) -> None:
    if con.execute("SELECT count(*) FROM runs WHERE id = ?", [run_id]).fetchone()[0] == 0:
        raise UnknownRun(f"no run {run_id}")


def add_evaluation(*, run_id: str, accuracy: float, metrics: dict, provenance: dict, evaluation_id: str,
                   partial: bool = False) -> None:
    """Store a rerun's score as a new evaluation of the run (origin ``rerun``); earlier evaluations are kept.

    ``accuracy`` is a fraction 0..1; the newest evaluation is the run's score (traces.selectors). Storing the
    same ``evaluation_id`` again replaces that row (a worker's repeated report adds nothing). ``partial``: the
    rerun scored a sample of the test set (a ``limit``), so it is stored with origin ``rerun-partial`` and shown
    but never becomes the run's score (final scores use the full test set, spec 4.1).

    Raises:
        UnknownRun: no such run. ValueError: accuracy outside 0..1.
    """
    if not 0.0 <= accuracy <= 1.0:
        raise ValueError(f"accuracy {accuracy} is not a fraction 0..1")
    now = datetime.now(timezone.utc).replace(tzinfo=None)

    def write(con) -> None:
        _require_run(con, run_id)
        con.execute("DELETE FROM evaluations WHERE id = ?", [evaluation_id])
        con.execute("INSERT INTO evaluations VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [evaluation_id, run_id, "rerun-partial" if partial else "rerun", float(accuracy),
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
