"""Reads of the traces app: runs, their steps, verdicts and evaluations. The other apps read runs here.

Step pages use keyset pagination on (run, trace, idx): ``after`` is the last index seen, so a page of a
20,000-step trace costs what a page of a 200-step one does.
"""
from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ptbsite import warehouse

from .layout import BASELINE_FALLBACK_DIR, BASELINE_PREFIX, is_baseline_dir
from .facets import METHOD_FACETS, MEASURED_FACETS, PHASES, Phase, call_phase, overoptimism, time_split
from .services import TEXT_CHUNK  # the writer of step_texts owns its chunk size
from .steps import Step
from .verdicts import SCORED_KINDS, Verdict, effective_flags

FACET_ORDER = METHOD_FACETS + MEASURED_FACETS

STATE_TEXT = {
    "scored": "scored", "no_final_model": "no final model", "eval_failed": "evaluation failed",
    "never_finished": "never finished", "timed_out": "timed out", "cuda_failure": "CUDA failure",
    "api_limit": "API limit",
}
# SQL condition on runs ``r``: an agent's run, not a baseline evaluation (any ``baseline*`` directory, spec 1.4).
AGENT_RUN = f"NOT starts_with(r.method, '{BASELINE_PREFIX}')"
RUN_COLUMNS = ("id, method, run_dir, suite, benchmark, base_model, base_model_hf, cluster_id, is_latest, state, "
               "state_detail, time_taken_s, budget_hours, accuracy, has_final_model, eval_attempts, trace_file, "
               "trace_format, trace_bytes, step_count, started_at, ended_at, tokens_in, tokens_out, cost_usd, "
               "trace_model, synthetic")


@dataclass
class RunSummary:
    """One run as listed. ``score`` is percent (newest successful evaluation), None when not scored."""

    id: str
    method: str
    run_dir: str
    suite: str
    benchmark: str
    base_model: str
    base_model_hf: str
    cluster_id: int
    is_latest: bool
    state: str
    state_detail: str
    time_taken_s: int | None
    budget_hours: float
    accuracy: float | None
    has_final_model: bool
    eval_attempts: int
    trace_file: str | None
    trace_format: str | None
    trace_bytes: int
    step_count: int
    started_at: datetime | None
    ended_at: datetime | None
    tokens_in: int | None
    tokens_out: int | None
    cost_usd: float | None
    trace_model: str | None
    synthetic: bool
    agent: str = ""
    agent_key: str = ""
    scaffold: str = ""
    score: float | None = None
    verdicts: list[Verdict] = field(default_factory=list)
    overrides: dict[str, bool] = field(default_factory=dict)
    flags: dict[str, str | None] = field(default_factory=dict)

    @property
    def state_text(self) -> str:
        return STATE_TEXT.get(self.state, self.state)

    @property
    def flagged(self) -> bool:
        """A judge (after overrides) flagged contamination or a disallowed model."""
        return any(v == "flagged" for v in self.flags.values())

    @property
    def judge_error(self) -> bool:
        """A scored verdict is missing or malformed (the run falls back to its base model too)."""
        return any(v == "judge_error" for v in self.flags.values())

    @property
    def budget_fraction(self) -> float | None:
        """Agent time as a fraction of the budget (0..1+), None without time_taken.txt."""
        if self.time_taken_s is None or not self.budget_hours:
            return None
        return self.time_taken_s / (self.budget_hours * 3600)


@dataclass
class StepRow:
    """One stored step; ``elapsed_s``/``remaining_s`` in seconds (remaining from the run's budget).

    ``input``/``output`` hold what the page shows (cut, see :func:`steps_page`); ``input_bytes``/``output_bytes``
    are the UTF-8 sizes of the whole texts, so ``*_not_shown`` bytes are left out (:func:`step_text` serves
    them). ``label`` names a typed event (``rate limit``, ``compaction summary``); ``call_id`` pairs a tool call
    with its result."""

    index: int
    time: datetime | None
    elapsed_s: float | None
    remaining_s: float | None
    kind: str
    tool: str | None
    input: str | None
    output: str
    is_error: bool
    tokens_in: int | None
    tokens_out: int | None
    line: int | None
    suspicious: list[str]
    call_id: str | None = None
    label: str | None = None
    input_bytes: int | None = None
    output_bytes: int | None = None

    @property
    def input_not_shown(self) -> int:
        """Bytes (UTF-8) of the whole input that ``input`` leaves out."""
        return _not_shown(self.input, self.input_bytes)

    @property
    def output_not_shown(self) -> int:
        """Bytes (UTF-8) of the whole output that ``output`` leaves out."""
        return _not_shown(self.output, self.output_bytes)


def _not_shown(shown: str | None, total: int | None) -> int:
    if shown is None or total is None:
        return 0
    return max(0, total - len(shown.encode("utf-8", "surrogatepass")))


# One page of steps shows at most this many characters of step text in all (inputs and outputs together): each
# field gets PAGE_TEXT_CHARS / (2 * steps per page), at least MIN_FIELD_CHARS, so a page of 50 steps shows up to
# 10,000 characters of each input and output, one of 500 steps 1,000. With the page's fixed markup that bounds a
# page in bytes whatever the trace holds (tests/test_trace_integrity.py measures it).
PAGE_TEXT_CHARS = 1_000_000
MIN_FIELD_CHARS = 1_000


