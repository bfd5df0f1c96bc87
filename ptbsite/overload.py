"""Shedding load instead of queueing it: at most ``PTB_MAX_INFLIGHT`` requests per server process compute a page
at once; a request that waited ``PTB_SLOT_WAIT_SECONDS`` for a slot answers 503 with ``Retry-After``
(``PTB_OVERLOAD_RETRY_AFTER`` seconds) at once instead of joining a queue that grows for as long as the burst lasts.

``ConcurrencyLimitMiddleware`` sits after WhiteNoise and the page cache, so static files and cached pages never
take a slot and still answer under overload; ``manage.py serve`` runs gthread workers with more threads than slots,
so that those requests find a free thread. The workers' callbacks (``/api/worker/``: a finished job's result) are
never shed, nor are requests under ``STATIC_URL`` (WhiteNoise answers those that exist before this middleware).
"""
from __future__ import annotations

import logging
import threading

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse

log = logging.getLogger(__name__)

EXEMPT_PREFIXES = ("/api/worker/",)


def overloaded(request: HttpRequest) -> HttpResponse:
    """The 503 of a shed request: JSON ``{"detail": ...}`` under ``/api/``, a short page otherwise, with
    ``Retry-After`` and ``Cache-Control: no-store``."""
    message = "The server is busy; try again in a moment."
    response: HttpResponse
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": message}, status=503)
    else:
        response = HttpResponse(f"<!doctype html><title>Busy</title><p>{message}</p>", status=503,
                                content_type="text/html; charset=utf-8")
    response["Retry-After"] = str(settings.PTB_OVERLOAD_RETRY_AFTER)
    response["Cache-Control"] = "no-store"
    return response


class ConcurrencyLimitMiddleware:
    """Django middleware: a semaphore of ``PTB_MAX_INFLIGHT`` slots per process (0: no limit); module docstring."""

    def __init__(self, get_response):
        self.get_response = get_response
        limit = int(settings.PTB_MAX_INFLIGHT)
        self.slots = threading.BoundedSemaphore(limit) if limit > 0 else None
        self.exempt = (*EXEMPT_PREFIXES, "/" + settings.STATIC_URL.lstrip("/"))  # a static file WhiteNoise lacks

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if self.slots is None or request.path.startswith(self.exempt):
            return self.get_response(request)
        if not self.slots.acquire(timeout=settings.PTB_SLOT_WAIT_SECONDS):
            log.warning("503 (overloaded: %s requests in flight) for %s", settings.PTB_MAX_INFLIGHT, request.path)
            return overloaded(request)
        try:
            return self.get_response(request)
        finally:
            self.slots.release()
