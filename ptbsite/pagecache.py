"""Public pages computed once per warehouse version: a Django middleware serving them from Django's cache.

Which requests: ``GET`` and ``HEAD`` of the views that declare their inputs with :func:`page_inputs` (the public
pages whose only input besides the request is the warehouse: the leaderboard ``/`` and its htmx table,
``/plots/...``, ``/analysis/``, ``/runs/``, ``/runs/<id>/`` and its steps and step texts, and their JSON twins under
``/api/``). Never ``/admin/``, ``/reruns/`` (jobs), the workers' ``/api/worker/``, a write, or anything a user signs
in for: a request that carries a session cookie (signed-in users, so every staff page with its staff buttons and
CSRF tokens), a ``messages`` cookie or an ``Authorization`` header is neither served from the cache nor stored, and
such a page is marked ``Cache-Control: private``. So the staff bit of the key is always "anonymous": staff pages
are never cached.

The key is built from everything that decides the answer, as the view declares it (:class:`PageInputs`): method,
path, the declared query parameters (sorted by name; the last value of a repeated one, the one
``request.GET.get`` reads), the declared headers (``HX-Request`` as present or not, ``HX-Target`` as one of the
values the view tells apart, or absent), the warehouse version (:mod:`ptbsite.warehouse.version`, bumped after
every committed write by whichever process wrote) and the code's fingerprint (:mod:`ptbsite.codeprint`: code,
templates, static and suite files, ``PTB_*``/``DJANGO_*`` settings, installed packages). Before the view runs, the request is cut to what it declared
(``request.GET`` and ``QUERY_STRING`` hold the declared parameters only, undeclared ``HX-*`` headers are removed,
declared ones normalised), for every visitor and whether the cache is on or not: an unknown query parameter or
header value can neither change the answer nor make a new entry, and a view that reads an input it did not declare
sees nothing (tests/test_page_cache_keys.py checks each view). The version is read from a small file and the
cache, without opening the warehouse, so a hit never opens it. Only 200 answers without cookies and at most
``PTB_PAGE_CACHE_MAX_BYTES`` are stored, for ``PTB_PAGE_CACHE_SECONDS`` at most (a safety net: a new version makes
an entry unreachable at once).

Every answer of this kind carries ``ETag`` (a hash of the body), ``Last-Modified`` (the last write's time),
``Vary`` with the view's declared headers and ``Cookie``, and ``Cache-Control: public,
max-age=PTB_PAGE_MAX_AGE, must-revalidate``; a request whose ``If-None-Match`` (or ``If-Modified-Since``) matches gets 304. ``X-Page-Cache`` says ``hit``, ``miss`` or
``stale``.

After a write, one request computes each page of the new version (a lock in the cache, held at most
``PTB_PAGE_CACHE_STALE_SECONDS``; 0 turns this off); requests arriving meanwhile get the previous version's page
(``stale``: it was current a moment ago; a request that comes after the new page is stored gets the new one), so
a burst of writes (an ingest) does not make every client compute every page. Each process also keeps its most
recently used entries in memory (``PTB_PAGE_MEMORY_BYTES``): their keys hold the version, so they are as fresh as
the version file says.

The cache is ``settings.CACHES["pages"]``: a file-based cache under the data folder (shared by every process of
the install) or Redis when ``PTB_CACHE_URL`` is set. A cache that fails (Redis down) is logged and the page is
computed as if there were no cache.
"""
from __future__ import annotations

import hashlib
import inspect
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeVar
from urllib.parse import urlencode

from django.conf import settings
from django.core.cache import caches
from django.http import HttpRequest, HttpResponse, HttpResponseBase, QueryDict
from django.urls import Resolver404, resolve
from django.utils.cache import get_conditional_response, patch_vary_headers
from django.utils.http import http_date

from . import codeprint
from .warehouse import version

log = logging.getLogger(__name__)

_NOT_STORED_HEADERS = {"content-length", "date", "set-cookie", "etag", "last-modified", "cache-control"}
PRESENT = "true"  # what a view sees of a declared presence header (HX-Request) that was sent with any value
View = TypeVar("View", bound=Callable[..., Any])