def field_chars(limit: int) -> int:
    """Characters of each step input and output a page of ``limit`` steps shows (see PAGE_TEXT_CHARS)."""
    return max(MIN_FIELD_CHARS, PAGE_TEXT_CHARS // (2 * max(1, limit)))


@dataclass
class StepPage:
    steps: list[StepRow]
    next: int | None  # the ``after`` cursor of the next page, None on the last page
    total: int        # steps matching the filters


def _summaries(con, where: str, params: list, limit: int | None = None) -> list[RunSummary]:
    sql = (f"SELECT {', '.join('r.' + c.strip() for c in RUN_COLUMNS.split(','))}, m.agent_name, m.agent_key, m.scaffold, "
           "(SELECT e.accuracy FROM evaluations e WHERE e.run_id = r.id AND e.origin <> 'rerun-partial' "
           "ORDER BY e.created_at DESC LIMIT 1) "
           f"FROM runs r JOIN methods m ON m.id = r.method WHERE {where} ORDER BY r.id"
           + (f" LIMIT {int(limit)}" if limit else ""))
    runs = []
    for row in con.execute(sql, params).fetchall():
        run = RunSummary(*row[:27])
        run.agent, run.agent_key, run.scaffold = row[27], row[28], row[29]
        run.score = None if row[30] is None else 100 * row[30]
        runs.append(run)
    _attach_verdicts(con, runs)
    return runs


def _attach_verdicts(con, runs: list[RunSummary]) -> None:
    if not runs:
        return
    ids = [r.id for r in runs]
    marks = ", ".join("?" * len(ids))
    by_run: dict[str, list[Verdict]] = {i: [] for i in ids}
    for row in con.execute(
        f"SELECT run_id, judge, attempt, era, kind, value, flagged, text, note, source_file FROM verdicts "
        f"WHERE run_id IN ({marks}) ORDER BY run_id, era, judge, attempt, kind", ids
    ).fetchall():
        by_run[row[0]].append(Verdict(*row[1:]))
    overrides: dict[str, dict[str, bool]] = {i: {} for i in ids}
    for run_id, kind, flagged in con.execute(
        f"SELECT run_id, kind, flagged FROM verdict_overrides WHERE run_id IN ({marks}) ORDER BY created_at", ids
    ).fetchall():
        overrides[run_id][kind] = flagged  # the latest override of a kind wins
    for run in runs:
        run.verdicts = by_run[run.id]
        run.overrides = overrides[run.id]
        run.flags = effective_flags(run.verdicts, run.overrides) if not is_baseline_dir(run.method) else {}


@warehouse.retrying
def list_runs(
    *, agent: str | None = None, benchmark: str | None = None, base_model: str | None = None,
    flagged: bool | None = None, state: str | None = None, latest_only: bool = False,
    after: str | None = None, limit: int | None = 50, facet: str | None = None, suite: str | None = None,
) -> tuple[list[RunSummary], str | None]:
    """Runs matching the filters, ordered by id, one page at a time.

    Args:
        agent: a leaderboard agent key (``methods.agent_key``) or a method name.
        flagged: True for runs a judge flagged (after overrides), False for the others.
        after: the last run id of the previous page (keyset cursor).
        facet: a facet spec (``grpo``, ``library:trl``; :func:`facet_clause`): only runs with that facet.
        suite: only runs of that suite.
        limit: runs per page; None for every matching run in one page (the static export's runs list).

    Returns:
        (runs, next cursor or None).
    """
    where, params = [AGENT_RUN], []
    if agent:
        where.append("(m.agent_key = ? OR m.id = ?)")
        params += [agent, agent]
    if benchmark:
        where.append("r.benchmark = ?")
        params.append(benchmark)
    if base_model:
        where.append("r.base_model = ?")
        params.append(base_model)
    if state:
        where.append("r.state = ?")
        params.append(state)
    if latest_only:
        where.append("r.is_latest")
    if facet:
        clause, values = facet_clause(facet)
        where.append(clause)
        params += values
    if suite:
        where.append("r.suite = ?")
        params.append(suite)
    if after:
        where.append("r.id > ?")
        params.append(after)
    with warehouse.connect() as con:
        if limit is None:
            runs, more = [r for r in _summaries(con, " AND ".join(where), params)
                          if flagged is None or r.flagged == flagged], False
        elif flagged is None:
            runs = _summaries(con, " AND ".join(where), params, limit + 1)
            more = len(runs) > limit
            runs = runs[:limit]
        else:
            # The flag depends on verdicts and overrides: filter after attaching them, page by page.
            runs, more = [], False
            for candidate in _summaries(con, " AND ".join(where), params):
                if candidate.flagged == flagged:
                    if len(runs) == limit:
                        more = True
                        break
                    runs.append(candidate)
    return runs, (runs[-1].id if more and runs else None)


@warehouse.retrying
def get_run(run_id: str) -> RunSummary | None:
    """One run with its verdicts, overrides and effective flags, or None."""
    with warehouse.connect() as con:
        found = _summaries(con, "r.id = ?", [run_id])
    return found[0] if found else None


@warehouse.retrying
def run_texts(run_id: str) -> dict:
    """The run's long texts and what ingest did to its files: ``prompt`` (cut to TEXT_SHOWN characters;
    ``prompt_not_shown``: characters left out), ``metrics`` (dict, None when absent or too long to show),
    ``problems`` (at most PROBLEMS_SHOWN; ``problem_count``: all of them), ``redaction_warnings`` (list),
    ``secrets_redacted`` and ``chars_replaced`` (counts, None for runs stored before they were counted),
    ``trace_incomplete`` (why the agent trace is incomplete, else None) and ``unknown_events`` ({type: count})."""
    with warehouse.connect() as con:
        row = con.execute(
            "SELECT left(prompt, ?), length(prompt), CASE WHEN length(metrics_json) <= ? THEN metrics_json END, "
            "problems, redaction_warnings, secrets_redacted, chars_replaced, trace_incomplete, unknown_events "
            "FROM runs WHERE id = ?", [TEXT_SHOWN, TEXT_SHOWN, run_id]
        ).fetchone()
    if row is None:
        return {}
    problems = json.loads(row[3])
    return {"prompt": row[0], "prompt_not_shown": (row[1] or 0) - len(row[0] or ""),
            "metrics": json.loads(row[2]) if row[2] else None, "problems": problems[:PROBLEMS_SHOWN],
            "problem_count": len(problems), "redaction_warnings": json.loads(row[4])[:PROBLEMS_SHOWN],
            "secrets_redacted": row[5], "chars_replaced": row[6], "trace_incomplete": row[7],
            "unknown_events": json.loads(row[8]) if row[8] else {}}


TEXT_SHOWN = 100_000  # characters of a run's prompt (and of its metrics.json) a run page and its API twin show
PROBLEMS_SHOWN = 500  # ingest problems listed on a run page and in its API twin (the count says how many)


def _step_filter(run_id: str, trace: str, kind: str | None, tool: str | None, q: str | None) -> tuple[str, list]:
    where, params = ["run_id = ?", "trace = ?"], [run_id, trace]
    if kind:
        where.append("kind = ?")
        params.append(kind)
    if tool:
        where.append("tool = ?")
        params.append(tool)
    if q:
        where.append("(contains(lower(output), ?) OR contains(lower(coalesce(input, '')), ?))")
        params += [q.lower(), q.lower()]
    return " AND ".join(where), params


@warehouse.retrying
def steps_page(
    run_id: str, *, trace: str = "agent", after: int = -1, limit: int = 50, kind: str | None = None,
    tool: str | None = None, q: str | None = None, budget_hours: float | None = None,
) -> StepPage:
    """One page of a trace's steps with index > ``after``, filtered by kind, tool and a case-insensitive text
    search ``q`` over input and output (server-side). Each input and output is cut to :func:`field_chars`
    characters for ``limit`` steps (``*_not_shown`` says how many bytes are left out), so a page is bounded in
    size whatever the trace holds."""
    where, params = _step_filter(run_id, trace, kind, tool, q)
    budget_s = budget_hours * 3600 if budget_hours else None
    chars = field_chars(limit)
    with warehouse.connect() as con:
        rows = con.execute(
            "SELECT idx, time, elapsed_s, kind, tool, left(input, ?), left(output, ?), is_error, tokens_in, "
            "tokens_out, line, suspicious, call_id, label, coalesce(input_bytes, strlen(input)), "
            "coalesce(output_bytes, strlen(output)) "
            f"FROM steps WHERE {where} AND idx > ? ORDER BY idx LIMIT ?", [chars, chars, *params, after, limit + 1]
        ).fetchall()
        total = con.execute(f"SELECT count(*) FROM steps WHERE {where}", params).fetchone()[0]
    steps = [
        StepRow(r[0], r[1], r[2], (budget_s - r[2]) if (budget_s and r[2] is not None) else None, r[3], r[4], r[5],
                r[6], r[7], r[8], r[9], r[10], r[11].split(",") if r[11] else [], r[12], r[13], r[14], r[15])
        for r in rows[:limit]
    ]
    return StepPage(steps, steps[-1].index if len(rows) > limit else None, total)


MAX_TEXT_RANGE = 1024 * 1024  # bytes of a step's whole text one request serves at most


@dataclass
class TextRange:
    """Bytes ``[offset, end)`` of a step field's whole text (UTF-8), decoded as ``text``; ``total_bytes`` is the
    whole text's size; ``next_offset`` the offset of the next range, None at the end."""

    offset: int
    end: int
    total_bytes: int
    text: str

    @property
    def next_offset(self) -> int | None:
        return self.end if self.end < self.total_bytes else None


@warehouse.retrying
def step_text(run_id: str, *, trace: str, index: int, field: str, offset: int = 0,
              length: int = MAX_TEXT_RANGE) -> TextRange | None:
    """A range of the WHOLE text of one step's ``field`` (``input`` | ``output``), also when ingest stored it
    cut (``traces.services.STEP_TEXT_CAP``): bytes from ``offset`` (UTF-8; moved forward to a character start),
    at most ``length`` (capped at MAX_TEXT_RANGE; the end moved back to a character start). Reads only the
    compressed chunks of ``step_texts`` that hold the range. None for an unknown step; an absent input is "".

    Raises:
        ValueError: ``field`` is neither ``input`` nor ``output``.
    """
    if field not in ("input", "output"):
        raise ValueError("field must be input or output")
    offset, length = max(0, offset), max(0, min(length, MAX_TEXT_RANGE))
    with warehouse.connect() as con:
        row = con.execute(
            f"SELECT {field}, coalesce({field}_bytes, strlen({field})) FROM steps WHERE run_id = ? AND trace = ? "
            "AND idx = ?", [run_id, trace, index]).fetchone()
        if row is None:
            return None
        stored = (row[0] or "").encode("utf-8", "surrogatepass")
        total = row[1] or 0
        base, data = 0, stored
        if total > len(stored) and offset < total:
            first, last = offset // TEXT_CHUNK, min(offset + length + 4, total - 1) // TEXT_CHUNK
            chunks = con.execute(
                "SELECT chunk, data FROM step_texts WHERE run_id = ? AND trace = ? AND idx = ? AND field = ? "
                "AND chunk BETWEEN ? AND ? ORDER BY chunk", [run_id, trace, index, field, first, last]).fetchall()
            if len(chunks) == last - first + 1:
                base, data = first * TEXT_CHUNK, b"".join(zlib.decompress(c[1]) for c in chunks)
            else:  # the whole text is not stored (cannot happen for rows ingested since issue 13): what there is
                total = len(stored)
    start = min(offset, total)
    while start < total and start - base < len(data) and 0x80 <= data[start - base] < 0xC0:
        start += 1  # a continuation byte: the character began before the range
    end = min(start + length, total)
    while start < end < total and end - base < len(data) and 0x80 <= data[end - base] < 0xC0:
        end -= 1  # do not cut the last character
    return TextRange(start, end, total, data[start - base:end - base].decode("utf-8", "replace"))


@warehouse.retrying
def previous_cursor(
    run_id: str, *, after: int, limit: int, trace: str = "agent", kind: str | None = None, tool: str | None = None,
    q: str | None = None,
) -> int | None:
    """The ``after`` cursor of the page of ``limit`` steps before the page that starts after ``after`` (-1 when
    that is the first page), None when the page after ``after`` is itself the first. Same filters as steps_page."""
    if after < 0:
        return None
    where, params = _step_filter(run_id, trace, kind, tool, q)
    with warehouse.connect() as con:
        row = con.execute(f"SELECT idx FROM steps WHERE {where} AND idx <= ? ORDER BY idx DESC LIMIT 1 OFFSET ?",
                          [*params, after, limit]).fetchone()
    return row[0] if row else -1


@dataclass
class IndexedStep:
    """One step as the static export's in-browser search sees it: ``text`` is the lowercased input and output,
    cut to the selector's ``chars``; ``elapsed_s`` in seconds or None."""

    index: int
    kind: str
    tool: str | None
    elapsed_s: float | None
    text: str


@warehouse.retrying
def step_index(run_id: str, *, trace: str = "agent", chars: int = 400) -> list[IndexedStep]:
    """Every step of a trace in order, with at most ``chars`` characters of lowercased text (input, then output)."""
    with warehouse.connect() as con:
        rows = con.execute(
            "SELECT idx, kind, tool, elapsed_s, lower(left(concat_ws(' ', input, output), ?)) FROM steps "
            "WHERE run_id = ? AND trace = ? ORDER BY idx", [chars, run_id, trace]).fetchall()
    return [IndexedStep(*row) for row in rows]


@warehouse.retrying
def run_fingerprints() -> dict[str, str]:
    """{run id: md5 hex} for every non-baseline run, over what its pages show beyond the trace itself: the run's
    content hash (its files, hence its steps), latest flag and state, its method's names, its evaluations, verdicts
    and overrides. A run whose fingerprint did not change renders to the same bytes."""
    with warehouse.connect() as con:
        return dict(con.execute(f"""
            SELECT r.id, md5(concat_ws('|', r.content_hash, r.is_latest, r.state, r.state_detail, r.accuracy,
                m.agent_name, m.agent_key, m.scaffold,
                (SELECT string_agg(concat_ws(',', e.id, e.origin, e.accuracy, e.provenance_json, e.created_at), ';'
                        ORDER BY e.created_at, e.id) FROM evaluations e WHERE e.run_id = r.id),
                (SELECT string_agg(concat_ws(',', v.judge, v.attempt, v.era, v.kind, v.value, v.flagged, v.text,
                        v.note, v.source_file), ';' ORDER BY v.era, v.judge, v.attempt, v.kind)
                   FROM verdicts v WHERE v.run_id = r.id),
                (SELECT string_agg(concat_ws(',', o.kind, o.flagged, o.created_at), ';' ORDER BY o.created_at, o.kind)
                   FROM verdict_overrides o WHERE o.run_id = r.id)))
            FROM runs r JOIN methods m ON m.id = r.method WHERE {AGENT_RUN} ORDER BY r.id
        """).fetchall())


@warehouse.retrying
def step_at_time(run_id: str, seconds: float, *, trace: str = "agent") -> int | None:
    """The index of the first step at or after ``seconds`` of elapsed time, else the last step's."""
    with warehouse.connect() as con:
        row = con.execute(
            "SELECT min(idx) FROM steps WHERE run_id = ? AND trace = ? AND elapsed_s >= ?", [run_id, trace, seconds]
        ).fetchone()
        if row[0] is None:
            row = con.execute("SELECT max(idx) FROM steps WHERE run_id = ? AND trace = ?", [run_id, trace]).fetchone()
    return row[0]


@warehouse.retrying
def trace_names(run_id: str) -> list[str]:
    """The traces stored for a run: ``agent`` first, then judges (``judge:codex``, ``judge:gpt5_4``, ...)."""
    with warehouse.connect() as con:
        names = [r[0] for r in con.execute(
            "SELECT DISTINCT trace FROM steps WHERE run_id = ? ORDER BY trace", [run_id]).fetchall()]
    return sorted(names, key=lambda n: (n != "agent", n))


@warehouse.retrying
def tools_used(run_id: str, trace: str = "agent") -> list[str]:
    """Distinct tool names of a trace, for the tool filter."""
    with warehouse.connect() as con:
        return [r[0] for r in con.execute(
            "SELECT DISTINCT tool FROM steps WHERE run_id = ? AND trace = ? AND tool IS NOT NULL ORDER BY tool",
            [run_id, trace]).fetchall()]


EVIDENCE_CHARS = 1000
EVIDENCE_LIMIT = 200  # evidence steps listed on a run page and in its API twin (evidence_count says how many)


@warehouse.retrying
def evidence_steps(run_id: str, limit: int = EVIDENCE_LIMIT) -> list[StepRow]:
    """The first ``limit`` agent-trace steps an evidence rule marked suspicious, in order, with ``input`` cut to
    EVIDENCE_CHARS characters and no ``output`` (the list names and links the step; the step itself is on its
    page)."""
    with warehouse.connect() as con:
        rows = con.execute(
            f"SELECT idx, time, elapsed_s, kind, tool, left(input, {EVIDENCE_CHARS}), '', is_error, tokens_in, "
            "tokens_out, line, suspicious "
            "FROM steps WHERE run_id = ? AND trace = 'agent' AND suspicious IS NOT NULL ORDER BY idx LIMIT ?",
            [run_id, limit]).fetchall()
    return [StepRow(r[0], r[1], r[2], None, r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11].split(",")) for r in rows]


