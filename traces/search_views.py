"""``/search/?q=``: the search of every trace, results grouped by run (thin view over
``traces.selectors.search.search_page``, the selector ``/api/search`` serves too).

The static export has no server: its ``/search/`` is the Pagefind page ``export/`` writes (same URL, same ``q``),
so the header's search box leads to a search in both.
"""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.http import urlencode

from ptbsite.pagecache import page_inputs

from . import selectors
from .selectors import search
from .steps import STEP_KINDS

PAGE_RUNS = 20  # runs per page of results
RUN_FILTERS = ("agent", "benchmark", "base_model", "state", "suite", "facet")


def _flag(value: str | None) -> bool | None:
    return {"1": True, "true": True, "0": False, "false": False}.get((value or "").lower())


def search_options(get) -> dict:
    """The search's options from a query string (``request.GET``): the runs list's filters, ``flagged``,
    ``verdict``, ``latest``, ``kind`` and ``tool``, ``after``, empty ones left out."""
    options: dict = {k: get.get(k) for k in RUN_FILTERS if get.get(k)}
    kind = get.get("kind") or None
    options.update(kind=kind if kind in STEP_KINDS else None, tool=get.get("tool") or None,
                   flagged=_flag(get.get("flagged")), verdict=get.get("verdict") or None,
                   latest_only=get.get("latest") == "1", after=get.get("after") or None)
    return options


@page_inputs(query=("q", *RUN_FILTERS, "flagged", "verdict", "latest", "kind", "tool", "after"))
def search_results(request: HttpRequest) -> HttpResponse:
    """``/search/?q=&agent=&benchmark=&base_model=&state=&flagged=&verdict=&latest=&kind=&tool=&after=``: the
    runs whose steps hold every word and ``"quoted phrase"`` of ``q``, 20 runs a page (keyset on the run id),
    each with its match count (capped) and its first matches as excerpts, the matches in ``<mark>``, linking to
    their steps. ``key=value`` tokens of ``q`` naming a filter and one of its values (``benchmark=gsm8k``: the
    header's box has no other field) are that filter, said above the results (``search.split_filters``).
    Without ``q``, the form."""
    typed = (request.GET.get("q") or "").strip()[:search.MAX_QUERY]
    split = (search.split_filters(typed, search.filter_options()) if "=" in typed
             else search.TypedQuery(q=typed))
    q = split.q.strip()
    get = request.GET.copy()
    for f in split.filters:  # what was typed in the box wins over the form's fields
        get[f.param] = f.value
    options = search_options(get)
    data = search.search_page(q, limit=PAGE_RUNS, with_options=True, **options)
    kept = {k: v for k, v in get.items() if k not in ("after", "q") and v}
    return render(request, "traces/search.html", {
        "q": q, "data": data if q else None, "options": data.options, "states": selectors.STATE_TEXT,
        "kinds": STEP_KINDS, "params": {k: get.get(k, "") for k in
                                        (*RUN_FILTERS, "flagged", "verdict", "latest", "kind", "tool")},
        "typed": split,
        "verdicts": [(v, v.replace("_", " ")) for v in search.VERDICT_LABELS],
        "next_query": urlencode({"q": q, **kept, "after": data.next}) if data.next else None,
        "first_query": urlencode({"q": q, **kept}) if options.get("after") else None,
        "one_needle": len(data.needles) == 1,
        # A match's link opens its step with the query marked: one needle is the run page's own search (``q``:
        # the trace filtered to the steps holding it); several are marked without filtering (``mark``: the run
        # page's search is one substring, and the step holds each needle, not their concatenation).
        "step_query": (urlencode({"q": data.needles[0]}) if len(data.needles) == 1
                       else urlencode({"mark": q}) if data.needles else ""),
    })
