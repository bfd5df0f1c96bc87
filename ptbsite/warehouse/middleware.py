"""Django middleware holding the warehouse open for one request (settings.MIDDLEWARE)."""
from __future__ import annotations

from . import connections


class RequestScopeMiddleware:
    """Django middleware: every request runs inside :func:`ptbsite.warehouse.hold_open`."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        with connections.hold_open():
            return self.get_response(request)