@warehouse.retrying
def evidence_count(run_id: str) -> int:
    """How many agent-trace steps an evidence rule marked suspicious."""
    with warehouse.connect() as con:
        return con.execute("SELECT count(*) FROM steps WHERE run_id = ? AND trace = 'agent' AND suspicious IS NOT NULL",
                           [run_id]).fetchone()[0]


@warehouse.retrying
def filter_options() -> dict[str, list[tuple[str, str]]]:
    """The values the runs list can be filtered by, as (value, label) pairs: ``agents`` (key, display name),
    ``benchmarks`` and ``base_models`` of the ingested (non-baseline) runs, sorted by label."""
    with warehouse.connect() as con:
        agents = con.execute("SELECT DISTINCT m.agent_key, m.agent_name FROM runs r JOIN methods m ON m.id = r.method "
                             f"WHERE {AGENT_RUN} ORDER BY m.agent_name, m.agent_key").fetchall()
        benchmarks = con.execute(f"SELECT DISTINCT r.benchmark FROM runs r WHERE {AGENT_RUN} "
                                 "ORDER BY r.benchmark").fetchall()
        models = con.execute(f"SELECT DISTINCT r.base_model FROM runs r WHERE {AGENT_RUN} "
                             "ORDER BY r.base_model").fetchall()
    return {"agents": [(k, n) for k, n in agents], "benchmarks": [(b, b) for (b,) in benchmarks],
            "base_models": [(m, m) for (m,) in models]}


