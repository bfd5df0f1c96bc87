"""JSON twins of the run pages (django-ninja router, mounted under /api/)."""
from __future__ import annotations

from datetime import datetime
from typing import Literal

from django.conf import settings
from ninja import Router, Schema
from ninja.errors import HttpError

from leaderboard import api as leaderboard_api
from leaderboard import selectors as leaderboard_selectors
from ptbsite.suites import suite_ids

from . import selectors
from .facets import IDLE_GAP_S
from .steps import STEP_KINDS

router = Router(tags=["runs"])
KindFilter = Literal[STEP_KINDS + ("",)]  # a step kind, or "" for all (a form's unset field)


class VerdictOut(Schema):
    judge: str
    kind: str
    flagged: bool | None
    value: str
    value_text: str
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
    counts: bool
    score: float
    provenance: dict
    created_at: datetime


class EvidenceOut(Schema):
    index: int
    rules: list[str]
    input: str | None


class RunDetailOut(RunOut):
    """One run with its page's header. ``secrets_redacted``: secrets ingest replaced by ``<omitted-api-key>`` in
    the run's files; ``chars_replaced``: invalid UTF-8 sequences and lone surrogates replaced by U+FFFD (both null
    for runs stored before they were counted); ``trace_incomplete``: why the agent trace is damaged or unfinished
    (null when it is not; a scored run still counts); ``unknown_events``: event types the parser could not
    render, with counts; ``problems``: the first ingest problems (``file:line: message``), ``problem_count`` all
    of them; ``evidence``: the first evidence steps, ``evidence_count`` all of them."""

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
    evidence_count: int
    secrets_redacted: int | None
    chars_replaced: int | None
    trace_incomplete: str | None
    unknown_events: dict[str, int]
    problems: list[str]
    problem_count: int


class StepOut(Schema):
    """One step. ``input``/``output`` are cut to what the page size allows; ``input_bytes``/``output_bytes`` are
    the whole texts' UTF-8 sizes and ``*_not_shown`` the bytes left out, served whole by
    ``/api/runs/{run_id}/steps/{index}/text``. ``call_id`` pairs a tool call with its result; ``label`` names a
    typed event (rate limit, api retry, task started, compaction summary, ...)."""

    index: int
    time: datetime | None
    elapsed_s: float | None
    remaining_s: float | None
    kind: str
    label: str | None
    tool: str | None
    call_id: str | None
    input: str | None
    output: str
    input_bytes: int | None
    output_bytes: int | None
    input_not_shown: int
    output_not_shown: int
    is_error: bool
    suspicious: list[str]


class StepsOut(Schema):
    steps: list[StepOut]
    next: int | None
    total: int


class StepTextOut(Schema):
    """Bytes ``[offset, end)`` of a step field's whole text (UTF-8, cut at character boundaries) and
    ``next_offset``, the ``offset`` of the next range (null at the end)."""

    run_id: str
    trace: str
    index: int
    field: str
    offset: int
    end: int
    total_bytes: int
    next_offset: int | None
    text: str


def _run_out(run: selectors.RunSummary) -> dict:
    return {
        "id": run.id, "method": run.method, "agent": run.agent, "agent_key": run.agent_key, "scaffold": run.scaffold,
        "benchmark": run.benchmark, "base_model": run.base_model, "state": run.state, "score": run.score,
        "is_latest": run.is_latest, "synthetic": run.synthetic, "flagged": run.flagged,
        "verdicts": [{"judge": v.judge, "kind": v.kind, "flagged": v.flagged, "value": v.value,
                      "value_text": v.value_text, "era": v.era, "attempt": v.attempt, "text": v.text} for v in run.verdicts],
    }


@router.get("/runs", response=RunsOut, summary="Runs, filtered, page by page")
def runs(request, agent: str | None = None, benchmark: str | None = None, base_model: str | None = None,
         flagged: bool | None = None, state: str | None = None, facet: str | None = None, suite: str | None = None,
         latest: bool = False, after: str | None = None, limit: int = 50):
    """Runs ordered by id; ``next`` is the ``after`` cursor of the next page (null on the last). ``score`` is
    percent (the newest successful evaluation), null when the run has none. ``facet``: ``grpo``, ``library:trl``
    (runs with that facet); ``latest``: only the latest run of each cell."""
    found, next_after = selectors.list_runs(agent=agent, benchmark=benchmark, base_model=base_model, flagged=flagged,
                                            state=state, facet=facet, suite=suite, latest_only=latest, after=after,
                                            limit=max(1, min(limit, 500)))
    return {"runs": [_run_out(r) for r in found], "next": next_after}