@dataclass(frozen=True)
class PageInputs:
    """What decides a cached view's answer besides its path, the method and the warehouse.

    ``query``: the query parameters it reads (one value each: the last, as ``request.GET.get`` reads it).
    ``headers``: ``(name, values)`` pairs: ``values`` None for a header whose presence is the input (``HX-Request``:
    any non-empty value reaches the view as ``"true"``); else the values the view tells apart (``HX-Target``:
    ``("trace-results",)``), any other value reaching the view as no header at all."""

    query: tuple[str, ...] = ()
    headers: tuple[tuple[str, tuple[str, ...] | None], ...] = ()

    @property
    def header_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.headers)


def page_inputs(*, query: tuple[str, ...] = (), headers: Mapping[str, tuple[str, ...] | None] | None = None
                ) -> Callable[[View], View]:
    """Decorator of a public view (a Django view or a django-ninja operation's function, under its
    ``@router.get``): declares its inputs (:class:`PageInputs`), which makes its answers cacheable and keyed by
    them (module docstring). A view without the declaration is never cached."""
    declared = PageInputs(query=tuple(query), headers=tuple((headers or {}).items()))

    def mark(view: View) -> View:
        view.page_inputs = declared  # type: ignore[attr-defined]
        return view
    return mark


@lru_cache(maxsize=256)
def _inputs_of(func: Callable[..., Any], method: str) -> PageInputs | None:
    declared = getattr(func, "page_inputs", None)
    if declared is not None:
        return declared
    # A django-ninja URL's view is a wrapper of its PathView (closure ``self``), which holds one operation per method.
    if not inspect.isfunction(func):
        return None
    path_view = inspect.getclosurevars(func).nonlocals.get("self")
    for operation in getattr(path_view, "operations", ()):
        if method in operation.methods or (method == "HEAD" and "GET" in operation.methods):
            return getattr(operation.view_func, "page_inputs", None)
    return None


def declared_inputs(request: HttpRequest) -> PageInputs | None:
    """The inputs the view of ``request`` declared (:func:`page_inputs`), None when it declared none (not cached)."""
    path = request.path_info
    if len(path) > 300:  # not kept: the LRU below holds at most 8192 x 300 characters of paths
        return _declared_for_path.__wrapped__(path, request.method or "GET")
    return _declared_for_path(path, request.method or "GET")


@lru_cache(maxsize=8192)
def _declared_for_path(path: str, method: str) -> PageInputs | None:
    """Resolving a path costs about 0.3 ms (URL patterns tried in order), as much as the rest of a hit: kept for
    the most recent paths (bounded in number and length, so random paths only evict)."""
    try:
        match = resolve(path)
    except Resolver404:
        return None
    return _inputs_of(match.func, method)


def _header_key(name: str) -> str:
    return "HTTP_" + name.upper().replace("-", "_")


def cut_to_inputs(request: HttpRequest, inputs: PageInputs) -> None:
    """Leave in ``request`` only what ``inputs`` declares: ``GET`` and ``QUERY_STRING`` hold the declared
    parameters (the last value of each), undeclared ``HX-*`` headers are removed and declared headers normalised
    (:class:`PageInputs`). The view then cannot read an input the cache key does not hold."""
    sent = request.GET
    text = urlencode([(name, sent[name]) for name in inputs.query if name in sent])  # QueryDict[name]: the last
    request.META["QUERY_STRING"] = text
    request.GET = QueryDict(text)
    declared = dict(inputs.headers)
    for key in [k for k in request.META if k.startswith("HTTP_HX_")]:
        if key not in {_header_key(name) for name in declared}:
            del request.META[key]
    for name, values in declared.items():
        key = _header_key(name)
        value = request.META.pop(key, "")
        if values is None and value:
            request.META[key] = PRESENT
        elif values is not None and value in values:
            request.META[key] = value
    request.__dict__.pop("headers", None)  # HttpRequest.headers is a cached property of META


def _is_anonymous_public(request: HttpRequest) -> bool:
    """Whether the request may be answered from (and stored into) the anonymous cache."""
    cookies = request.COOKIES
    return (settings.SESSION_COOKIE_NAME not in cookies and "messages" not in cookies
            and "HTTP_AUTHORIZATION" not in request.META)