PARTIAL_ORIGIN = "rerun-partial"  # a rerun on a sample of the test set (``--limit``): shown, never the score


@warehouse.retrying
def evaluations(run_id: str) -> list[dict]:
    """Every evaluation of the run, newest first: {id, origin, accuracy (fraction), metrics, provenance, created_at,
    counts}; ``counts`` marks the one that is the run's score (the newest that is not a partial rerun)."""
    with warehouse.connect() as con:
        rows = con.execute(
            "SELECT id, origin, accuracy, metrics_json, provenance_json, created_at FROM evaluations "
            "WHERE run_id = ? ORDER BY created_at DESC", [run_id]).fetchall()
    found = [{"id": r[0], "origin": r[1], "accuracy": r[2], "metrics": json.loads(r[3]),
              "provenance": json.loads(r[4]), "created_at": r[5], "counts": False} for r in rows]
    counting = next((e for e in found if e["origin"] != PARTIAL_ORIGIN), None)
    if counting is not None:
        counting["counts"] = True
    return found


@warehouse.retrying
def run_directory(run_id: str) -> Path | None:
    """The run's directory in its results tree, ``<methods.results_root>/<runs.method>/<runs.run_dir>``, or None
    for an unknown run. The path is where ingest found the run; it may since have moved (not checked here)."""
    with warehouse.connect() as con:
        row = con.execute(
            "SELECT m.results_root, r.method, r.run_dir FROM runs r JOIN methods m ON m.id = r.method WHERE r.id = ?",
            [run_id]).fetchone()
    return Path(row[0]) / row[1] / row[2] if row else None


