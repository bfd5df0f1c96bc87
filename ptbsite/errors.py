"""The site's own 400 and 404 pages (``handler400``, ``handler404`` in ``ptbsite.urls``): the site's header and
footer, and what was wrong with the address in words when the page said so.

Django's defaults render ``400.html`` without the request (no header links, no account, no footer) and give
``404.html`` only the path, so ``/?base_model=nope`` said "There is no page at /". Only the messages the site's
own code writes for a visitor are shown: a ``BadRequest`` (``ptbsite.query``: "?step= must be a whole number ...")
and an ``Http404`` with a text ("unknown base model 'nope'; one of ..."); never a ``SuspiciousOperation``'s or the
URL resolver's. The message may quote the visitor's value: the template escapes it, and it is cut at
``REASON_CHARS``.
"""
from __future__ import annotations

from django.core.exceptions import BadRequest
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import Resolver404

REASON_CHARS = 300


def _reason(exception: Exception | None, shown: type[Exception]) -> str:
    """The exception's message when it is of the ``shown`` kind and its first argument is a text, else ""; cut at
    ``REASON_CHARS`` characters."""
    if not isinstance(exception, shown) or isinstance(exception, Resolver404) or not exception.args:
        return ""
    message = exception.args[0]
    if not isinstance(message, str):
        return ""
    return message if len(message) <= REASON_CHARS else message[:REASON_CHARS - 1] + "…"


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """400: ``400.html`` with the request (header, footer) and ``reason``, the ``BadRequest``'s message."""
    return render(request, "400.html", {"reason": _reason(exception, BadRequest)}, status=400)


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """404: ``404.html`` with ``request_path`` (the path asked for) and ``reason``, the ``Http404``'s message
    ("no run abc", "unknown base model 'nope'; one of ...")."""
    return render(request, "404.html", {"request_path": request.path, "reason": _reason(exception, Http404)},
                  status=404)
