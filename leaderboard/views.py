"""Leaderboard pages: thin views over leaderboard.selectors."""
from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode

from . import selectors


DEFAULTS = {"base_model": "", "sort": "rank", "dir": "asc", "source": "published", "flags": "apply"}


def _params(request: HttpRequest) -> dict[str, str]:
    """The view's state from the URL (every view is a shareable link)."""
    params = {key: request.GET.get(key) or default for key, default in DEFAULTS.items()}
    if params["dir"] not in ("asc", "desc"):
        params["dir"] = "asc"
    if params["source"] not in selectors.SOURCES:
        params["source"] = "published"
    if params["flags"] not in ("apply", "ignore"):
        params["flags"] = "apply"
    return params


def _board(params: dict[str, str]) -> selectors.Leaderboard:
    try:
        return selectors.leaderboard(
            base_model=params["base_model"] or None, sort=params["sort"], direction=params["dir"],
            source=params["source"], apply_flags=params["flags"] == "apply",
        )
    except selectors.UnknownBaseModel as exc:
        raise Http404(str(exc)) from None


def _query(params: dict[str, str], **changes: str) -> str:
    merged = {**params, **changes}
    return urlencode({k: v for k, v in merged.items() if v != DEFAULTS[k]})


def _context(request: HttpRequest) -> dict:
    params = _params(request)
    board = _board(params)
    sort_links = {}
    for column in ["rank", "agent", "average", "runs", *(b.id for b in board.benchmarks)]:
        # First click on a score column sorts best-first; a second click flips the direction.
        first = "asc" if column in ("rank", "agent") else "desc"
        flipped = {"asc": "desc", "desc": "asc"}[params["dir"]]
        sort_links[column] = _query(params, sort=column, dir=flipped if params["sort"] == column else first)
    filter_links = [("", "Average of 4", _query(params, base_model=""))] + [
        (m.id, m.name, _query(params, base_model=m.id)) for m in board.base_models
    ]
    source_links = [(key, label, _query(params, source=key)) for key, label in
                    (("published", "Published"), ("runs", "From ingested runs"), ("all", "Both"))]
    flag_link = _query(params, flags="ignore" if params["flags"] == "apply" else "apply",
                       source=params["source"] if params["source"] != "published" else "runs")
    return {
        "board": board,
        "params": params,
        "sort_links": sort_links,
        "filter_links": filter_links,
        "source_links": source_links,
        "flag_link": flag_link,
        "runs_url": reverse("traces:runs"),
        "table_url": reverse("leaderboard:table"),
        "page_url": reverse("leaderboard:index"),
    }


def index(request: HttpRequest) -> HttpResponse:
    """The leaderboard page ``/?base_model=&sort=&dir=``."""
    return render(request, "leaderboard/index.html", _context(request))


def table(request: HttpRequest) -> HttpResponse:
    """The leaderboard block alone, swapped in place by htmx when the filter or the sort changes."""
    return render(request, "leaderboard/_board.html", _context(request))