@router.get("/runs/{run_id}", response=RunDetailOut, summary="One run with the header of its page")
def run(request, run_id: str):
    """One run: the list fields plus time used (seconds, fraction of the budget), tokens, cost (USD), the
    base model's and instruct model's scores (percent), evaluations and the evidence steps (each input cut to 1,000 characters)."""
    found = selectors.get_run(run_id)
    if found is None:
        raise HttpError(404, f"no run {run_id}")
    refs = selectors.reference_scores(found.suite, found.base_model, found.benchmark)
    texts = selectors.run_texts(run_id)
    return {
        **_run_out(found), "run_dir": found.run_dir, "cluster_id": found.cluster_id, "state_detail": found.state_detail,
        "time_taken_s": found.time_taken_s, "budget_hours": found.budget_hours, "budget_fraction": found.budget_fraction,
        "tokens_in": found.tokens_in, "tokens_out": found.tokens_out, "cost_usd": found.cost_usd,
        "trace_format": found.trace_format, "step_count": found.step_count, "base_model_score": refs["base"],
        "instruct_score": refs["instruct"], "overrides": found.overrides,
        "evaluations": [{"id": e["id"], "origin": e["origin"], "counts": e["counts"], "score": 100 * e["accuracy"],
                         "provenance": e["provenance"], "created_at": e["created_at"]} for e in selectors.evaluations(run_id)],
        "evidence": [{"index": s.index, "rules": s.suspicious, "input": s.input} for s in selectors.evidence_steps(run_id)],
        "evidence_count": selectors.evidence_count(run_id),
        **{k: texts[k] for k in ("secrets_redacted", "chars_replaced", "trace_incomplete", "unknown_events",
                                 "problems", "problem_count")},
    }


@router.get("/runs/{run_id}/steps", response=StepsOut, summary="One page of a run's trace")
def steps(request, run_id: str, after: int = -1, limit: int = 50,
          kind: KindFilter | None = None,
          tool: str | None = None, q: str | None = None, trace: str = "agent"):
    """Steps with index > ``after`` (keyset cursor), at most ``limit`` (1-500); ``kind`` one of system, assistant,
    thinking, tool_call, tool_result, result, text; ``q`` a case-insensitive search of input and output;
    ``trace`` ``agent`` or a judge trace (``judge:codex``). ``elapsed_s``/``remaining_s`` in seconds. Each input
    and output holds at most 1,000,000 / (2 x limit) characters (1,000 at least): a page is bounded in size
    whatever the trace holds; ``*_not_shown`` says how many bytes are left out."""
    found = selectors.get_run(run_id)
    if found is None:
        raise HttpError(404, f"no run {run_id}")
    page = selectors.steps_page(run_id, trace=trace, after=after, limit=max(1, min(limit, 500)), kind=kind, tool=tool,
                                q=q, budget_hours=found.budget_hours)
    return {"steps": [s.__dict__ | {"input_not_shown": s.input_not_shown, "output_not_shown": s.output_not_shown}
                      for s in page.steps], "next": page.next, "total": page.total}


@router.get("/runs/{run_id}/steps/{index}/text", response=StepTextOut, summary="The whole text of one step, range by range")
def step_text(request, run_id: str, index: int, field: Literal["input", "output"] = "output", trace: str = "agent",
              offset: int = 0, length: int = selectors.MAX_TEXT_RANGE):
    """Bytes ``offset`` to ``offset + length`` (UTF-8, at most 1 MiB per request, cut at character boundaries)
    of the whole ``field`` of step ``index``, also when ingest stored it cut (outputs over 256 KiB are stored cut,
    the whole text compressed). Follow ``next_offset`` for the rest."""
    if selectors.get_run(run_id) is None:
        raise HttpError(404, f"no run {run_id}")
    found = selectors.step_text(run_id, trace=trace, index=index, field=field, offset=max(0, offset),
                                length=max(1, length))
    if found is None:
        raise HttpError(404, f"no step {index} in trace {trace} of run {run_id}")
    return {"run_id": run_id, "trace": trace, "index": index, "field": field, "offset": found.offset,
            "end": found.end, "total_bytes": found.total_bytes, "next_offset": found.next_offset, "text": found.text}


class FacetOut(Schema):
    facet: str
    value: str
    value_num: float | None
    steps: list[int]


class PhaseOut(Schema):
    phase: str
    start_s: float
    end_s: float
    step_from: int
    step_to: int


class TimelineCallOut(Schema):
    index: int
    elapsed_s: float
    tool: str | None
    phase: str
    input: str


class MonitorOut(Schema):
    t_s: float
    gpu_util: float
    gpu_mem_mib: float
    gpu_mem_total_mib: float


class TimelineOut(Schema):
    run_id: str
    budget_s: float
    time_taken_s: int | None
    budget_fraction: float | None
    split_s: dict[str, float]
    idle_gaps: int
    idle_gap_s: float
    phases: list[PhaseOut]
    calls: list[TimelineCallOut]
    monitor: list[MonitorOut]


def _found(run_id: str) -> selectors.RunSummary:
    found = selectors.get_run(run_id)
    if found is None:
        raise HttpError(404, f"no run {run_id}")
    return found


@router.get("/runs/{run_id}/facets", response=list[FacetOut], summary="What the agent did, as on the run page")
def run_facets(request, run_id: str):
    """The run's facets (rules in ``traces/facets.py``): ``value_num`` is a count, a step number, or a fraction
    (``self_score``), null for presence facets; ``steps``: the agent-trace step indices each one cites."""
    return [f.__dict__ for f in selectors.run_facets(_found(run_id).id)]


