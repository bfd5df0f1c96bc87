"""``/compare/?runs=<id>,<id>[,...]``: runs side by side (thin view over
``traces.selectors.compare.compare_page``, the selector ``/api/compare`` serves too)."""
from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode

from ptbsite.pagecache import page_inputs

from .vocabulary import PHASES
from .selectors import compare, parse_time_jump

STEPS_PER_RUN = compare.STEPS_SHOWN  # steps of each run per page of the aligned traces


def compare_url(run_ids: list[str], **query) -> str:
    """The comparison's URL: ``/compare/?runs=a,b`` (comma-separated, the order given), plus ``query``."""
    return reverse("traces:compare") + "?" + urlencode({"runs": ",".join(run_ids), **query})


def pick_runs(request: HttpRequest) -> HttpResponse:
    """``/compare/pick/?runs=a&runs=b``: the runs picked with the runs list's checkboxes, sent to their comparison's
    one-parameter URL (``/compare/?runs=a,b``), so every comparison is a link; not cached (a redirect)."""
    ids = compare.asked_runs(request.GET.getlist("runs"))  # all of them: the comparison says which it shows
    return HttpResponseRedirect(compare_url(ids))


@page_inputs(query=("runs", "after", "at"), headers={"HX-Request": None, "HX-Target": ("compare-more",)})
def compare_runs(request: HttpRequest) -> HttpResponse:
    """``/compare/?runs=a,b[,c,d]&after=i,j&at=``: the runs' facts, verdicts, facets and phases side by side,
    differences marked, and their agent traces aligned by elapsed time (by position without clocks), 25 steps
    of each per page; ``after``: the cursors of the page (one step index per run), ``at`` ("hour 3", "3:30"):
    from that elapsed time. To htmx (``HX-Target: compare-more``), the next page of aligned rows only."""
    asked = compare.asked_runs(request.GET.getlist("runs"))
    ids = asked[:compare.MAX_RUNS]
    if not ids:
        return render(request, "traces/compare.html", {"data": None})
    seconds = parse_time_jump(request.GET.get("at", "")) if request.GET.get("at") else None
    partial = request.headers.get("HX-Request") and request.headers.get("HX-Target") == "compare-more"
    data = compare.compare_page(ids, after=compare.parse_cursors(request.GET.get("after")), limit=STEPS_PER_RUN,
                                at_seconds=seconds, steps_only=bool(partial))
    if data is None:
        raise Http404(f"no run {', '.join(ids)}")
    shown = [c.run.id for c in data.runs]
    context = {
        "data": data, "ids": ",".join(shown), "phases": PHASES, "asked": len(asked),
        "max_runs": compare.MAX_RUNS,
        "more_query": urlencode({"runs": ",".join(shown), "after": ",".join(map(str, data.steps.next))})
        if data.steps.next else None,
        "static": getattr(request, "static_export", False),
    }
    if partial:
        return render(request, "traces/_compare_rows.html", context)
    return render(request, "traces/compare.html", context)
