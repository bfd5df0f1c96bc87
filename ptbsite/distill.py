"""Static-export declarations next to the URL patterns they export, in the manner of django-distill: an app's
``urls.py`` writes ``distill_path(route, view, name=..., distill_func=..., distill_file=...)`` instead of
``path(...)`` for a page the static export writes, and ``distill_api(name, ...)`` for an API operation (ninja makes
those patterns). The exporter (``export/``) walks the URL resolver for these declarations; nothing else reads them.

Parameters of one exported page are one dict: the pattern's URL kwargs and its query parameters together
(``{"run_id": "r1", "limit": 200}``). ``distill_func`` lists the dicts to export: ``distill_func()`` for a
site page, ``distill_func(run)`` for a run's page (``scope="run"``; ``run`` is the exporter's :class:`RunContext`).
``distill_file(params, run)`` names the file a page (or a link to it found on another page) lands in, relative to
the export root: a path, or ``(path, query kept for the browser, fragment)``; it raises :class:`NotExported` for
parameters the export has no file for. ``run`` is the run whose pages are being written (None elsewhere).
``distill_inputs`` names what a site page reads (``export.inputs.SOURCES``): the export renders it again only when
one of those, or the code, changed.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from django.urls import URLPattern, path

Params = dict[str, Any]
FileTarget = str | tuple[str, str, str]


class NotExported(RuntimeError):
    """A URL, or its parameters, has no file in the static export; the message says why."""


STEPS_PER_PAGE = 200  # steps on each exported page of a trace


def trace_page_file(run_id: str, trace: str, page: int) -> str:
    """The exported file of page ``page`` (1-based, STEPS_PER_PAGE steps each) of a run's trace: the agent trace's
    first page is the run page itself (``runs/<id>/index.html``), its others ``runs/<id>/steps/<n>.html``, another
    trace's ``runs/<id>/traces/<trace>/<n>.html``."""
    if trace == "agent":
        return f"runs/{run_id}/index.html" if page == 1 else f"runs/{run_id}/steps/{page}.html"
    return f"runs/{run_id}/traces/{trace.replace(':', '-')}/{page}.html"


class TraceContext(Protocol):
    def page_of_step(self, index: int) -> int: ...
    def page_of_cursor(self, after: int) -> int: ...


class RunContext(Protocol):
    """What a run-scoped declaration sees of the run being exported: its id, the exported page size (steps), and
    its traces' pages (``traces``: name -> pages with ``cursors``; ``file(trace, page)``: the file of page n)."""

    run_id: str
    steps_per_page: int
    traces: dict[str, Any]

    def file(self, trace: str, page: int) -> str: ...
    def trace(self, name: str) -> TraceContext: ...


@dataclass(frozen=True)
class Distill:
    """How one URL pattern is exported (see the module docstring).

    ``query``: the query parameters a link to it may carry (any other one: NotExported); ``kind``: ``html`` pages
    get their links made relative, ``json`` files are written as served; ``render(fetch)``: the file's bytes when
    they are not one response (``fetch(url) -> bytes``); ``live_only``: links lead to the export's "needs the live
    site" page; ``inputs``: of a site-scoped page, the names of what it reads (``export.inputs.SOURCES``): the
    export renders it again only when the code or one of those changed (None: whenever the warehouse changed)."""

    file: Callable[[Params, RunContext | None], FileTarget] | None = None
    pages: Callable[..., Iterable[Params]] | None = None
    scope: Literal["site", "run"] = "site"
    query: tuple[str, ...] = ()
    kind: Literal["html", "json"] = "html"
    render: Callable[[Callable[[str], bytes]], bytes] | None = None
    live_only: bool = False
    inputs: tuple[str, ...] | None = None


# API operations' declarations by URL name ("api:leaderboard"): ninja builds those patterns itself.
API_EXPORTS: dict[str, Distill] = {}


def distill_path(route: str, view: Callable, *, name: str, distill_func: Callable[..., Iterable[Params]] | None = None,
                 distill_file: Callable[[Params, RunContext | None], FileTarget] | str | None = None,
                 distill_query: tuple[str, ...] = (), distill_scope: Literal["site", "run"] = "site",
                 distill_live_only: bool = False, distill_inputs: tuple[str, ...] | None = None) -> URLPattern:
    """``django.urls.path(route, view, name=name)`` carrying its export declaration as ``pattern.distill``.
    A ``distill_file`` string is a fixed file (a page without parameters)."""
    pattern = path(route, view, name=name)
    pattern.distill = Distill(file=_file(distill_file), pages=distill_func, scope=distill_scope,  # type: ignore[attr-defined]
                              query=distill_query, live_only=distill_live_only, inputs=distill_inputs)
    return pattern


def distill_api(name: str, *, distill_func: Callable[..., Iterable[Params]] | None = None,
                distill_file: Callable[[Params, RunContext | None], FileTarget] | str | None = None,
                distill_query: tuple[str, ...] = (), distill_scope: Literal["site", "run"] = "site",
                distill_render: Callable[[Callable[[str], bytes]], bytes] | None = None,
                distill_inputs: tuple[str, ...] | None = None) -> None:
    """Declare the export of the API operation named ``name`` (``api:<operation function>``), written as JSON."""
    API_EXPORTS[name] = Distill(file=_file(distill_file), pages=distill_func, scope=distill_scope,
                                query=distill_query, kind="json", render=distill_render, inputs=distill_inputs)


def _file(file: Callable[[Params, RunContext | None], FileTarget] | str | None
          ) -> Callable[[Params, RunContext | None], FileTarget] | None:
    if isinstance(file, str):
        return lambda params, run: file
    return file


_SAFE = re.compile(r"^[A-Za-z0-9._-]+$")


def safe_name(value: str, what: str) -> str:
    """``value`` if it can name a file or folder of the export (letters, digits, ``._-``); else NotExported."""
    if not _SAFE.match(value):
        raise NotExported(f"{what} {value!r} cannot name a file")
    return value
