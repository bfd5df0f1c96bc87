"""One selector per page: everything a page shows, read in one unit of work, serving the page and its JSON twin.

``open_run`` (``run_page`` opened as a :class:`RunQuery` asks) -> ``/runs/<id>/`` and ``/api/runs/<id>``; ``run_steps`` -> ``/runs/<id>/steps`` and
``/api/runs/<id>/steps``; ``runs_page`` -> ``/runs/`` and ``/api/runs``.
"""
from __future__ import annotations

import re
from typing import Any

from ninja import Schema
from pydantic import Field, field_validator

from ptbsite import warehouse

from ..steps import KindFilter
from ..schemas import (Evaluation, EvidenceStep, Facet, JudgeQuestion, JudgeVerdict, Model, OverrideEntry, Percent, Run,
                       RunTexts, StepPage)
from .analysis import Timeline, read_timeline, read_timeline_summary
from . import compare
from .compare import Peer, read_cell_peers
from .runs import (EXPLORATORY_ORIGINS, OVERRIDES_TABLE, read_evaluations, read_filter_options, read_reference_scores,
                   read_run, read_run_facets, read_run_list, read_run_texts)
from .steps import (read_evidence, read_has_steps_before, read_previous_cursor, read_step_at_time, read_steps_page,
                    read_tools_used, read_trace_names)
from ..challenges import PublicChallenge, read_public_challenges
from .verdicts import REVIEW_TABLES, judge_questions, read_judge_panel, read_override_log
from ..vocabulary import overoptimism


class RunPage(Run, RunTexts):
    """One run as its page shows it: the run's fields, its texts (prompt, metrics, ingest problems, redaction
    counts) and what the page derives from them.

    ``base_model_score``/``instruct_score``: the suite's published zero-shot scores of the base model and its
    instruct model on the run's benchmark (fractions; percent in JSON). ``evaluations``: newest first;
    ``counted``: those that can be the run's score (not partial reruns), newest first, so ``counted[0]`` is the
    score and ``counted[1]`` the one it replaced. ``overoptimism``: the agent's last self-reported score over the
    verified score (``traces.vocabulary.overoptimism``), None when undefined. ``evidence``: the first evidence steps,
    ``evidence_count`` all of them. ``override_log``: the reviewers' overrides, oldest first. ``judge_panel``: each verdict with the judge's words (``judge_questions``: the same by question, with the era's rule; ``challenges``: the public's challenges staff accepted (contested) or resolved),
    its reasoning from the judge's trace and the agent steps they cite (``traces.selectors.verdicts``).
    ``peers``: the other runs of its cell to compare it with (attempts, repeats, other agents).

    The trace viewer as the page's query (:class:`RunQuery`) opens it: ``steps``, the page of steps shown (the
    next pages: ``/api/runs/<id>/steps``); ``focus``, the step it opened at (None: the start); ``earlier_before``,
    the index of the first step shown when steps matching the filters come before it (the page's "Earlier steps"
    control loads them, ``/runs/<id>/steps?before=<it>``; None otherwise); ``tools``, the trace's tool names (the
    tool filter's choices); ``traces``, the run's traces (``agent``, then judges); ``note``, why the viewer opened
    elsewhere than asked (a step past the end or filtered out, a time that is none or a trace without times).

    Not in JSON: ``timeline`` (its own twin, ``/api/runs/<id>/timeline``; here the time split and idle gaps only,
    no stretches, calls or monitor samples: the page loads its figure after first paint from
    ``/runs/<id>/timeline.json``), ``has_phases`` / ``has_monitor`` (the run has phase stretches /
    system_monitor samples); ``redaction_warnings`` are for admins only.
    """

    base_model_score: Percent = Field(description="percent, the published zero-shot score of the base model")
    instruct_score: Percent = Field(description="percent, the published score of the official instruct model")
    evaluations: list[Evaluation]
    counted: list[Evaluation]
    overoptimism: float | None
    facets: list[Facet]
    evidence: list[EvidenceStep]
    evidence_count: int
    override_log: list[OverrideEntry]
    judge_panel: list[JudgeVerdict] = Field(default_factory=list)
    peers: list[Peer] = Field(default_factory=list, description="runs of the same cell to compare it with "
                              "(traces.selectors.compare.read_cell_peers), by what names them: each one's state "
                              "and score are its own /api/runs/<id>'s")
    judge_questions: list[JudgeQuestion] = Field(default_factory=list)
    challenges: list[PublicChallenge] = Field(default_factory=list)
    redaction_warnings: list[str] = Field(default_factory=list, exclude=True)

    @property
    def other_agents_cut(self) -> bool:
        """Whether the other agents' runs ``peers`` offers may leave some of the cell out: ``pick_peers`` chose
        ``PEERS_SHOWN`` of them (those whose method follows the run's by name); fewer are every other agent's."""
        return sum(p.relation == "other" for p in self.peers) >= compare.PEERS_SHOWN
    steps: StepPage
    timeline: Timeline = Field(exclude=True)
    tools: list[str]
    traces: list[str]
    focus: int | None = None
    earlier_before: int | None = None
    note: str | None = None
    has_phases: bool = Field(False, exclude=True)
    has_monitor: bool = Field(False, exclude=True)

    @property
    def has_timeline(self) -> bool:
        """The run has a timeline figure (phases or monitor samples)."""
        return self.has_phases or self.has_monitor

    @property
    def has_times(self) -> bool:
        """The trace has timestamps (it can be opened at a time)."""
        return self.started_at is not None

    def unknown_trace(self, trace: str) -> str | None:
        """Why ``trace`` (a ``?trace=`` value) names none of this run's traces, for a 404 of the page and its twin
        ("this run has no trace 'x'; its traces: agent, judge:codex", the value cut at 40 characters); None for
        one of ``traces``, and for ``agent`` (the default, shown empty when the run has no agent trace)."""
        if trace == "agent" or trace in self.traces:
            return None
        return f"this run has no trace {trace[:40]!r}; its traces: {', '.join(self.traces) or 'none'}"