@router.get("/runs/{run_id}/timeline", response=TimelineOut, summary="Time use of one run, as on the run page")
def run_timeline(request, run_id: str):
    """Phases (seconds since the trace's first timed step), tool calls with their phase, system_monitor samples
    (GPU utilisation %, memory MiB) on the same axis, seconds per phase (``split_s``), idle gaps (longer than
    ``idle_gap_s`` with nothing running) and the fraction of the budget used (time_taken.txt)."""
    data = selectors.run_timeline(_found(run_id))
    return {
        "run_id": data.run_id, "budget_s": data.budget_s, "time_taken_s": data.time_taken_s,
        "budget_fraction": data.budget_fraction, "split_s": data.split, "idle_gaps": data.idle_gaps,
        "idle_gap_s": IDLE_GAP_S,
        "phases": [dict(zip(("phase", "start_s", "end_s", "step_from", "step_to"), p)) for p in data.phases],
        "calls": [c.__dict__ for c in data.calls],
        "monitor": [dict(zip(("t_s", "gpu_util", "gpu_mem_mib", "gpu_mem_total_mib"), m)) for m in data.monitor],
    }


class MethodMixOut(Schema):
    key: str
    agent: str
    runs: int
    counts: dict[str, int]


class MethodScoreOut(Schema):
    facet: str
    runs: int
    mean_score: float | None
    runs_without: int
    mean_without: float | None


class CalibrationRunOut(Schema):
    run_id: str
    agent_key: str
    benchmark: str
    base_model: str
    self_score: float
    verified: float
    ratio: float
    base_score: float | None


class CalibrationOut(Schema):
    key: str
    agent: str
    runs: int
    mean_ratio: float | None
    mean_self: float | None
    mean_verified: float | None
    best_run: str | None
    best_ratio: float | None


class CalibrationPageOut(Schema):
    agents: list[CalibrationOut]
    runs: list[CalibrationRunOut]


class TimeUseOut(Schema):
    key: str
    agent: str
    runs: int
    runs_timed: int
    budget_fraction: float | None
    runs_traced: int
    hours: dict[str, float]
    idle_gaps: float | None


def _analysis(suite: str) -> selectors.Analysis:
    if suite not in suite_ids():
        raise HttpError(404, f"no suite {suite}")
    return selectors.analysis(suite)


@router.get("/analysis/method-mix", response=list[MethodMixOut], summary="Method mix per agent, as on /analysis/")
def method_mix(request, suite: str = settings.DEFAULT_SUITE):
    """Per agent: its latest runs (``runs``) and how many used each method facet (``counts``)."""
    return [m.__dict__ for m in _analysis(suite).method_mix]


@router.get("/analysis/score-by-method", response=list[MethodScoreOut], summary="Score by method, as on /analysis/")
def score_by_method(request, suite: str = settings.DEFAULT_SUITE):
    """Per method facet: scored latest runs with it and without it, and their mean verified score (percent)."""
    return [m.__dict__ for m in _analysis(suite).score_by_method]


@router.get("/analysis/calibration", response=CalibrationPageOut, summary="Calibration, as on /analysis/")
def calibration(request, suite: str = settings.DEFAULT_SUITE):
    """Per agent: runs with a defined overoptimism ratio (self-reported / verified), its mean, the mean scores
    (percent), the best run (highest verified score) and its ratio. ``runs``: every run with a ratio, scores as
    fractions, ``base_score`` the base model's score on the benchmark (fraction, null when unknown)."""
    data = _analysis(suite)
    return {"agents": [c.__dict__ for c in data.calibration],
            "runs": [{"run_id": f.run.id, "agent_key": f.run.agent_key, "benchmark": f.run.benchmark,
                      "base_model": f.run.base_model, "self_score": f.self_score, "verified": f.verified,
                      "ratio": f.ratio, "base_score": f.base_score} for f in data.runs if f.ratio is not None]}


@router.get("/analysis/time-use", response=list[TimeUseOut], summary="Time use per agent, as on /analysis/")
def time_use(request, suite: str = settings.DEFAULT_SUITE):
    """Per agent: mean fraction of the budget used, mean hours per phase and idle gaps per run (runs whose trace
    has times)."""
    return [t.__dict__ for t in _analysis(suite).time_use]


@router.get("/analysis/reported", response=list[leaderboard_api.FactOut],
            summary="What the suite's source reports, as on /analysis/")
def reported(request, suite: str = settings.DEFAULT_SUITE, topic: str | None = None):
    """The suite source's reported figures and statements in the suite file's order (``reported.facts``):
    ``topic`` score | methods | training_signal | calibration | note; ``value`` null for a statement without a
    number; ``unit`` ``fraction`` (``display`` in percent), ``x`` (a ratio) or a count's noun; ``quote``: the
    source's words. Empty for a suite whose source reports nothing beyond its files."""
    if suite not in suite_ids():
        raise HttpError(404, f"no suite {suite}")
    return [leaderboard_api.fact_out(f) for f in leaderboard_selectors.reported_facts(suite, topic)]