def checkpoint_path(run_id: str) -> Path | None:
    """Where the run's checkpoint is: ``<run directory>/final_model`` (spec 1.2), or None for an unknown run.

    The directory may not exist (the agent left none, or the tree moved); the evaluation reports that.
    """
    run_dir = run_directory(run_id)
    return run_dir / "final_model" if run_dir else None


@warehouse.retrying
def override_log(run_id: str) -> list[dict]:
    """The run's reviewer overrides, oldest first (the audit log): {kind, previous (flagged | clean | judge_error,
    None on rows older than the column), flagged (the new verdict), reason, reviewer, created_at (naive UTC)}."""
    with warehouse.connect() as con:
        rows = con.execute(
            "SELECT kind, previous, flagged, reason, reviewer, created_at FROM verdict_overrides WHERE run_id = ? "
            "ORDER BY created_at", [run_id]).fetchall()
    return [{"kind": r[0], "previous": r[1], "flagged": r[2], "new": "flagged" if r[2] else "clean", "reason": r[3],
             "reviewer": r[4], "created_at": r[5]} for r in rows]


@warehouse.retrying
def override_agreement() -> dict[str, dict[str, int]]:
    """Judge vs reviewer, per scored kind, over every override in the audit log: ``{kind: {"agreed": n,
    "disagreed": n, "judge_error": n}}``. The judge's verdict is the run's effective flag without overrides;
    an override agrees when it says the same (flagged or clean); ``judge_error`` counts overrides of runs whose
    judge gave no usable verdict."""
    counts = {kind: {"agreed": 0, "disagreed": 0, "judge_error": 0} for kind in SCORED_KINDS}
    with warehouse.connect() as con:
        overrides = con.execute("SELECT run_id, kind, flagged FROM verdict_overrides").fetchall()
        if not overrides:
            return counts
        ids = sorted({r[0] for r in overrides})
        verdicts: dict[str, list[Verdict]] = {i: [] for i in ids}
        for row in con.execute(
            f"SELECT run_id, judge, attempt, era, kind, value, flagged, text, note, source_file FROM verdicts "
            f"WHERE run_id IN ({', '.join('?' * len(ids))})", ids
        ).fetchall():
            verdicts[row[0]].append(Verdict(*row[1:]))
    judged = {run_id: effective_flags(found) for run_id, found in verdicts.items()}
    for run_id, kind, flagged in overrides:
        if kind not in counts:
            continue
        judge = judged[run_id][kind]
        if judge == "judge_error":
            counts[kind]["judge_error"] += 1
        else:
            counts[kind]["agreed" if (judge == "flagged") == flagged else "disagreed"] += 1
    return counts


@warehouse.retrying
def reference_scores(suite: str, base_model: str, benchmark: str) -> dict[str, float | None]:
    """Percent scores {"base", "instruct"} of the base model (zero-shot) and its official instruct model on one
    benchmark, from the suite's published baselines (the leaderboard's ``reported_cells``), None where absent."""
    with warehouse.connect() as con:
        rows = dict(con.execute(
            "SELECT agent, value FROM reported_cells WHERE suite = ? AND base_model = ? AND benchmark = ? "
            "AND agent IN ('base-zeroshot', 'instruct')", [suite, base_model, benchmark]).fetchall())
    return {"base": 100 * rows["base-zeroshot"] if "base-zeroshot" in rows else None,
            "instruct": 100 * rows["instruct"] if "instruct" in rows else None}


