"""JSON twins of the run pages (django-ninja router, mounted under /api/)."""
from __future__ import annotations

from datetime import datetime

from ninja import Router, Schema
from ninja.errors import HttpError

from . import selectors
from .steps import STEP_KINDS

router = Router(tags=["runs"])


class VerdictOut(Schema):
    judge: str
    kind: str
    flagged: bool | None
    value: str
    era: str
    attempt: str
    text: str


class RunOut(Schema):
    id: str
    method: str
    agent: str
    agent_key: str
    scaffold: str
    benchmark: str
    base_model: str
    state: str
    score: float | None
    is_latest: bool
    synthetic: bool
    flagged: bool
    verdicts: list[VerdictOut]


class RunsOut(Schema):
    runs: list[RunOut]
    next: str | None


class EvaluationOut(Schema):
    id: str
    origin: str
    score: float
    provenance: dict
    created_at: datetime


class EvidenceOut(Schema):
    index: int
    rules: list[str]
    input: str | None


class RunDetailOut(RunOut):
    run_dir: str
    cluster_id: int
    state_detail: str
    time_taken_s: int | None
    budget_hours: float
    budget_fraction: float | None
    tokens_in: int | None
    tokens_out: int | None
    cost_usd: float | None
    trace_format: str | None
    step_count: int
    base_model_score: float | None
    instruct_score: float | None
    overrides: dict[str, bool]
    evaluations: list[EvaluationOut]
    evidence: list[EvidenceOut]


class StepOut(Schema):
    index: int
    time: datetime | None
    elapsed_s: float | None
    remaining_s: float | None
    kind: str
    tool: str | None
    input: str | None
    output: str
    is_error: bool
    suspicious: list[str]


class StepsOut(Schema):
    steps: list[StepOut]
    next: int | None
    total: int


def _run_out(run: selectors.RunSummary) -> dict:
    return {
        "id": run.id, "method": run.method, "agent": run.agent, "agent_key": run.agent_key, "scaffold": run.scaffold,
        "benchmark": run.benchmark, "base_model": run.base_model, "state": run.state, "score": run.score,
        "is_latest": run.is_latest, "synthetic": run.synthetic, "flagged": run.flagged,
        "verdicts": [{"judge": v.judge, "kind": v.kind, "flagged": v.flagged, "value": v.value, "era": v.era,
                      "attempt": v.attempt, "text": v.text} for v in run.verdicts],
    }


@router.get("/runs", response=RunsOut, summary="Runs, filtered, page by page")
def runs(request, agent: str | None = None, benchmark: str | None = None, base_model: str | None = None,
         flagged: bool | None = None, state: str | None = None, after: str | None = None, limit: int = 50):
    """Runs ordered by id; ``next`` is the ``after`` cursor of the next page (null on the last). ``score`` is
    percent (the newest successful evaluation), null when the run has none."""
    found, next_after = selectors.list_runs(agent=agent, benchmark=benchmark, base_model=base_model, flagged=flagged,
                                            state=state, after=after, limit=max(1, min(limit, 500)))
    return {"runs": [_run_out(r) for r in found], "next": next_after}


@router.get("/runs/{run_id}", response=RunDetailOut, summary="One run with the header of its page")
def run(request, run_id: str):
    """One run: the list fields plus time used (seconds, fraction of the budget), tokens, cost (USD), the
    base model's and instruct model's scores (percent), evaluations and the evidence steps."""
    found = selectors.get_run(run_id)
    if found is None:
        raise HttpError(404, f"no run {run_id}")
    refs = selectors.reference_scores(found.suite, found.base_model, found.benchmark)
    return {
        **_run_out(found), "run_dir": found.run_dir, "cluster_id": found.cluster_id, "state_detail": found.state_detail,
        "time_taken_s": found.time_taken_s, "budget_hours": found.budget_hours, "budget_fraction": found.budget_fraction,
        "tokens_in": found.tokens_in, "tokens_out": found.tokens_out, "cost_usd": found.cost_usd,
        "trace_format": found.trace_format, "step_count": found.step_count, "base_model_score": refs["base"],
        "instruct_score": refs["instruct"], "overrides": found.overrides,
        "evaluations": [{"id": e["id"], "origin": e["origin"], "score": 100 * e["accuracy"],
                         "provenance": e["provenance"], "created_at": e["created_at"]} for e in selectors.evaluations(run_id)],
        "evidence": [{"index": s.index, "rules": s.suspicious, "input": s.input} for s in selectors.evidence_steps(run_id)],
    }


@router.get("/runs/{run_id}/steps", response=StepsOut, summary="One page of a run's trace")
def steps(request, run_id: str, after: int = -1, limit: int = 50, kind: str | None = None, tool: str | None = None,
          q: str | None = None, trace: str = "agent"):
    """Steps with index > ``after`` (keyset cursor), at most ``limit`` (1-500); ``kind`` one of system, assistant,
    thinking, tool_call, tool_result, result, text; ``q`` a case-insensitive search of input and output;
    ``trace`` ``agent`` or a judge trace (``judge:codex``). ``elapsed_s``/``remaining_s`` in seconds."""
    found = selectors.get_run(run_id)
    if found is None:
        raise HttpError(404, f"no run {run_id}")
    if kind and kind not in STEP_KINDS:
        raise HttpError(422, f"kind must be one of {', '.join(STEP_KINDS)}")
    page = selectors.steps_page(run_id, trace=trace, after=after, limit=max(1, min(limit, 500)), kind=kind, tool=tool,
                                q=q, budget_hours=found.budget_hours)
    return {"steps": [s.__dict__ | {"suspicious": s.suspicious} for s in page.steps], "next": page.next, "total": page.total}
