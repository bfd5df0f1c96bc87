"""JSON API of the evaluator (django-ninja, mounted under /api/).

Staff endpoints (``/api/reruns...``, ``/api/runs/<id>/judge``; reviewers' overrides are traces.review, mounted with
the same auth): a staff session with CSRF, or ``Authorization: Token <key>``; 403 otherwise.
Worker endpoints (``/api/worker/jobs/<id>/start|progress|finish``): ``Authorization: Bearer <PTB_WORKER_TOKEN>``
and the job's own credential from its task message in ``X-PTB-Job-Credential``; their bodies and answers are the
models of evaluator.protocol, which the worker uses too (a malformed finish report is a 400 naming the field).
"""
from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.urls import reverse

from ninja import File, Form, Router, Schema, Status
from ninja.errors import HttpError
from ninja.files import UploadedFile


from . import selectors, services, workers
from .models import RerunJob
from .permissions import check_job_credential, staff_auth, worker_auth
from .protocol import (FinishAnswer, MalformedMessage, ProgressAnswer, ProgressReport, StartAnswer, StartRequest,
                       read_report)

router = Router(tags=["reruns"], auth=staff_auth)
worker_router = Router(tags=["worker"], auth=worker_auth)


class JobOut(Schema):
    """A rerun job. Scores are fractions 0..1; times UTC."""

    id: int
    kind: str
    queue: str
    run_id: str
    benchmark: str
    checkpoint: str
    status: str
    reason: str
    cancel_requested: bool
    limit: int | None
    max_tokens: int | None
    samples_done: int
    samples_total: int | None
    attempts: int
    worker_host: str
    created_by: str | None
    created_at: datetime
    started_at: datetime | None
    heartbeat_at: datetime | None
    finished_at: datetime | None
    old_score: float | None
    new_score: float | None
    evaluation_id: str
    eval_log_url: str | None
    page_url: str

    @staticmethod
    def resolve_created_by(job: RerunJob) -> str | None:
        return job.created_by.username if job.created_by else None

    @staticmethod
    def resolve_eval_log_url(job: RerunJob) -> str | None:
        return reverse("evaluator:eval_log", args=[job.pk]) if job.eval_log else None

    @staticmethod
    def resolve_page_url(job: RerunJob) -> str:
        return reverse("evaluator:job", args=[job.pk])


class RerunIn(Schema):
    run_id: str
    limit: int | None = None
    max_tokens: int | None = None
    dataset_path: str = ""
    provider: str = "auto"


class WorkersOut(Schema):
    """The Celery workers that answered a broadcast on a queue (cached a few seconds)."""

    queue: str
    workers: list[str]
    listening: bool
    error: str


def _job(job_id: int) -> RerunJob:
    job = selectors.get_job(job_id)
    if job is None:
        raise HttpError(404, f"no rerun job {job_id}")
    return job


@router.get("/reruns", response=list[JobOut], summary="Rerun jobs, newest first")
def list_jobs(request, run_id: str | None = None, status: str | None = None, limit: int = 100):
    return selectors.list_jobs(run_id=run_id, status=status, limit=min(limit, 500))


@router.post("/reruns", response={201: JobOut}, summary="Queue a re-evaluation of a run's checkpoint")
def create_job(request, payload: RerunIn):
    try:
        job = services.queue_rerun(user=request.auth, **payload.dict())
    except services.RerunRefused as exc:
        raise HttpError(400, str(exc)) from None
    except services.BrokerUnavailable as exc:
        raise HttpError(503, f"the job queue is unavailable, try again later: {exc}") from None
    return Status(201, job)


@router.get("/reruns/{job_id}", response=JobOut, summary="One rerun job")
def get_job(request, job_id: int):
    return _job(job_id)


@router.post("/reruns/{job_id}/cancel", response=JobOut, summary="Cancel a queued or running job")
def cancel_job(request, job_id: int):
    return services.cancel_job(_job(job_id), user=request.auth)


@router.post("/runs/{run_id}/judge", response={201: JobOut}, summary="Queue a judge re-run of a run (a job)")
def rerun_judge(request, run_id: str):
    try:
        job = services.queue_judge(run_id=run_id, user=request.auth)
    except services.RerunRefused as exc:
        raise HttpError(404 if str(exc).startswith("no run ") else 409, str(exc)) from None
    except services.BrokerUnavailable as exc:
        raise HttpError(503, f"the job queue is unavailable, try again later: {exc}") from None
    return Status(201, job)


@router.get("/workers", response=WorkersOut, summary="Workers listening on a queue (Celery inspect, cached)")
def list_workers(request, queue: str | None = None):
    found = workers.census(queue or settings.PTB_JOB_QUEUE)
    return {"queue": found.queue, "workers": list(found.workers), "listening": found.listening, "error": found.error}



@worker_router.post("/jobs/{job_id}/start", response=StartAnswer)
def worker_start(request, job_id: int, payload: StartRequest):
    check_job_credential(request, job_id)
    return services.worker_start(job_id, host=payload.host)


@worker_router.post("/jobs/{job_id}/progress", response=ProgressAnswer)
def worker_progress(request, job_id: int, payload: ProgressReport):
    check_job_credential(request, job_id)
    return services.worker_progress(job_id, samples_done=payload.samples_done, samples_total=payload.samples_total,
                                    log_lines=payload.log)


@worker_router.post("/jobs/{job_id}/finish", response=FinishAnswer)
def worker_finish(request, job_id: int, report: str = Form(..., description="a FinishReport as JSON"),
                  eval_log: UploadedFile | None = File(None)):
    check_job_credential(request, job_id)
    try:
        job = services.worker_finish(job_id, report=read_report(report), eval_log=eval_log,
                                     eval_log_name=eval_log.name if eval_log else "")
    except MalformedMessage as exc:
        raise HttpError(400, str(exc)) from None
    except services.LogUploadRefused as exc:
        raise HttpError(422, str(exc)) from None
    return FinishAnswer(status=job.status, reason=job.reason)