__all__ = ["SCORED_KINDS", "list_runs", "get_run", "steps_page", "previous_cursor", "step_index", "run_fingerprints",
           "step_at_time", "evidence_steps", "evidence_count", "step_text", "field_chars", "evaluations", "reference_scores", "trace_names", "tools_used", "run_texts",
           "run_directory", "checkpoint_path", "override_log", "override_agreement", "latest_cells", "latest_usage",
           "tree_baselines"]


@dataclass
class CellRun:
    """The latest run of one (method, benchmark, base model) cell, as the leaderboard needs it.

    ``accuracy``: the newest evaluation's score (fraction, also when flagged), None when not scored; ``flags`` maps scored verdict kinds to ``flagged``/``judge_error``/None after
    overrides; ``overridden`` says a reviewer changed a verdict.
    """

    run_id: str
    method: str
    agent_key: str
    agent_name: str
    scaffold: str
    reasoning_effort: str | None
    benchmark: str
    base_model: str
    state: str
    accuracy: float | None
    time_taken_s: int | None
    synthetic: bool
    flags: dict[str, str | None]
    overridden: bool
    results_root: str = ""


@warehouse.retrying
def latest_cells(suite: str) -> list[CellRun]:
    """Every method's latest run per (benchmark, base model) in a suite, with score and effective flags.

    "Latest" = the highest cluster id, compared as a number (``is_latest``, set at ingest), as qol_multigpu's
    ``walk_latest_runs`` does for both the score and the verdicts; main's ``aggregate_contamination.py`` compares
    the ids as strings and can take the verdict of another attempt than the score. Baseline evaluations
    (``baseline*`` dirs) are excluded. Ordered by method, benchmark, base model.
    """
    with warehouse.connect() as con:
        runs = _summaries(con, f"r.suite = ? AND r.is_latest AND {AGENT_RUN}", [suite])
        methods = {row[0]: row[1:] for row in con.execute(
            "SELECT id, reasoning_effort, results_root FROM methods WHERE suite = ?", [suite]).fetchall()}
    cells = []
    for run in sorted(runs, key=lambda r: (r.method, r.benchmark, r.base_model)):
        effort, root = methods.get(run.method, (None, ""))
        cells.append(CellRun(
            run_id=run.id, method=run.method, agent_key=run.agent_key,
            agent_name=run.agent, scaffold=run.scaffold, reasoning_effort=effort,
            benchmark=run.benchmark, base_model=run.base_model, state=run.state,
            accuracy=None if run.score is None else run.score / 100, time_taken_s=run.time_taken_s,
            synthetic=run.synthetic, flags=run.flags, overridden=bool(run.overrides), results_root=root,
        ))
    return cells


@dataclass(frozen=True)
class TreeBaseline:
    """The zero-shot baseline a results tree carries in its ``baseline_zeroshot/`` directory (spec 1.4).

    ``scores``: (base model id, benchmark) -> the latest run's score (fraction), None where that run has none;
    ``run_ids``: the same cells' run ids.
    """

    results_root: str
    scores: dict[tuple[str, str], float | None]
    run_ids: dict[tuple[str, str], str]


@warehouse.retrying
def tree_baselines(suite: str) -> dict[str, TreeBaseline]:
    """Per results root, the base models' zero-shot scores from its ``baseline_zeroshot/`` runs.

    The latest run (highest cluster id) of each (base model, benchmark) counts, with its newest evaluation's
    score; the official instruct models' runs are left out (they are no fallback). Only the directory named
    ``baseline_zeroshot`` counts: upstream's ``aggregate_final.py`` reads ``aggregated_baseline_zeroshot.csv``,
    which ``aggregate_methods.py`` makes from it; ``baseline/`` and other ``baseline*`` dirs supply nothing.
    """
    with warehouse.connect() as con:
        rows = con.execute(
            "SELECT m.results_root, r.base_model, r.benchmark, r.id, (SELECT e.accuracy FROM evaluations e "
            "WHERE e.run_id = r.id AND e.origin <> 'rerun-partial' ORDER BY e.created_at DESC LIMIT 1) "
            "FROM runs r JOIN methods m ON m.id = r.method JOIN base_models b ON b.suite = r.suite AND b.id = r.base_model "
            "WHERE r.suite = ? AND r.method = ? AND r.is_latest ORDER BY r.id", [suite, BASELINE_FALLBACK_DIR]).fetchall()
    out: dict[str, TreeBaseline] = {}
    for root, model, benchmark, run_id, accuracy in rows:
        tree = out.setdefault(root, TreeBaseline(root, {}, {}))
        tree.scores[(model, benchmark)] = accuracy
        tree.run_ids[(model, benchmark)] = run_id
    return out


@dataclass
class RunUsage:
    """Usage of one latest run: tokens (in + out, None when the trace has no split counts) and cost (USD)."""

    run_id: str
    agent_key: str
    state: str
    trace_format: str | None
    tokens: int | None
    cost_usd: float | None


@warehouse.retrying
def latest_usage(suite: str) -> list[RunUsage]:
    """Token and cost usage of every method's latest runs in a suite (baselines excluded), ordered by run id."""
    with warehouse.connect() as con:
        rows = con.execute(
            "SELECT r.id, m.agent_key, r.state, r.trace_format, r.tokens_in + r.tokens_out, r.cost_usd "
            "FROM runs r JOIN methods m ON m.id = r.method "
            f"WHERE r.suite = ? AND r.is_latest AND {AGENT_RUN} ORDER BY r.id", [suite]).fetchall()
    return [RunUsage(*row) for row in rows]


# ---------------------------------------------------------------------------------------------------------------
# Facets, time use and calibration (traces.facets; tables facets, phases, monitor)


def facet_clause(spec: str) -> tuple[str, list[str]]:
    """SQL condition on ``r.id`` for a facet spec: ``<facet>`` (the run has that facet, e.g. ``grpo``) or
    ``<facet>:<value>`` (that facet with that value, e.g. ``library:trl``, ``dataset:openai/gsm8k``)."""
    name, _, value = spec.partition(":")
    if value:
        return "r.id IN (SELECT run_id FROM facets WHERE facet = ? AND value = ?)", [name, value]
    return "r.id IN (SELECT run_id FROM facets WHERE facet = ?)", [name]