PAGE_SIZE = 50  # steps a trace viewer shows at first
MAX_PAGE_SIZE = 500
_TIME = re.compile(r"^\s*(?:hour\s*)?(\d{1,6}(?:\.\d{1,6})?)\s*h?\s*$|^\s*(\d{1,6}):([0-5]\d)\s*$", re.I | re.ASCII)


def parse_time_jump(text: str) -> float | None:
    """Seconds for "hour 7", "7h", "7.5", "7:30" (hours[:minutes]); None if it is none of these."""
    match = _TIME.match(text or "")
    if not match:
        return None
    if match[1] is not None:
        return float(match[1]) * 3600
    return int(match[2]) * 3600 + int(match[3]) * 60


class RunQuery(Schema):
    """The run page's query, read by ``/runs/<id>/`` and its twin ``/api/runs/<id>`` alike: the trace viewer's
    ``trace`` (``agent`` or a judge trace, ``judge:codex``), ``kind`` (a step kind, "" for all), ``tool``, ``q``
    (a text search, stripped, at most 200 characters), ``limit`` (steps shown, 1-500), and where it opens:
    ``step`` (a step index), else ``at`` (an elapsed time: "hour 7", "7h", "7:30"); empty values are defaults."""

    trace: str = "agent"
    kind: KindFilter = ""
    tool: str = ""
    q: str = ""
    limit: int = PAGE_SIZE
    step: int | None = None
    at: str = ""

    @field_validator("trace")
    @classmethod
    def _agent_by_default(cls, value: str) -> str:
        return value or "agent"

    @field_validator("q")
    @classmethod
    def _cut(cls, value: str) -> str:
        return value.strip()[:200]

    @field_validator("limit")
    @classmethod
    def _clamped(cls, value: int) -> int:
        return min(max(value, 1), MAX_PAGE_SIZE)

    def filters(self) -> dict[str, Any]:
        """The viewer's filters as the step selectors take them (None for "all")."""
        return {"trace": self.trace, "kind": self.kind or None, "tool": self.tool or None, "q": self.q or None}


