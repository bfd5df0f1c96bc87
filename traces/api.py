"""JSON twins of the run pages (django-ninja router, mounted under /api/)."""
from __future__ import annotations

from typing import Literal

from django.conf import settings
from ninja import Query, Router
from ninja.errors import HttpError

from ptbsite.pagecache import page_inputs
from ptbsite.suites import suite_ids

from . import selectors
from .steps import KindFilter

router = Router(tags=["runs"])
RunSortColumn = Literal[selectors.RunSortKey, ""]  # a column of the runs list, or "" for by id


@router.get("/runs", response=selectors.RunsPage, summary="Runs, filtered, sorted, page by page")
@page_inputs(query=("agent", "benchmark", "base_model", "flagged", "state", "facet", "suite", "latest", "sort", "dir",
                    "after", "limit"))
def runs(request, agent: str | None = None, benchmark: str | None = None, base_model: str | None = None,
         flagged: bool | None = None, state: str | None = None, facet: str | None = None, suite: str | None = None,
         latest: bool = False, sort: RunSortColumn | None = None, dir: Literal["asc", "desc"] | None = None,
         after: str | None = None, limit: int = 50):
    """Runs as on /runs/: ordered by id, or by ``sort`` (``date``: the run's own date, ``agent``, ``scaffold``,
    ``benchmark``, ``base_model`` by display name, ``state``, ``score``, ``time``: time used, ``steps``) in
    direction ``dir`` (default asc; empty values last, ties by id); ``next`` is the ``after`` cursor of the next
    page (a run id; null on the last), to be sent with the same filters and sort. ``score`` is percent (the newest
    successful evaluation), null when the run has none. ``facet``: ``grpo``, ``library:trl`` (runs with that
    facet); ``latest``: only the latest run of each cell."""
    return selectors.runs_page(agent=agent, benchmark=benchmark, base_model=base_model, flagged=flagged, state=state,
                               facet=facet, suite=suite, latest_only=latest, after=after, limit=max(1, min(limit, 500)),
                               sort=sort or None, direction=dir or "asc", with_options=False)


@router.get("/runs/{run_id}", response=selectors.RunPage, summary="One run, as on its page")
@page_inputs(query=tuple(selectors.RunQuery.model_fields))
def run(request, run_id: str, query: Query[selectors.RunQuery]):
    """One run as its page shows it for the same query (``traces.selectors.open_run``, the page's own selector):
    the trace viewer's ``trace``, ``kind``, ``tool``, ``q`` (text search) and ``limit`` (1-500 steps), opened at
    ``step`` or at the elapsed time ``at`` ("hour 7", "7:30"): ``steps`` the page of steps shown (``next`` the
    ``after`` cursor of ``/api/runs/<id>/steps``), ``focus`` the step it opened at, ``earlier_before`` the first
    step shown when matching steps come before it, ``tools`` and ``traces`` the viewer's choices, ``note`` why it
    opened elsewhere than asked. Then the list fields plus
    time used (seconds, fraction of the budget), tokens, cost (USD), the base model's and instruct model's scores
    (percent), evaluations (``score`` percent; ``counted``: those that can be the score, newest first), the
    overoptimism ratio, facets, the evidence steps (each input cut to 1,000 characters), the prompt (cut to
    100,000 characters), metrics.json, ingest problems, redaction counts and the reviewers' override log.
    ``secrets_redacted``: secrets ingest replaced by ``<omitted-api-key>`` in the run's files; ``chars_replaced``:
    invalid UTF-8 sequences and lone surrogates replaced by U+FFFD (both null for runs stored before they were
    counted); ``trace_incomplete``: why the agent trace is damaged or unfinished (null when it is not; a scored run
    still counts); ``unknown_events``: event types the parser could not render, with counts; ``problems``: the
    first ingest problems (``file:line: message``), ``problem_count`` all of them; ``evidence_count``: all
    evidence steps."""
    found = selectors.open_run(run_id, query)
    if found is None:
        raise HttpError(404, f"no run {run_id}")
    if (unknown := found.unknown_trace(query.trace)) is not None:
        raise HttpError(404, unknown)
    return found


