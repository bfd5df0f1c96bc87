"""The public's "Challenge this verdict" (a form page and ``POST /api/runs/{id}/challenges``) and the staff's triage
(``/challenges/`` and ``POST /api/challenges/{id}/triage``); thin views over traces.challenges.

Anonymous: no account, a CSRF-protected form (the page lives outside the page cache's paths, so its token is the
visitor's), at most ``PTB_CHALLENGE_RATE`` challenges per address (ninja's throttle on the shared "throttle" cache;
over it: 429 with Retry-After). Nothing a visitor wrote is shown publicly before staff accept it.
"""
from __future__ import annotations

import math
from datetime import datetime

from django.conf import settings
from django.contrib import messages
from django.contrib.admin.models import CHANGE, LogEntry
from django.core.cache import caches
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST
from ninja import Router, Schema, Status
from ninja.errors import HttpError
from ninja.throttling import SimpleRateThrottle

from ptbsite.access import staff_required

from . import challenges, selectors, services
from .verdicts import kind_text


class ChallengeThrottle(SimpleRateThrottle):
    """``PTB_CHALLENGE_RATE`` challenges per sender address (ninja's client address: REMOTE_ADDR, or
    X-Forwarded-For behind ``NINJA_NUM_PROXIES`` proxies), counted in the "throttle" cache."""

    scope = "challenge"

    def __init__(self) -> None:
        self.cache = caches["throttle"]
        super().__init__(rate=settings.PTB_CHALLENGE_RATE)

    def get_cache_key(self, request: HttpRequest) -> str | None:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


def _retry_after(throttle: ChallengeThrottle) -> str:
    return str(max(1, math.ceil(throttle.wait() or 1)))


public_router = Router(tags=["challenges"])
staff_router = Router(tags=["reviews"])


class ChallengeIn(Schema):
    question: str
    claim: str
    steps: list[int] = []
    contact: str | None = None


class ChallengeOut(Schema):
    id: str
    run_id: str
    question: str
    status: str
    status_text: str
    steps: list[int]
    created_at: datetime


class TriageIn(Schema):
    action: str
    reason: str
    flagged: bool | None = None


def _out(c: challenges.Challenge) -> dict:
    return {"id": c.id, "run_id": c.run_id, "question": c.kind, "status": c.status, "status_text": c.status_text,
            "steps": c.steps, "created_at": c.created_at}


@public_router.post("/runs/{run_id}/challenges", response={201: ChallengeOut}, throttle=[ChallengeThrottle()],
                    summary="Challenge a run's verdict (anonymous)")
def create_challenge(request, run_id: str, payload: ChallengeIn):
    """A visitor's challenge of the verdict on ``question`` (``contamination``, ``disallowed_model``, ... : a
    question of the run): ``claim`` plain text (20 to 2,000 characters), ``steps`` agent-trace steps it cites (at
    most 20, each a step of the run), ``contact`` optional (staff only). Answers 201 with its id and status
    ``open``: it is shown to staff, and to the public only once they accept it. 404 unknown run, 422 a field
    refused, 429 over the per-address rate (``Retry-After``)."""
    try:
        c = challenges.submit_challenge(run_id=run_id, kind=payload.question, claim=payload.claim,
                                        steps=payload.steps, contact=payload.contact,
                                        address=ChallengeThrottle().get_ident(request) or "")
    except services.UnknownRun as exc:
        raise HttpError(404, str(exc)) from None
    except challenges.ChallengeRefused as exc:
        raise HttpError(422, str(exc)) from None
    return Status(201, _out(c))