def _missing_step_note(step: int, step_count: int | None, later_shown: bool) -> str:
    """The notice of a ``?step=N`` that names no step shown: past the end of the trace (``step_count`` steps,
    numbered from 0, when known) or filtered out (``later_shown``: the page opens at the next step that is)."""
    if later_shown:
        return f"Step {step:,} is not among the steps this filter shows: the trace opens at the next one that is."
    size = (f": this trace has {step_count:,} steps, #0 to #{step_count - 1:,}" if step_count
            else ": this trace has no step at or after it")
    return f"Step {step:,} does not exist{size}. Showing the trace from its start."


def open_run(run_id: str, query: RunQuery) -> RunPage | None:
    """The run page of ``run_id`` as ``query`` opens it (None for an unknown run): at ``step``, else at the time
    ``at``; a step past the end of the trace opens it at its start, and ``note`` says why it opened elsewhere
    than asked. The page's view and its twin both answer this."""
    seconds, note = None, None
    if query.step is None and query.at:
        seconds = parse_time_jump(query.at)
        if seconds is None:
            note = f"{query.at[:40]!r} is not a time: write hour 7, 7h or 7:30."
    page = run_page(run_id, **query.filters(), limit=query.limit, step=query.step, at_seconds=seconds)
    if page is None:
        return None
    if query.step is not None and not any(s.index == query.step for s in page.steps.steps):
        note = _missing_step_note(query.step, page.step_count if query.trace == "agent" else None,
                                  bool(page.steps.steps))
        if not page.steps.steps:  # past the end: open the trace at its start, under the note
            page = run_page(run_id, **query.filters(), limit=query.limit) or page
    if seconds is not None and not page.has_times:
        note = "This trace has no timestamps, so it cannot be opened at a time: jump by step instead."
    page.note = note
    return page


@warehouse.retrying
def run_page(
    run_id: str, *, trace: str = "agent", kind: str | None = None, tool: str | None = None, q: str | None = None,
    limit: int = 50, step: int | None = None, at_seconds: float | None = None,
) -> RunPage | None:
    """The run page of ``run_id`` (None for an unknown run), its trace viewer opened at ``step``, else at the
    first step at or after ``at_seconds`` of elapsed time (when the trace has times), else at the start, showing
    ``limit`` steps of ``trace`` filtered by ``kind``, ``tool`` and the text search ``q``."""
    with warehouse.snapshot(unwritten=REVIEW_TABLES) as con:  # ~60 CPU ms of the page at K=9 (bench/RESULTS.md)
        run = read_run(con, run_id)
        if run is None:
            return None
        focus = step
        if focus is None and at_seconds is not None and run.started_at is not None:
            focus = read_step_at_time(con, run.id, at_seconds, trace=trace)
        texts = read_run_texts(con, run.id) or RunTexts()
        evaluations = read_evaluations(con, run.id)
        facets = read_run_facets(con, run.id)
        evidence, evidence_count = read_evidence(con, run.id)
        refs = read_reference_scores(con, run.suite, run.base_model, run.benchmark)
        own = next((f.value_num for f in facets if f.facet == "self_score"), None)
        timeline, has_phases, has_monitor = read_timeline_summary(con, run)
        steps = read_steps_page(con, run.id, trace=trace, after=(focus - 1) if focus is not None else -1,
                                limit=limit, kind=kind, tool=tool, q=q, budget_hours=run.budget_hours,
                                step_count=run.step_count if trace == "agent" else None)
        first = steps.steps[0].index if steps.steps else focus
        earlier = (first if focus is not None and first is not None and read_has_steps_before(
            con, run.id, before=first, trace=trace, kind=kind, tool=tool, q=q) else None)
        names = read_trace_names(con, run.id)  # shown, and read by the judge panel
        return RunPage(
            **dict(run), **dict(texts), base_model_score=refs["base"], instruct_score=refs["instruct"],
            evaluations=evaluations, counted=[e for e in evaluations if e.origin not in EXPLORATORY_ORIGINS],
            overoptimism=overoptimism(own, run.score), facets=facets, evidence=evidence,
            evidence_count=evidence_count, override_log=read_override_log(con, run.id),
            judge_panel=(panel := read_judge_panel(con, run, names)), peers=read_cell_peers(con, run),
            judge_questions=judge_questions(run, panel, (said := read_public_challenges(con, run.id))),
            challenges=said,
            steps=steps,
            timeline=timeline, has_phases=has_phases, has_monitor=has_monitor, tools=read_tools_used(con, run.id, trace),
            traces=names, focus=focus, earlier_before=earlier,
        )


