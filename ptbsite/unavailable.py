"""Services that may be down answer 503 with a clear message, never 500: the warehouse and the Celery broker.

``ServiceUnavailableMiddleware`` turns ``WarehouseUnavailable`` and ``BrokerUnavailable`` raised by a page into a
503 page; ``add_api_handlers`` does the same for the JSON API (``{"detail": message}``). Both set
``Retry-After``.
"""
from __future__ import annotations

import logging

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from ninja import NinjaAPI

from .warehouse import WarehouseUnavailable

log = logging.getLogger(__name__)
RETRY_AFTER_S = 5


class BrokerUnavailable(RuntimeError):
    """The Celery broker cannot be reached, so a job cannot be queued; the message says so to the user."""


UNAVAILABLE = (WarehouseUnavailable, BrokerUnavailable)


class ServiceUnavailableMiddleware:
    """A page that raises WarehouseUnavailable or BrokerUnavailable answers 503 with the exception's message."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, UNAVAILABLE):
            return None
        log.warning("503 for %s: %s", request.path, exception)
        response = render(request, "unavailable.html", {"message": str(exception)}, status=503)
        response["Retry-After"] = str(RETRY_AFTER_S)
        return response


def add_api_handlers(api: NinjaAPI) -> None:
    """Register the 503 answers on the JSON API."""

    def unavailable(request: HttpRequest, exc: Exception) -> HttpResponse:
        log.warning("503 for %s: %s", request.path, exc)
        response = api.create_response(request, {"detail": str(exc)}, status=503)
        response["Retry-After"] = str(RETRY_AFTER_S)
        return response

    for exc_class in UNAVAILABLE:
        api.add_exception_handler(exc_class, unavailable)  # type: ignore[arg-type]  # any of UNAVAILABLE