@require_http_methods(["GET", "POST"])
def challenge_form(request: HttpRequest, run_id: str) -> HttpResponse:
    """``/challenges/runs/<run>/new``: the "Challenge this verdict" form (question, claim, cited steps, optional
    contact); POST stores it (rate-limited as the API: 429) and returns to the run page with a notice."""
    run = selectors.get_run(run_id)
    if run is None or not run.verdict_labels:
        raise Http404(f"no judged run {run_id}")
    questions = [(k, kind_text(k)) for k in run.verdict_labels]
    form = {"question": request.GET.get("question", ""), "claim": "", "steps": "", "contact": ""}
    error = None
    if request.method == "POST":
        form = {k: request.POST.get(k, "") for k in form}
        throttle = ChallengeThrottle()
        if not throttle.allow_request(request):
            response = render(request, "traces/challenge_form.html", {
                "run": run, "questions": questions, "form": form, "limits": challenges,
                "error": "Too many challenges from your address: try again later."}, status=429)
            response["Retry-After"] = _retry_after(throttle)
            return response
        try:
            challenges.submit_challenge(run_id=run_id, kind=form["question"], claim=form["claim"],
                                        steps=form["steps"], contact=form["contact"],
                                        address=throttle.get_ident(request) or "")
        except challenges.ChallengeRefused as exc:
            error = str(exc)
        else:
            messages.success(request, "Thank you: your challenge is with the reviewers. It is shown here once they "
                                      "accept it.")
            # The run page from its top, where the notice is (opened at its judge panel, the notice was off screen).
            return redirect(reverse("traces:run", args=[run_id]))
    return render(request, "traces/challenge_form.html", {
        "run": run, "questions": questions, "form": form, "error": error, "limits": challenges},
        status=400 if error else 200)


@staff_required
def challenge_list(request: HttpRequest) -> HttpResponse:
    """``/challenges/?status=open|accepted|rejected|resolved|all`` (staff): the challenges, each under its run's
    title, with their claims, contacts and audit log, and the triage forms."""
    return _challenges_page(request, status=request.GET.get("status", "open"))


def _challenges_page(request: HttpRequest, *, status: str, error: str = "", code: int = 200) -> HttpResponse:
    """The challenges list with ``status`` (or every one: "all"), an ``error`` of a refused triage above it."""
    found = challenges.challenges(status=None if status == "all" else status)
    titles = selectors.run_titles(c.run_id for c in found)
    return render(request, "traces/challenges.html", {
        "challenges": [(c, titles.get(c.run_id, "")) for c in found], "status": status, "error": error,
        "statuses": ("open", "accepted", "rejected", "resolved", "all")}, status=code)


@require_POST
@staff_required
def challenge_triage(request: HttpRequest, challenge_id: str) -> HttpResponse:
    """``POST /challenges/<id>/triage`` (staff): action accepted | rejected | resolved, reason, and for resolved
    ``flagged`` true|false (the override it makes). A refused triage answers 400 with the list of every challenge
    and the reason above it (the site's page, with its header and a way back)."""
    flagged = {"true": True, "false": False}.get(request.POST.get("flagged", ""))
    try:
        c = challenges.triage_challenge(challenge_id=challenge_id, action=request.POST.get("action", ""),
                                        reason=request.POST.get("reason", ""), reviewer=request.user.username,
                                        flagged=flagged)
    except (challenges.ChallengeRefused, services.UnknownRun) as exc:
        return _challenges_page(request, status="all", error=f"challenge {challenge_id}: {exc}", code=400)
    LogEntry.objects.create(user_id=request.user.pk, content_type=None, object_id=c.run_id,
                            object_repr=f"challenge {c.id} of run {c.run_id}"[:200], action_flag=CHANGE,
                            change_message=f"challenge {c.status}: {request.POST.get('reason', '')}"[:2000])
    messages.success(request, f"Challenge {c.id}: {c.status_text}.")
    return redirect(reverse("traces:challenges") + f"?status={c.status}")


@staff_router.get("/challenges", response=list[challenges.Challenge], summary="Challenges of verdicts (staff)")
def list_challenges(request, status: str = "open"):
    """Every challenge with ``status`` (open | accepted | rejected | resolved | all), newest first, with its
    contact and audit log (``events``)."""
    return challenges.challenges(status=None if status == "all" else status)


@staff_router.post("/challenges/{challenge_id}/triage", response={200: challenges.Challenge},
                   summary="Accept, reject or resolve a challenge (staff)")
def triage(request, challenge_id: str, payload: TriageIn):
    """``action`` accepted | rejected | resolved with a ``reason``; resolved takes ``flagged`` and records a
    reviewer's override of the question (linked from the audit log by its time). 400 for a refused triage."""
    try:
        return challenges.triage_challenge(challenge_id=challenge_id, action=payload.action, reason=payload.reason,
                                           reviewer=request.auth.username, flagged=payload.flagged)
    except (challenges.ChallengeRefused, services.UnknownRun) as exc:
        raise HttpError(400, str(exc)) from None
