"""Who may see a staff page: the one check every app's staff views share (403, never a login redirect: an API client
or htmx request must see the refusal); and what login throttling (django-axes) counts failures by."""
from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseForbidden


def staff_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Answer 403 to anonymous and non-staff users (CSRF on POST is Django's middleware's job)."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not (request.user.is_authenticated and request.user.is_staff):
            return HttpResponseForbidden("Staff only.")
        return view(request, *args, **kwargs)

    return wrapper


API_TOKEN_CREDENTIAL = "api_token"  # the credentials key staff API token checks send with axes' calls


def lockout_parameters(request_or_attempt: Any, credentials: dict | None = None) -> list[str]:
    """django-axes ``AXES_LOCKOUT_PARAMETERS``: failed sign-ins count per username and, separately, per client
    address (each reaching ``AXES_FAILURE_LIMIT`` locks out); a guessed API token names no user, so it counts per
    address only (``credentials`` holding ``api_token``, as evaluator.permissions.staff_auth sends)."""
    if credentials and credentials.get(API_TOKEN_CREDENTIAL):
        return ["ip_address"]
    return ["username", "ip_address"]