@warehouse.retrying
def runs_with_facet(suite: str, spec: str) -> set[str]:
    """Ids of the suite's runs that have the facet ``spec`` (see :func:`facet_clause`)."""
    clause, values = facet_clause(spec)
    with warehouse.connect() as con:
        return {r[0] for r in con.execute(f"SELECT r.id FROM runs r WHERE r.suite = ? AND {clause}",
                                          [suite, *values]).fetchall()}


@dataclass(frozen=True)
class FacetRow:
    """One stored facet of a run (``traces.facets.Facet``); ``steps``: the cited agent-trace step indices."""

    facet: str
    value: str
    value_num: float | None
    steps: list[int]


@warehouse.retrying
def run_facets(run_id: str) -> list[FacetRow]:
    """The run's facets in rule order (methods, then measured facets as ``traces.facets`` lists them)."""
    order = {name: i for i, name in enumerate(FACET_ORDER)}
    with warehouse.connect() as con:
        rows = con.execute("SELECT facet, value, value_num, steps FROM facets WHERE run_id = ?", [run_id]).fetchall()
    found = [FacetRow(r[0], r[1], r[2], [int(i) for i in r[3].split(",") if i]) for r in rows]
    return sorted(found, key=lambda f: (order.get(f.facet, len(order)), f.steps[:1], f.value))


@dataclass(frozen=True)
class TimelineCall:
    """A tool call on the timeline: step index, seconds since the trace's start, tool, phase, input (clipped)."""

    index: int
    elapsed_s: float
    tool: str | None
    phase: str
    input: str


@dataclass
class Timeline:
    """A run's time use. Seconds on the steps' ``elapsed_s`` axis; ``split``: seconds per phase (every phase
    of ``traces.facets.PHASES``); ``idle_gaps``: number of idle stretches; ``budget_s``: the budget in seconds;
    ``time_taken_s``: time_taken.txt (None without); ``monitor``: (t_s, GPU util %, memory used MiB, memory
    total MiB) per sample."""

    run_id: str
    budget_s: float
    time_taken_s: int | None
    phases: list[tuple[str, float, float, int, int]]
    calls: list[TimelineCall]
    monitor: list[tuple[float, float, float, float]]
    split: dict[str, float]
    idle_gaps: int
    calls_total: int = 0  # tool calls in the trace; ``calls`` holds at most MAX_TIMELINE_CALLS of them

    @property
    def budget_fraction(self) -> float | None:
        return None if self.time_taken_s is None or not self.budget_s else self.time_taken_s / self.budget_s


MAX_TIMELINE_CALLS = 2000  # a 20,000-call trace draws every 11th call: the page stays light


