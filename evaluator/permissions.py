"""Who may do what: staff for every rerun and review page and endpoint (403 otherwise, never a redirect to a
login page: an API client or htmx request must see the refusal); workers by the worker token and, for each job,
the job's own credential (django.core.signing, issued when the job is queued, valid PTB_JOB_CREDENTIAL_SECONDS)."""
from __future__ import annotations

import hmac

from axes.handlers.proxy import AxesProxyHandler
from django.conf import settings
from django.contrib.auth.signals import user_login_failed
from django.core import signing
from django.http import HttpRequest
from django.utils import timezone
from ninja.errors import HttpError
from ninja.utils import check_csrf

from ptbsite.access import API_TOKEN_CREDENTIAL
from ptbsite.access import staff_required  # noqa: F401  (the staff pages' check, shared with traces)

from .models import ApiToken, RerunJob

CREDENTIAL_SALT = "evaluator.worker-job"
CREDENTIAL_HEADER = "X-PTB-Job-Credential"


def staff_auth(request: HttpRequest):
    """django-ninja auth: ``Authorization: Token <key>`` of a staff user's ApiToken, or a staff session (with
    the CSRF token on unsafe methods). Returns the user; raises HttpError 403 otherwise, and 429 once the
    client's address sent ``AXES_FAILURE_LIMIT`` bad tokens (django-axes counts them as failed sign-ins, per
    address: ptbsite.access.lockout_parameters), the right token too, until the cool-off or ``axes_reset``."""
    header = request.headers.get("Authorization", "")
    if header[:6].lower() == "token ":
        credentials = {API_TOKEN_CREDENTIAL: True}
        if not AxesProxyHandler.is_allowed(request, credentials):  # too many bad tokens from this address
            raise HttpError(429, f"too many failed sign-ins from this address; try again in "
                                 f"{int(settings.AXES_COOLOFF_TIME.total_seconds())} s")
        token = ApiToken.objects.select_related("user").filter(key_sha256=ApiToken.digest(header[6:].strip())).first()
        if token is None or not (token.user.is_active and token.user.is_staff):
            user_login_failed.send(sender=__name__, credentials=credentials, request=request)
            raise HttpError(403, "invalid API token, or not a staff user's")
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
        return token.user
    user = request.user
    if not (user.is_authenticated and user.is_staff):
        raise HttpError(403, "staff only: sign in as staff or send Authorization: Token <key>")
    if request.method not in ("GET", "HEAD", "OPTIONS") and check_csrf(request) is not None:
        raise HttpError(403, "CSRF check failed")
    return user


def worker_auth(request: HttpRequest) -> bool:
    """django-ninja auth for workers: ``Authorization: Bearer <PTB_WORKER_TOKEN>`` (403 otherwise, and always
    when no token is configured)."""
    expected = settings.PTB_WORKER_TOKEN
    header = request.headers.get("Authorization", "")
    given = header[7:].strip() if header[:7].lower() == "bearer " else ""
    if not expected or not hmac.compare_digest(given.encode(), expected.encode()):
        raise HttpError(403, "worker token required")
    return True


def issue_job_credential(job: RerunJob) -> str:
    """The job's worker credential: ``{"job": id, "task": celery task id}`` signed with SECRET_KEY (salt
    ``evaluator.worker-job``) and timestamped; it travels in the task message instead of the worker token."""
    return signing.dumps({"job": job.pk, "task": job.celery_task_id}, salt=CREDENTIAL_SALT, compress=True)


def check_job_credential(request: HttpRequest, job_id: int) -> RerunJob:
    """The job a worker call is about, once its ``X-PTB-Job-Credential`` header proves the call is for it.

    Raises HttpError 403 for a missing, forged (bad signature), expired (older than PTB_JOB_CREDENTIAL_SECONDS)
    credential, one of another job, or of an earlier queuing of this job; 404 for an unknown job.
    """
    text = request.headers.get(CREDENTIAL_HEADER, "")
    try:
        data = signing.loads(text, salt=CREDENTIAL_SALT, max_age=settings.PTB_JOB_CREDENTIAL_SECONDS)
    except signing.SignatureExpired:
        raise HttpError(403, f"the job credential expired (valid {settings.PTB_JOB_CREDENTIAL_SECONDS} s)") from None
    except signing.BadSignature:
        raise HttpError(403, "invalid job credential") from None
    if not isinstance(data, dict) or data.get("job") != job_id:
        raise HttpError(403, "the job credential is for another job")
    job = RerunJob.objects.filter(pk=job_id).first()
    if job is None:
        raise HttpError(404, f"no rerun job {job_id}")
    if data.get("task") != job.celery_task_id:
        raise HttpError(403, "the job credential is for an earlier delivery of this job")
    return job
