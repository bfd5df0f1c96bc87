"""Leaderboard pages: thin views over leaderboard.selectors."""
from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode

from . import selectors


def _params(request: HttpRequest) -> dict[str, str]:
    base_model = request.GET.get("base_model") or ""
    sort = request.GET.get("sort") or "rank"
    direction = request.GET.get("dir") if request.GET.get("dir") in ("asc", "desc") else "asc"
    return {"base_model": base_model, "sort": sort, "dir": direction}


def _board(params: dict[str, str]) -> selectors.Leaderboard:
    try:
        return selectors.leaderboard(
            base_model=params["base_model"] or None, sort=params["sort"], direction=params["dir"]
        )
    except selectors.UnknownBaseModel as exc:
        raise Http404(str(exc)) from None


def _query(params: dict[str, str], **changes: str) -> str:
    merged = {**params, **changes}
    defaults = {"base_model": "", "sort": "rank", "dir": "asc"}
    return urlencode({k: v for k, v in merged.items() if v != defaults[k]})


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
    return {
        "board": board,
        "params": params,
        "sort_links": sort_links,
        "filter_links": filter_links,
        "table_url": reverse("leaderboard:table"),
        "page_url": reverse("leaderboard:index"),
    }


def index(request: HttpRequest) -> HttpResponse:
    """The leaderboard page ``/?base_model=&sort=&dir=``."""
    return render(request, "leaderboard/index.html", _context(request))


def table(request: HttpRequest) -> HttpResponse:
    """The leaderboard block alone, swapped in place by htmx when the filter or the sort changes."""
    return render(request, "leaderboard/_board.html", _context(request))
