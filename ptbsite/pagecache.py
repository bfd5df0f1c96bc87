"""Public pages computed once per warehouse version: a Django middleware serving them from Django's cache.

Which requests: ``GET`` and ``HEAD`` of the public pages whose only input is the warehouse (and the request): the
leaderboard ``/`` and its htmx table, ``/plots/...``, ``/analysis/``, ``/runs/``, ``/runs/<id>/`` and its steps
and step texts, and their JSON twins under ``/api/`` (leaderboard, plots, analysis, runs). Never ``/admin/``,
``/reruns/`` (jobs), the workers' ``/api/worker/``, a write, or anything a user signs in for: a request that carries
a session cookie (signed-in users, so every staff page with its staff buttons and CSRF tokens), a ``messages``
cookie or an ``Authorization`` header is neither served from the cache nor stored, and such a page is marked
``Cache-Control: private``. So the staff bit of the key is always "anonymous": staff pages are never cached.

The key: method, path, the query sorted by name, ``HX-Request`` (htmx partials get their own entries) and the
warehouse version (:mod:`ptbsite.warehouse.version`, bumped after every committed write by whichever process
wrote). The version is read from a small file and the cache, without opening the warehouse, so a hit never opens
it. Only 200 answers without cookies and at most ``PTB_PAGE_CACHE_MAX_BYTES`` are stored, for
``PTB_PAGE_CACHE_SECONDS`` at most (a safety net: a new version makes an entry unreachable at once).

Every answer of this kind carries ``ETag`` (a hash of the body), ``Last-Modified`` (the last write's time),
``Vary: HX-Request, Cookie`` and ``Cache-Control: public, max-age=PTB_PAGE_MAX_AGE, must-revalidate``; a request
whose ``If-None-Match`` (or ``If-Modified-Since``) matches gets 304. ``X-Page-Cache`` says ``hit``, ``miss`` or
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
import logging
import re
import threading
import time
from collections import OrderedDict
from urllib.parse import urlencode

from django.conf import settings
from django.core.cache import caches
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.utils.cache import get_conditional_response, patch_vary_headers
from django.utils.http import http_date

from .warehouse import version

log = logging.getLogger(__name__)

# The public pages computed from the warehouse alone, and their JSON twins (module docstring).
CACHED_PATHS = re.compile(
    r"^/(?:$|leaderboard/table$|plots/|analysis/|runs/|search/|compare/"
    r"|api/(?:leaderboard|plots/|analysis/|runs(?:/|$)|search$|compare$))"
)
_NOT_STORED_HEADERS = {"content-length", "date", "set-cookie", "etag", "last-modified", "cache-control"}


def _is_anonymous_public(request: HttpRequest) -> bool:
    """Whether the request may be answered from (and stored into) the anonymous cache."""
    cookies = request.COOKIES
    return (settings.SESSION_COOKIE_NAME not in cookies and "messages" not in cookies
            and "HTTP_AUTHORIZATION" not in request.META)


def cache_key(request: HttpRequest, token: str) -> str:
    """The cache key of ``request`` at warehouse version ``token``: a hash of method, path, the query sorted by
    name (repeated values keep their order), ``HX-Request`` and the token."""
    query = urlencode(sorted(request.GET.lists()), doseq=True)
    htmx = "1" if request.headers.get("HX-Request") else "0"
    raw = "\n".join((request.method or "GET", request.path, query, htmx, "anonymous", token))
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
        if not (settings.PTB_PAGE_CACHE and request.method in ("GET", "HEAD") and CACHED_PATHS.match(request.path)):
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
            key = cache_key(request, current.token)
            entry = _memo.get(key) or cache.get(key)
        except Exception as exc:  # the cache server is down: serve as if there were no cache
            log.warning("page cache unavailable, serving %s uncached: %s", request.path, exc)
            return self.get_response(request)
        if entry is not None:
            _memo.put(key, entry)
            return self._answer(request, _response(entry), entry, "hit")
        return self._compute(request, cache, key, current.at)

    def _compute(self, request: HttpRequest, cache, key: str, at: float) -> HttpResponseBase:
        """A miss: one request computes this version's page (a lock in the cache); one that finds the lock taken
        answers the page of the previous version (``stale``) or, with none, waits for the page to appear (at
        most ``PTB_SLOT_WAIT_SECONDS``), then computes it itself."""
        latest = "ptb:latest:" + cache_key(request, "")  # the key of this request's newest stored entry
        lock = key + ":computing"
        seconds = settings.PTB_PAGE_CACHE_STALE_SECONDS
        held = False
        try:
            held = seconds <= 0 or cache.add(lock, 1, timeout=seconds)
            if not held:
                previous = cache.get(latest)
                stale = cache.get(previous) if previous else None
                if stale is not None:
                    return self._answer(request, _response(stale), stale, "stale")
                deadline = time.monotonic() + settings.PTB_SLOT_WAIT_SECONDS
                while time.monotonic() < deadline:
                    time.sleep(0.05)
                    entry = cache.get(key)
                    if entry is not None:
                        _memo.put(key, entry)
                        return self._answer(request, _response(entry), entry, "hit")
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
            return self._answer(request, response, entry, "miss")
        finally:
            if held and seconds > 0:
                try:
                    cache.delete(lock)
                except Exception:
                    pass

    @staticmethod
    def _answer(request: HttpRequest, response: HttpResponseBase, entry: dict, state: str) -> HttpResponseBase:
        response["ETag"] = entry["etag"]
        response["Last-Modified"] = http_date(entry["modified"])
        response["Cache-Control"] = f"public, max-age={settings.PTB_PAGE_MAX_AGE}, must-revalidate"
        response["X-Page-Cache"] = state
        patch_vary_headers(response, ("HX-Request", "Cookie"))
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