class RunStepsPage(Model):
    """One page of a run's trace, as ``/runs/<id>/steps`` shows it: the run, the page, ``after`` the cursor the
    page starts after, ``previous`` the ``after`` cursor of the page before (-1 for the first page, None when
    this is the first, or when not asked for), ``has_earlier``: steps matching the filters come before the page."""

    run: Run
    page: StepPage
    after: int = -1
    previous: int | None
    has_earlier: bool = False


@warehouse.retrying
def run_steps(
    run_id: str, *, trace: str = "agent", after: int = -1, limit: int = 50, kind: str | None = None,
    tool: str | None = None, q: str | None = None, with_previous: bool = True, before: int | None = None,
) -> RunStepsPage | None:
    """A page of ``limit`` steps of the run's ``trace`` after the cursor ``after`` (filters as
    :func:`traces.selectors.steps_page`), with the previous page's cursor; None for an unknown run.

    ``before`` (a step index) reads backwards instead: the ``limit`` steps matching the filters just before that
    step (fewer at the start of the trace), ``after`` then being the cursor they start after; ``has_earlier``
    says whether steps come before them (the "Earlier steps" control of a page opened by a deep link)."""
    with warehouse.snapshot(unwritten=OVERRIDES_TABLE) as con:
        run = read_run(con, run_id)
        if run is None:
            return None
        options: dict[str, Any] = {"trace": trace, "kind": kind, "tool": tool, "q": q}
        if before is not None:
            cursor = read_previous_cursor(con, run.id, after=before - 1, limit=limit, **options)
            after = before - 1 if cursor is None else cursor  # None: nothing before index 0
        page = read_steps_page(con, run.id, after=after, limit=limit, budget_hours=run.budget_hours,
                               step_count=run.step_count if trace == "agent" else None, before=before, **options)
        previous = (read_previous_cursor(con, run.id, after=after, limit=limit, **options)
                    if with_previous else None)
        has_earlier = read_has_steps_before(con, run.id, before=after + 1, **options)
    return RunStepsPage(run=run, page=page, after=after, previous=previous, has_earlier=has_earlier)


@warehouse.retrying
def timeline_page(run_id: str) -> Timeline | None:
    """The run's whole timeline (:func:`traces.selectors.run_timeline`) in one unit of work, for the run page's
    lazily loaded figure and ``/api/runs/<id>/timeline``; None for an unknown run."""
    with warehouse.snapshot(unwritten=OVERRIDES_TABLE) as con:
        run = read_run(con, run_id)
        return None if run is None else read_timeline(con, run)


class RunsPage(Model):
    """One page of the runs list: ``runs`` ordered by id or by the page's sort column, ``next`` the ``after``
    cursor of the next page (a run id; None on the last); ``options``: the filter choices ((value, label) pairs
    per filter; not in JSON)."""

    runs: list[Run]
    next: str | None
    options: dict[str, list[tuple[str, str]]] = Field(default_factory=dict, exclude=True)


@warehouse.retrying
def runs_page(*, with_options: bool = True, **filters) -> RunsPage:
    """The runs list (filters, sort and paging of :func:`traces.selectors.list_runs`), with the filter choices.

    Raises:
        ValueError: an unknown ``sort`` column or ``direction``."""
    with warehouse.snapshot(unwritten=OVERRIDES_TABLE) as con:
        runs, next_after = read_run_list(con, **filters)
        options = read_filter_options(con) if with_options else {}
    return RunsPage(runs=runs, next=next_after, options=options)