def cache_key(request: HttpRequest, token: str, inputs: PageInputs | None = None) -> str:
    """The cache key of ``request`` (already :func:`cut_to_inputs`) at warehouse version ``token``: a hash of
    method, path, the declared query parameters sorted by name, the declared headers' values (normalised), the
    token and the code's fingerprint (``ptbsite.codeprint.serving_code``: a restart with the same code keeps the
    cached pages, new code or settings get their own). ``inputs``: the view's declaration (default: looked up from the request's path)."""
    inputs = inputs or declared_inputs(request) or PageInputs()
    query = urlencode(sorted((name, request.GET[name]) for name in inputs.query if name in request.GET))
    headers = "&".join(f"{name}={request.META.get(_header_key(name), '')}" for name in inputs.header_names)
    raw = "\n".join((request.method or "GET", request.path, query, headers, "anonymous", token,
                     codeprint.serving_code()))
    return "ptb:page:" + hashlib.sha256(raw.encode()).hexdigest()


def _storable(response: HttpResponseBase) -> bool:
    if response.status_code != 200 or response.streaming or response.cookies:
        return False
    control = response.get("Cache-Control", "")
    if "private" in control or "no-store" in control:
        return False
    return len(response.content) <= settings.PTB_PAGE_CACHE_MAX_BYTES  # type: ignore[attr-defined]


def _entry(response: HttpResponse, at: float) -> dict:
    body = response.content
    return {
        "body": body,
        "headers": [(k, v) for k, v in response.items() if k.lower() not in _NOT_STORED_HEADERS],
        "etag": '"' + hashlib.blake2b(body, digest_size=16).hexdigest() + '"',
        "modified": int(at or time.time()),
        "expires": time.time() + settings.PTB_PAGE_CACHE_SECONDS,
    }


def _response(entry: dict) -> HttpResponse:
    response = HttpResponse(entry["body"])
    for name, value in entry["headers"]:
        response[name] = value
    response["Content-Length"] = str(len(entry["body"]))  # as CommonMiddleware sets it, which a hit skips
    return response


class _Memo:
    """This process's most recently used entries (their keys hold the version, so an entry is never stale here),
    at most ``PTB_PAGE_MEMORY_BYTES`` of bodies: a hit then costs no cache read at all."""

    def __init__(self) -> None:
        self.entries: OrderedDict[str, dict] = OrderedDict()
        self.size = 0
        self.lock = threading.Lock()

    def get(self, key: str) -> dict | None:
        with self.lock:
            entry = self.entries.get(key)
            if entry is None:
                return None
            if entry.get("expires", 0.0) < time.time():
                self.size -= len(self.entries.pop(key)["body"])
                return None
            self.entries.move_to_end(key)
            return entry

    def put(self, key: str, entry: dict) -> None:
        limit = settings.PTB_PAGE_MEMORY_BYTES
        if len(entry["body"]) > limit:
            return
        with self.lock:
            if key in self.entries:
                return
            self.entries[key] = entry
            self.size += len(entry["body"])
            while self.size > limit:
                self.size -= len(self.entries.popitem(last=False)[1]["body"])


_memo = _Memo()