@router.get("/runs/{run_id}/steps", response=selectors.StepPage, summary="One page of a run's trace")
@page_inputs(query=("after", "limit", "kind", "tool", "q", "trace", "before"))
def steps(request, run_id: str, after: int = -1, limit: int = 50,
          kind: KindFilter | None = None,
          tool: str | None = None, q: str | None = None, trace: str = "agent", before: int | None = None):
    """Steps with index > ``after`` (keyset cursor), at most ``limit`` (1-500); or, with ``before`` (a step
    index), the ``limit`` steps just before that step (the run page's "Earlier steps"; ``after`` is then
    ignored, and ``next`` null when the page reaches ``before``); ``kind`` one of system, assistant,
    thinking, tool_call, tool_result, result, text; ``q`` a case-insensitive search of input and output;
    ``trace`` ``agent`` or a judge trace (``judge:codex``). ``elapsed_s``/``remaining_s`` in seconds. Each input
    and output holds at most 1,000,000 / (2 x limit) characters (1,000 at least): a page is bounded in size
    whatever the trace holds; ``*_not_shown`` says how many bytes are left out."""
    found = selectors.run_steps(run_id, trace=trace, after=after, limit=max(1, min(limit, 500)), kind=kind or None,
                                tool=tool, q=q, with_previous=False, before=before if before is None else max(0, before))
    if found is None:
        raise HttpError(404, f"no run {run_id}")
    return found.page


@router.get("/runs/{run_id}/steps/{index}/text", response=selectors.TextRange, summary="The whole text of one step, range by range")
@page_inputs(query=("field", "trace", "offset", "length"))
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
    return found


def _found(run_id: str) -> selectors.Run:
    found = selectors.get_run(run_id)
    if found is None:
        raise HttpError(404, f"no run {run_id}")
    return found


@router.get("/runs/{run_id}/facets", response=list[selectors.Facet], summary="What the agent did, as on the run page")
@page_inputs()
def run_facets(request, run_id: str):
    """The run's facets (rules in ``ingest/facets.py``): ``value_num`` is a count, a step number, or a fraction
    (``self_score``), null for presence facets; ``steps``: the agent-trace step indices each one cites."""
    return selectors.run_facets(_found(run_id).id)


@router.get("/runs/{run_id}/timeline", response=selectors.Timeline, summary="Time use of one run, as on the run page")
@page_inputs()
def run_timeline(request, run_id: str):
    """Phases (seconds since the trace's first timed step), tool calls with their phase, system_monitor samples
    (GPU utilisation %, memory MiB) on the same axis, seconds per phase (``split_s``), idle gaps (longer than
    ``idle_gap_s`` with nothing running) and the fraction of the budget used (time_taken.txt)."""
    found = selectors.timeline_page(run_id)
    if found is None:
        raise HttpError(404, f"no run {run_id}")
    return found


@router.get("/analysis", response=selectors.AnalysisTwin, summary="The analysis page, as on /analysis/")
@page_inputs(query=("suite",))
def analysis(request, suite: str = settings.DEFAULT_SUITE):
    """Every section of /analysis/ over the suite's latest runs, in one object: ``method_mix`` (per agent: its
    latest runs and how many used each method facet), ``score_by_method`` (per method facet: scored latest runs with
    it and without it, mean verified score in percent), ``calibration`` (``agents``: per agent the runs with a
    defined overoptimism ratio, self-reported / verified, its mean, the mean scores in percent, the best run and its
    ratio; ``runs``: every run with a ratio, scores as fractions, ``base_score`` the base model's score on the
    benchmark, null when unknown), ``time_use`` (per agent: mean fraction of the budget used, mean hours per phase
    and idle gaps per run over the runs whose trace has times) and ``reported`` (the suite source's figures and
    statements in the suite file's order: ``topic`` score | methods | training_signal | calibration | note;
    ``value`` null for a statement without a number; ``unit`` ``fraction``, ``x`` or a count's noun; ``quote`` the
    source's words; empty for a suite whose source reports nothing beyond its files)."""
    if suite not in suite_ids():
        raise HttpError(404, f"no suite {suite}")
    return selectors.analysis(suite).twin()


@router.get("/judges", response=selectors.JudgeReport, summary="The judges' report card, as on /judges/")
@page_inputs()
def judges(request):
    """Per judge and benchmark (``stats``): runs it answered, readable answers, flagged, ``flag_rate`` (fraction),
    reviewers' ``confirmed``/``overturned``, ``open_challenges``; ``pairs``: two judges on one question, runs both
    answered, agreed, Cohen's ``kappa``; ``disagreements``: runs where the site's evidence rules find a reward-hacking
    mode (``modes``) but every judge said clean (``rules`` found) or a judge flagged it and the rules find nothing
    (``rules`` none), with the ``steps`` the rules cite."""
    return selectors.judge_report()