@warehouse.retrying
def run_timeline(run: RunSummary) -> Timeline:
    """The run's phases, tool calls (with the phase of the stretch holding them; every k-th call when there are
    more than MAX_TIMELINE_CALLS, ``calls_total`` says how many there are) and monitor samples."""
    with warehouse.connect() as con:
        stretches = con.execute("SELECT phase, start_s, end_s, step_from, step_to FROM phases WHERE run_id = ? "
                                "ORDER BY start_s", [run.id]).fetchall()
        total = con.execute("SELECT count(*) FROM steps WHERE run_id = ? AND trace = 'agent' AND kind = 'tool_call' "
                            "AND elapsed_s IS NOT NULL", [run.id]).fetchone()[0]
        every = -(-total // MAX_TIMELINE_CALLS) if total else 1
        calls = con.execute("SELECT idx, elapsed_s, tool, input FROM (SELECT idx, elapsed_s, tool, left(input, 200) "
                            "AS input, row_number() OVER (ORDER BY idx) - 1 AS n FROM steps WHERE run_id = ? "
                            "AND trace = 'agent' AND kind = 'tool_call' AND elapsed_s IS NOT NULL) "
                            "WHERE n % ? = 0 ORDER BY idx", [run.id, every]).fetchall()
        samples = con.execute("SELECT t_s, gpu_util, gpu_mem_mib, gpu_mem_total_mib FROM monitor WHERE run_id = ? "
                              "ORDER BY t_s", [run.id]).fetchall()
    split = time_split(Phase(*stretch) for stretch in stretches)
    timeline_calls = [
        TimelineCall(index, elapsed, tool, call_phase(Step(index, "tool_call", tool=tool, input=text)), (text or "")[:200])
        for index, elapsed, tool, text in calls
    ]
    return Timeline(run.id, run.budget_hours * 3600, run.time_taken_s, [tuple(p) for p in stretches], timeline_calls,
                    [tuple(s) for s in samples], split, sum(1 for p in stretches if p[0] == "idle"), total)


@dataclass
class RunFacts:
    """One run as the analysis page counts it. Scores are fractions: ``self_score`` (the agent's last
    self-reported score), ``verified`` (the newest evaluation); ``ratio`` = self / verified (None where undefined,
    ``traces.facets.overoptimism``); ``base_score``: the base model's zero-shot score on the benchmark (fraction,
    from the suite's published baselines, else an ingested baseline evaluation; None when neither exists);
    ``split``: seconds per phase; ``idle_gaps``: idle stretches; ``methods``: the run's method facets."""

    run: RunSummary
    methods: set[str]
    self_score: float | None
    verified: float | None
    ratio: float | None
    base_score: float | None
    split: dict[str, float]
    idle_gaps: int
    timed: bool


@dataclass
class MethodMix:
    """Per agent: how many of its runs used each method facet (``counts``), out of ``runs``."""

    key: str
    agent: str
    runs: int
    counts: dict[str, int]


@dataclass
class MethodScore:
    """Per method facet: mean verified score (percent) of the scored runs with it and of those without."""

    facet: str
    runs: int
    mean_score: float | None
    runs_without: int
    mean_without: float | None


@dataclass
class AgentCalibration:
    """Per agent: runs with a defined ratio, their mean ratio, mean self-reported and verified scores (percent),
    and the agent's best run (highest verified score among them) with its ratio."""

    key: str
    agent: str
    runs: int
    mean_ratio: float | None
    mean_self: float | None
    mean_verified: float | None
    best_run: str | None
    best_ratio: float | None


@dataclass
class AgentTimeUse:
    """Per agent: mean fraction of the budget used (time_taken.txt) over ``runs_timed`` runs, and mean hours per
    phase and idle gaps per run over the ``runs_traced`` runs whose trace has times."""

    key: str
    agent: str
    runs: int
    runs_timed: int
    budget_fraction: float | None
    runs_traced: int
    hours: dict[str, float]
    idle_gaps: float | None


@dataclass
class Analysis:
    """The analysis page of a suite: its latest runs' facts and the per-agent tables built from them."""

    suite: str
    runs: list[RunFacts]
    method_mix: list[MethodMix]
    score_by_method: list[MethodScore]
    calibration: list[AgentCalibration]
    time_use: list[AgentTimeUse]

    @property
    def synthetic_runs(self) -> int:
        """How many of the runs are generated demo runs."""
        return sum(1 for f in self.runs if f.run.synthetic)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


@warehouse.retrying
def run_facts(suite: str) -> list[RunFacts]:
    """Facts of every latest (non-baseline) run of a suite, ordered by agent then run id."""
    with warehouse.connect() as con:
        runs = _summaries(con, f"r.suite = ? AND r.is_latest AND {AGENT_RUN}", [suite])
        facet_rows = con.execute(
            "SELECT f.run_id, f.facet, f.value_num FROM facets f JOIN runs r ON r.id = f.run_id "
            "WHERE r.suite = ? AND r.is_latest", [suite]).fetchall()
        phase_rows = con.execute(
            "SELECT p.run_id, p.phase, sum(p.end_s - p.start_s), count(*) FROM phases p JOIN runs r ON r.id = p.run_id "
            "WHERE r.suite = ? AND r.is_latest GROUP BY p.run_id, p.phase", [suite]).fetchall()
        base = {(m, t): v for m, t, v in con.execute(
            "SELECT base_model, benchmark, value FROM reported_cells WHERE suite = ? AND agent = 'base-zeroshot'",
            [suite]).fetchall()}
        for m, t, v in con.execute(
                "SELECT r.base_model, r.benchmark, (SELECT e.accuracy FROM evaluations e WHERE e.run_id = r.id "
                f"ORDER BY e.created_at DESC LIMIT 1) FROM runs r WHERE r.suite = ? AND NOT ({AGENT_RUN}) "
                "AND r.is_latest", [suite]).fetchall():
            if v is not None:
                base.setdefault((m, t), v)
    methods: dict[str, set[str]] = {}
    self_scores: dict[str, float] = {}
    for run_id, facet, value in facet_rows:
        if facet in METHOD_FACETS:
            methods.setdefault(run_id, set()).add(facet)
        elif facet == "self_score":
            self_scores[run_id] = value
    splits: dict[str, dict[str, float]] = {}
    idle: dict[str, int] = {}
    for run_id, phase, seconds, count in phase_rows:
        splits.setdefault(run_id, dict.fromkeys(PHASES, 0.0))[phase] = seconds
        if phase == "idle":
            idle[run_id] = count
    facts = []
    for run in sorted(runs, key=lambda r: (r.agent.lower(), r.id)):
        verified = None if run.score is None else run.score / 100
        own = self_scores.get(run.id)
        facts.append(RunFacts(run, methods.get(run.id, set()), own, verified, overoptimism(own, verified),
                              base.get((run.base_model, run.benchmark)), splits.get(run.id, dict.fromkeys(PHASES, 0.0)),
                              idle.get(run.id, 0), run.id in splits))
    return facts


def analysis(suite: str) -> Analysis:
    """Method mix, score by method, calibration and time use per agent over the suite's latest runs.

    Percent = fraction x 100. Score by method compares runs of every benchmark and base model together (their
    difficulty differs), raw verified scores (a flagged run counts with its own score). Ratios average per run.
    """
    facts = run_facts(suite)
    agents: dict[str, list[RunFacts]] = {}
    for f in facts:
        agents.setdefault(f.run.agent_key, []).append(f)
    mix, calibration, time_use = [], [], []
    for key, items in agents.items():
        name = items[0].run.agent
        mix.append(MethodMix(key, name, len(items), {m: sum(m in f.methods for f in items) for m in METHOD_FACETS}))
        rated = [f for f in items if f.ratio is not None]
        best = max(rated, key=lambda f: f.verified) if rated else None
        calibration.append(AgentCalibration(
            key, name, len(rated), _mean([f.ratio for f in rated]), _pct(_mean([f.self_score for f in rated])),
            _pct(_mean([f.verified for f in rated])), best.run.id if best else None, best.ratio if best else None))
        timed = [f.run.budget_fraction for f in items if f.run.budget_fraction is not None]
        traced = [f for f in items if f.timed]
        time_use.append(AgentTimeUse(
            key, name, len(items), len(timed), _mean(timed), len(traced),
            {p: (_mean([f.split[p] / 3600 for f in traced]) or 0.0) for p in PHASES},
            _mean([float(f.idle_gaps) for f in traced])))
    scored = [f for f in facts if f.verified is not None]
    by_method = []
    for m in METHOD_FACETS:
        with_m = [f.verified for f in scored if m in f.methods]
        without = [f.verified for f in scored if m not in f.methods]
        by_method.append(MethodScore(m, len(with_m), _pct(_mean(with_m)), len(without), _pct(_mean(without))))
    return Analysis(suite, facts, mix, by_method, calibration, time_use)


def _pct(value: float | None) -> float | None:
    return None if value is None else 100 * value
