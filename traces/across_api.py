"""``/api/search`` and ``/api/compare``: the JSON twins of ``/search/`` and ``/compare/`` (django-ninja router,
mounted under /api/ by ``ptbsite.api``)."""
from __future__ import annotations

from ninja import Router
from ninja.errors import HttpError

from ptbsite.pagecache import page_inputs

from .selectors import compare, search
from .steps import KindFilter

router = Router(tags=["across runs"])


@router.get("/search", response=search.SearchPage, summary="Search every trace, results grouped by run")
@page_inputs(query=("q", "agent", "benchmark", "base_model", "state", "suite", "facet", "flagged", "verdict", "latest",
                    "kind", "tool", "after", "limit"))
def search_all(request, q: str, agent: str | None = None, benchmark: str | None = None,
               base_model: str | None = None, state: str | None = None, suite: str | None = None,
               facet: str | None = None, flagged: bool | None = None, verdict: str | None = None,
               latest: bool = False, kind: KindFilter | None = None, tool: str | None = None,
               after: str | None = None, limit: int = 20):
    """Runs whose steps (input or output, any trace) hold every word and ``"quoted phrase"`` of ``q``
    (case-insensitive substrings), as on /search/: ordered by run id, ``limit`` runs a page (1-100), ``next`` the
    ``after`` cursor of the next page (a run id; null on the last). Per run: ``count`` matching steps (at most
    100; ``capped`` when there are more) and its first 3 ``matches`` with an ``excerpt`` (300 characters of the
    field around the first word) and ``marks`` ([start, end) character offsets of the words in it).
    ``candidates``: runs the word index names (the number of matching runs when ``exact``). Filters as /runs/
    (``verdict``: flagged | judge_error | clean | not_assessed, or ``<question>:<label>``) and the step's
    ``kind`` and ``tool``. ``key=value`` words of ``q`` naming one of these filters and one of its values
    (``benchmark=gsm8k loss``, ``agent="Opus 4.6"``) are that filter, as on /search/ (they win over the
    parameter): ``typed`` says which, ``q`` the words left."""
    asked = q[:search.MAX_QUERY]
    typed = search.split_filters(asked, search.filter_options()) if "=" in asked else None
    given = {f.param: f.value for f in typed.filters} if typed else {}
    page = search.search_page(
        typed.q.strip() if typed and typed.filters else asked, agent=given.get("agent", agent),
        benchmark=given.get("benchmark", benchmark), base_model=given.get("base_model", base_model),
        state=given.get("state", state), suite=suite, facet=facet,
        flagged=given["flagged"] == "1" if "flagged" in given else flagged, verdict=given.get("verdict", verdict),
        latest_only=True if "latest" in given else latest, kind=given.get("kind", kind) or None,
        tool=given.get("tool", tool), after=after, limit=max(1, min(limit, 100)))
    if typed and (typed.filters or typed.refused):
        page.typed = typed
    return page


@router.get("/compare", response=compare.ComparePage, summary="Runs side by side, as on /compare/")
@page_inputs(query=("runs", "after", "limit", "at"))
def compare_runs(request, runs: str, after: str | None = None, limit: int = 25, at: float | None = None):
    """The runs of ``runs`` (comma-separated ids, at most 4) side by side as on /compare/: each run with its
    evaluations (score percent), judges' verdicts, facets, seconds per phase and its phases in 120 bins from 0 to
    the largest budget (``budget_s``); ``facts`` and ``facets``: one row per field with each run's value as the
    page shows it and ``differs``; ``steps``: a page of the agent traces aligned by elapsed time (``mode``
    ``time``) or by position when a run has no clocks (``index``), at most ``limit`` steps per run (1-100), each
    input and output cut to 400 characters; ``next``: the ``after`` cursors of the next page (comma-join them).
    ``at``: start at that many hours of elapsed time. 404 when no id is a run."""
    found = compare.compare_page(compare.parse_runs(runs), after=compare.parse_cursors(after), limit=limit,
                                 at_seconds=at * 3600 if at is not None else None)
    if found is None:
        raise HttpError(404, f"no run {runs}")
    return found

