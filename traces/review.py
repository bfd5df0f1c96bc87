"""Verdict review, a traces concept: a reviewer overrides a judge's verdict on a run, with a reason, from the run
page's form (:func:`run_override`) or the JSON API (:data:`router`), both through :func:`record_override` (the
audit log and the admin's history); and how often reviewers agreed with the judge. The write is
``traces.services.override_verdict``, the read ``traces.selectors.override_agreement``.

Staff only. The HTML view checks the session (``ptbsite.access.staff_required``: 403, never a login redirect); the API router carries no auth
of its own: ``ptbsite/api.py`` mounts it with the project's staff auth (staff API tokens belong to the evaluator
app, which traces does not import).
"""
from __future__ import annotations

from datetime import datetime

from django.contrib import messages
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.contenttypes.models import ContentType
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST
from ninja import Router, Schema, Status
from ninja.errors import HttpError

from ptbsite.access import staff_required

from . import selectors, services
from .models import VerdictOverride
from .verdicts import kind_text

router = Router(tags=["reviews"])


class OverrideIn(Schema):
    kind: str
    flagged: bool
    reason: str


class OverrideOut(Schema):
    kind: str
    previous: str | None
    new: str
    flagged: bool
    reason: str
    reviewer: str
    created_at: datetime


class AgreementOut(Schema):
    kind: str
    agreed: int
    disagreed: int
    judge_error: int


def record_override(*, run_id: str, kind: str, flagged: bool, reason: str, user: AbstractBaseUser) -> dict:
    """A reviewer's override of a run's verdict, from the run page's form or the API alike: the warehouse's audit
    log (``traces.services.override_verdict``, whose row it returns) and the admin's history ("Recent actions":
    a "Verdict override", ``traces.models``, no table, named after its run and kind, with the reason).

    Raises:
        services.UnknownRun: no such run. ValueError: a kind no override applies to, or an empty reason.
    """
    row = services.override_verdict(run_id=run_id, kind=kind, flagged=flagged, reason=reason,
                                    reviewer=user.get_username())
    verdict = "flagged" if flagged else "clean"
    run = selectors.get_run(run_id)
    LogEntry.objects.create(user_id=user.pk, content_type=ContentType.objects.get_for_model(VerdictOverride),
                            object_id=run_id, object_repr=f"{kind_text(kind)} of {run.title if run else run_id}: "
                                                          f"{verdict}"[:200], action_flag=CHANGE,
                            change_message=f"{override_said(kind, flagged)} ({reason})"[:2000])
    return row


def override_said(kind: str, flagged: bool) -> str:
    """An override in words: ``Contamination overridden: flagged``."""
    return f"{kind_text(kind)} overridden: {'flagged' if flagged else 'clean'}"


@require_POST
@staff_required
def run_override(request: HttpRequest, run_id: str) -> HttpResponse:
    """``POST /reruns/runs/<run>/override`` (kind, flagged true|false, reason): a reviewer's verdict; back to the
    run page's override log. 400 (text) for a value the service refuses, 404 for an unknown run."""
    kind, flagged = request.POST.get("kind", ""), request.POST.get("flagged") == "true"
    try:
        record_override(run_id=run_id, kind=kind, flagged=flagged, reason=request.POST.get("reason", ""),
                        user=request.user)
    except services.UnknownRun as exc:
        raise Http404(str(exc)) from None
    except ValueError as exc:
        return HttpResponse(f"Not stored: {exc}", status=400, content_type="text/plain")
    messages.success(request, f"{override_said(kind, flagged)}. The reason is in the override log below.")
    return redirect(reverse("traces:run", args=[run_id]) + "#override-log")


@router.post("/runs/{run_id}/overrides", response={201: OverrideOut}, summary="Override a run's verdict")
def override(request, run_id: str, payload: OverrideIn):
    """A reviewer's verdict (``kind`` contamination | disallowed_model | disallowed_api_usage, ``flagged``, a
    written ``reason``), as the run page's form records it (:func:`record_override`, the admin's history included): 201 with the stored
    override, 400 for a value the service refuses, 404 for an unknown run."""
    try:
        row = record_override(run_id=run_id, kind=payload.kind, flagged=payload.flagged, reason=payload.reason,
                              user=request.auth)
    except services.UnknownRun as exc:
        raise HttpError(404, str(exc)) from None
    except ValueError as exc:
        raise HttpError(400, str(exc)) from None
    return Status(201, row)


@router.get("/reviews/agreement", response=list[AgreementOut], summary="Judge vs reviewer agreement per kind")
def agreement(request):
    return [{"kind": kind, **counts} for kind, counts in selectors.override_agreement().items()]
