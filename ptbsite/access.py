"""Who may see a staff page: the one check every app's staff views share (403, never a login redirect: an API client
or htmx request must see the refusal)."""
from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.http import HttpRequest, HttpResponse, HttpResponseForbidden


def staff_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Answer 403 to anonymous and non-staff users (CSRF on POST is Django's middleware's job)."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not (request.user.is_authenticated and request.user.is_staff):
            return HttpResponseForbidden("Staff only.")
        return view(request, *args, **kwargs)

    return wrapper