class PageCacheMiddleware:
    """Django middleware (placed after WhiteNoise, before sessions): the module docstring."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        inputs = declared_inputs(request) if request.method in ("GET", "HEAD") else None
        if inputs is None:
            return self.get_response(request)
        cut_to_inputs(request, inputs)
        if not settings.PTB_PAGE_CACHE:
            return self.get_response(request)
        if not _is_anonymous_public(request):
            private = self.get_response(request)
            if not private.has_header("Cache-Control"):
                private["Cache-Control"] = "private, no-cache"
            patch_vary_headers(private, ("Cookie",))
            return private
        request.get_host()  # the ALLOWED_HOSTS check CommonMiddleware makes, which a hit does not reach
        try:
            current = version.current()
            cache = caches[version.CACHE_ALIAS]
            key = cache_key(request, current.token, inputs)
            entry = _memo.get(key) or cache.get(key)
        except Exception as exc:  # the cache server is down: serve as if there were no cache
            log.warning("page cache unavailable, serving %s uncached: %s", request.path, exc)
            return self.get_response(request)
        if entry is not None:
            _memo.put(key, entry)
            return self._answer(request, _response(entry), entry, "hit", inputs)
        return self._compute(request, cache, key, current.at, inputs)

    def _compute(self, request: HttpRequest, cache, key: str, at: float, inputs: PageInputs) -> HttpResponseBase:
        """A miss: one request computes this version's page (a lock in the cache); one that finds the lock taken
        answers the page of the previous version (``stale``) or, with none, waits for the page to appear (at
        most ``PTB_SLOT_WAIT_SECONDS``), then computes it itself."""
        latest = "ptb:latest:" + cache_key(request, "", inputs)  # the key of this request's newest stored entry
        lock = key + ":computing"
        seconds = settings.PTB_PAGE_CACHE_STALE_SECONDS
        held = False
        try:
            held = seconds <= 0 or cache.add(lock, 1, timeout=seconds)
            if not held:
                previous = cache.get(latest)
                stale = cache.get(previous) if previous else None
                if stale is not None:
                    return self._answer(request, _response(stale), stale, "stale", inputs)
                deadline = time.monotonic() + settings.PTB_SLOT_WAIT_SECONDS
                while time.monotonic() < deadline:
                    time.sleep(0.05)
                    entry = cache.get(key)
                    if entry is not None:
                        _memo.put(key, entry)
                        return self._answer(request, _response(entry), entry, "hit", inputs)
        except Exception as exc:
            log.warning("page cache: %s", exc)
        try:
            response = self.get_response(request)
            if not _storable(response):
                return response
            entry = _entry(response, at)  # type: ignore[arg-type]  # _storable: not streaming
            try:
                cache.set(key, entry, timeout=settings.PTB_PAGE_CACHE_SECONDS)
                cache.set(latest, key, timeout=settings.PTB_PAGE_CACHE_SECONDS)
            except Exception as exc:
                log.warning("page cache: could not store %s: %s", request.path, exc)
            _memo.put(key, entry)
            return self._answer(request, response, entry, "miss", inputs)
        finally:
            if held and seconds > 0:
                try:
                    cache.delete(lock)
                except Exception:
                    pass

    @staticmethod
    def _answer(request: HttpRequest, response: HttpResponseBase, entry: dict, state: str,
                inputs: PageInputs) -> HttpResponseBase:
        response["ETag"] = entry["etag"]
        response["Last-Modified"] = http_date(entry["modified"])
        response["Cache-Control"] = f"public, max-age={settings.PTB_PAGE_MAX_AGE}, must-revalidate"
        response["X-Page-Cache"] = state
        patch_vary_headers(response, (*inputs.header_names, "Cookie"))
        return get_conditional_response(request, etag=entry["etag"], last_modified=entry["modified"],
                                        response=response)


def warm(names: tuple[str, ...] | None = None) -> list[tuple[str, int, float]]:
    """Compute the most visited public pages of the current warehouse version into the cache, so that the first
    visitors after a start (``serve``) or a write (``ingest``) are served a hit instead of waiting for the one
    request that computes each page. ``names``: URL names to reverse (default ``settings.PTB_PAGE_WARM``).

    Each page goes through the whole middleware stack as an anonymous ``GET`` (``django.test.Client``, whose host
    is the first of ``ALLOWED_HOSTS`` that is not a wildcard), so it is stored exactly as a visitor's request
    would store it. Returns ``[(path, status, seconds)]`` in ``names`` order; a page that fails is logged and
    reported with its status (500 for an exception), never raised: warming is an optimisation. Does nothing and
    returns ``[]`` when the page cache is off."""
    from django.test import Client
    from django.urls import reverse

    if not settings.PTB_PAGE_CACHE:
        return []
    hosts = [h for h in settings.ALLOWED_HOSTS if h and "*" not in h and not h.startswith(".")]
    client = Client(HTTP_HOST=hosts[0] if hosts else "localhost", raise_request_exception=False)
    done = []
    for name in names if names is not None else settings.PTB_PAGE_WARM:  # type: ignore[attr-defined]
        path = reverse(name)
        started = time.monotonic()
        try:
            status = client.get(path).status_code
        except Exception as exc:
            log.warning("page cache: could not warm %s: %s", path, exc)
            status = 500
        if status != 200:
            log.warning("page cache: warming %s answered %s", path, status)
        done.append((path, status, time.monotonic() - started))
    return done
