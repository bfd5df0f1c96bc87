"""Reads of the traces app: runs, their steps, verdicts and evaluations. The other apps read runs here.

Step pages use keyset pagination on (run, trace, idx): ``after`` is the last index seen, so a page of a
20,000-step trace costs what a page of a 200-step one does.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime

from ptbsite import warehouse

from .verdicts import SCORED_KINDS, Verdict, effective_flags

STATE_TEXT = {
    "scored": "scored", "no_final_model": "no final model", "eval_failed": "evaluation failed",
    "never_finished": "never finished", "timed_out": "timed out", "cuda_failure": "CUDA failure",
    "api_limit": "API limit",
}
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
    def budget_fraction(self) -> float | None:
        """Agent time as a fraction of the budget (0..1+), None without time_taken.txt."""
        if self.time_taken_s is None or not self.budget_hours:
            return None
        return self.time_taken_s / (self.budget_hours * 3600)


@dataclass
class StepRow:
    """One stored step; ``elapsed_s``/``remaining_s`` in seconds (remaining from the run's budget)."""

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


@dataclass
class StepPage:
    steps: list[StepRow]
    next: int | None  # the ``after`` cursor of the next page, None on the last page
    total: int        # steps matching the filters


def _summaries(con, where: str, params: list, limit: int | None = None) -> list[RunSummary]:
    sql = (f"SELECT {', '.join('r.' + c.strip() for c in RUN_COLUMNS.split(','))}, m.agent_name, m.agent_key, m.scaffold, "
           "(SELECT e.accuracy FROM evaluations e WHERE e.run_id = r.id ORDER BY e.created_at DESC LIMIT 1) "
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
        run.flags = effective_flags(run.verdicts, run.overrides) if run.method != "baseline" else {}


@warehouse.retrying
def list_runs(
    *, agent: str | None = None, benchmark: str | None = None, base_model: str | None = None,
    flagged: bool | None = None, state: str | None = None, latest_only: bool = False,
    after: str | None = None, limit: int = 50,
) -> tuple[list[RunSummary], str | None]:
    """Runs matching the filters, ordered by id, one page at a time.

    Args:
        agent: a leaderboard agent key (``methods.agent_key``) or a method name.
        flagged: True for runs a judge flagged (after overrides), False for the others.
        after: the last run id of the previous page (keyset cursor).

    Returns:
        (runs, next cursor or None).
    """
    where, params = ["r.method <> 'baseline'"], []
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
    if after:
        where.append("r.id > ?")
        params.append(after)
    with warehouse.connect() as con:
        if flagged is None:
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
    """The run's long texts: prompt, metrics (dict), parse problems and redaction warnings (lists)."""
    with warehouse.connect() as con:
        row = con.execute(
            "SELECT prompt, metrics_json, problems, redaction_warnings FROM runs WHERE id = ?", [run_id]
        ).fetchone()
    if row is None:
        return {}
    return {"prompt": row[0], "metrics": json.loads(row[1]) if row[1] else None,
            "problems": json.loads(row[2]), "redaction_warnings": json.loads(row[3])}


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
    search ``q`` over input and output (server-side)."""
    where, params = _step_filter(run_id, trace, kind, tool, q)
    budget_s = budget_hours * 3600 if budget_hours else None
    with warehouse.connect() as con:
        rows = con.execute(
            "SELECT idx, time, elapsed_s, kind, tool, input, output, is_error, tokens_in, tokens_out, line, suspicious "
            f"FROM steps WHERE {where} AND idx > ? ORDER BY idx LIMIT ?", [*params, after, limit + 1]
        ).fetchall()
        total = con.execute(f"SELECT count(*) FROM steps WHERE {where}", params).fetchone()[0]
    steps = [
        StepRow(r[0], r[1], r[2], (budget_s - r[2]) if (budget_s and r[2] is not None) else None, r[3], r[4], r[5],
                r[6], r[7], r[8], r[9], r[10], r[11].split(",") if r[11] else [])
        for r in rows[:limit]
    ]
    return StepPage(steps, steps[-1].index if len(rows) > limit else None, total)


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


@warehouse.retrying
def evidence_steps(run_id: str) -> list[StepRow]:
    """The agent-trace steps an evidence rule marked suspicious, in order."""
    with warehouse.connect() as con:
        rows = con.execute(
            "SELECT idx, time, elapsed_s, kind, tool, input, output, is_error, tokens_in, tokens_out, line, suspicious "
            "FROM steps WHERE run_id = ? AND trace = 'agent' AND suspicious IS NOT NULL ORDER BY idx", [run_id]
        ).fetchall()
    return [StepRow(r[0], r[1], r[2], None, r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11].split(",")) for r in rows]


@warehouse.retrying
def evaluations(run_id: str) -> list[dict]:
    """Every evaluation of the run, newest first: {id, origin, accuracy (fraction), metrics, provenance, created_at}."""
    with warehouse.connect() as con:
        rows = con.execute(
            "SELECT id, origin, accuracy, metrics_json, provenance_json, created_at FROM evaluations "
            "WHERE run_id = ? ORDER BY created_at DESC", [run_id]).fetchall()
    return [{"id": r[0], "origin": r[1], "accuracy": r[2], "metrics": json.loads(r[3]),
             "provenance": json.loads(r[4]), "created_at": r[5]} for r in rows]


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


__all__ = ["SCORED_KINDS", "list_runs", "get_run", "steps_page", "step_at_time", "evidence_steps", "evaluations",
           "reference_scores", "trace_names", "tools_used", "run_texts"]


@dataclass
class CellRun:
    """The latest run of one (method, benchmark, base model) cell, as the leaderboard needs it.

    ``accuracy``: the newest evaluation's score (fraction), None when not scored. ``raw_accuracy`` is the same
    score even when flagged; ``flags`` maps scored verdict kinds to ``flagged``/``judge_error``/None after
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


@warehouse.retrying
def latest_cells(suite: str) -> list[CellRun]:
    """Every method's latest run per (benchmark, base model) in a suite, with score and effective flags.

    Baseline evaluations are excluded. Ordered by method, benchmark, base model.
    """
    with warehouse.connect() as con:
        runs = _summaries(con, "r.suite = ? AND r.is_latest AND r.method <> 'baseline'", [suite])
        methods = {row[0]: row[1:] for row in con.execute(
            "SELECT id, reasoning_effort FROM methods WHERE suite = ?", [suite]).fetchall()}
    cells = []
    for run in sorted(runs, key=lambda r: (r.method, r.benchmark, r.base_model)):
        (effort,) = methods.get(run.method, (None,))
        cells.append(CellRun(
            run_id=run.id, method=run.method, agent_key=run.agent_key,
            agent_name=run.agent, scaffold=run.scaffold, reasoning_effort=effort,
            benchmark=run.benchmark, base_model=run.base_model, state=run.state,
            accuracy=None if run.score is None else run.score / 100, time_taken_s=run.time_taken_s,
            synthetic=run.synthetic, flags=run.flags, overridden=bool(run.overrides),
        ))
    return cells
