"""Writes of the evaluator app: queue, cancel and re-queue rerun jobs, take the workers' reports, fail stale jobs.

Runs are read through traces.selectors and results written through traces.services only. Every status change
is a conditional UPDATE (``filter(pk=..., status=...).update(...)``), so a cancel, a stale-job reaper and a
worker's report racing each other cannot both win.
"""
from __future__ import annotations

import json
import os
import re
import uuid
from datetime import timedelta
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.db.models import F, Q, Value
from django.db.models.functions import Concat
from django.utils import timezone
from kombu.exceptions import OperationalError

from ptbsite.celery import app as celery_app
from traces import selectors as run_selectors
from traces import services as run_services
from traces.redaction import Redactor

from .models import RerunJob

TASK_NAME = "evaluator.evaluate_rerun"
MAX_ATTEMPTS = 2  # deliveries of one job: the first, and one retry after a lost worker
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class RerunRefused(ValueError):
    """The job cannot be queued or changed (unknown run, bad settings, job already finished); says why."""


class BrokerUnavailable(RuntimeError):
    """The Celery broker refused the job; the job is stored as failed with this reason."""


def _now():
    return timezone.now()


def _log_line(text: str) -> str:
    return f"{_now():%Y-%m-%d %H:%M:%S} {text}\n"


def _redacted(value: Any) -> Any:
    """A worker's text or JSON-shaped value with secrets redacted (traces.redaction): workers' logs, reasons and
    provenance can quote environment dumps or error messages holding keys."""
    redact = Redactor.from_environ(os.environ).redact
    if isinstance(value, str):
        return redact(value)
    return json.loads(redact(json.dumps(value)))


def _append_log(job_id: int, *lines: str) -> None:
    if lines:
        text = _redacted("".join(_log_line(x) for x in lines))
        RerunJob.objects.filter(pk=job_id).update(log=Concat(F("log"), Value(text)))


def job_message(job: RerunJob) -> dict[str, Any]:
    """The Celery task message: everything a worker on another machine needs (evaluator.tasks.evaluate_rerun).

    Shape: {job_id, run_id, benchmark, checkpoint (path on the worker), limit, max_tokens, dataset_path,
    provider, api_base (PTB_PUBLIC_URL), worker_token, heartbeat_s, timeout_s}; None/"" where unset.
    """
    return {
        "job_id": job.pk, "run_id": job.run_id, "benchmark": job.benchmark, "checkpoint": job.checkpoint,
        "limit": job.limit, "max_tokens": job.max_tokens, "dataset_path": job.dataset_path or None,
        "provider": job.provider, "api_base": settings.PTB_PUBLIC_URL, "worker_token": settings.PTB_WORKER_TOKEN,
        "heartbeat_s": settings.PTB_JOB_HEARTBEAT_SECONDS, "timeout_s": settings.PTB_JOB_TIMEOUT_SECONDS,
    }


def _publish(job: RerunJob) -> RerunJob:
    """Send the job to the broker; on a broker error fail the job and raise BrokerUnavailable."""
    try:
        with celery_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1)
            celery_app.send_task(TASK_NAME, args=[job_message(job)], task_id=job.celery_task_id,
                                 connection=conn, retry=False)
    except (OperationalError, OSError) as exc:
        reason = f"broker unavailable ({celery_app.conf.broker_url.split('@')[-1]}): {exc}"
        RerunJob.objects.filter(pk=job.pk).update(status=RerunJob.Status.FAILED, reason=reason, finished_at=_now())
        _append_log(job.pk, reason)
        raise BrokerUnavailable(reason) from exc
    _append_log(job.pk, f"queued as Celery task {job.celery_task_id}")
    job.refresh_from_db()
    return job


def queue_rerun(
    *, run_id: str, user=None, limit: int | None = None, max_tokens: int | None = None,
    dataset_path: str = "", provider: str = "auto",
) -> RerunJob:
    """Create a RerunJob for a run's checkpoint and queue its Celery task; return the job.

    ``limit``: samples (None: all); ``max_tokens``: None runs the benchmark's retry ladder; ``dataset_path``:
    a local JSONL on the worker replacing the benchmark's dataset. ``old_score`` is the run's current score.

    Raises:
        RerunRefused: unknown run or bad settings (nothing stored).
        BrokerUnavailable: the broker refused; the job is stored as failed with the reason.
    """
    if provider not in ("auto", "vllm", "hf"):
        raise RerunRefused(f"provider must be auto, vllm or hf, not {provider!r}")
    for name, number in (("limit", limit), ("max_tokens", max_tokens)):
        if number is not None and number < 1:
            raise RerunRefused(f"{name} must be a positive number, not {number}")
    run = run_selectors.get_run(run_id)
    if run is None:
        raise RerunRefused(f"no run {run_id}")
    checkpoint = run_selectors.checkpoint_path(run_id)
    job = RerunJob.objects.create(
        run_id=run.id, benchmark=run.benchmark, checkpoint=str(checkpoint), limit=limit, max_tokens=max_tokens,
        dataset_path=dataset_path.strip(), provider=provider, created_by=user if user and user.pk else None,
        old_score=None if run.score is None else run.score / 100, celery_task_id=str(uuid.uuid4()),
    )
    return _publish(job)


def requeue_job(job: RerunJob, *, user=None) -> RerunJob:
    """A new job with the same run and settings as a finished one (the old job stays as it was)."""
    if job.is_active:
        raise RerunRefused(f"job {job.pk} is still {job.status}")
    return queue_rerun(run_id=job.run_id, user=user, limit=job.limit, max_tokens=job.max_tokens,
                       dataset_path=job.dataset_path, provider=job.provider)


def cancel_job(job: RerunJob, *, user=None) -> RerunJob:
    """Cancel a job: a queued one ends cancelled at once (a worker that later receives it does nothing); a
    running one is asked to stop, and the worker ends it cancelled before its next sample. A finished job is
    returned unchanged."""
    who = getattr(user, "username", None) or "command line"
    if RerunJob.objects.filter(pk=job.pk, status=RerunJob.Status.QUEUED).update(
            status=RerunJob.Status.CANCELLED, cancel_requested=True, reason=f"cancelled by {who} while queued",
            finished_at=_now()):
        _append_log(job.pk, f"cancelled by {who} while queued")
    elif RerunJob.objects.filter(pk=job.pk, status=RerunJob.Status.RUNNING, cancel_requested=False).update(
            cancel_requested=True):
        _append_log(job.pk, f"cancel requested by {who}; the worker stops before its next sample")
    job.refresh_from_db()
    return job


def reap_stale_jobs() -> list[int]:
    """End every running job whose last heartbeat is older than PTB_JOB_STALE_SECONDS (its worker died, was
    killed, or lost the network): failed ("worker lost: ..."), or cancelled if a cancel was pending. Returns the
    ids ended. Called by ``manage.py reap_jobs`` and whenever a job page or the jobs API is read."""
    cutoff = _now() - timedelta(seconds=settings.PTB_JOB_STALE_SECONDS)
    ended = []
    stale = RerunJob.objects.filter(status=RerunJob.Status.RUNNING).filter(
        Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, started_at__lt=cutoff))
    for job in stale:
        since = job.heartbeat_at or job.started_at
        lost = f"worker lost: no heartbeat since {since:%Y-%m-%d %H:%M:%S} UTC (host {job.worker_host or 'unknown'})"
        status = RerunJob.Status.CANCELLED if job.cancel_requested else RerunJob.Status.FAILED
        reason = f"cancelled; {lost}" if job.cancel_requested else lost
        if RerunJob.objects.filter(pk=job.pk, status=RerunJob.Status.RUNNING, heartbeat_at=job.heartbeat_at).update(
                status=status, reason=reason, finished_at=_now()):
            _append_log(job.pk, reason)
            ended.append(job.pk)
    return ended


# --- the worker's reports (evaluator.api, authenticated with the worker token) ---

def worker_start(job_id: int, *, host: str) -> dict[str, Any]:
    """A worker received the job. Returns {"proceed": bool, "reason": str}.

    A queued job becomes running. A running job whose heartbeat went stale was redelivered after its worker
    died (acks_late + reject_on_worker_lost): it is retried once (MAX_ATTEMPTS). Anything else (cancelled,
    finished, or running on a live worker) is refused, and the worker drops the message.
    """
    now = _now()
    if RerunJob.objects.filter(pk=job_id, status=RerunJob.Status.QUEUED).update(
            status=RerunJob.Status.RUNNING, started_at=now, heartbeat_at=now, worker_host=host,
            attempts=F("attempts") + 1):
        _append_log(job_id, f"started on {host}")
        return {"proceed": True, "reason": ""}
    cutoff = now - timedelta(seconds=settings.PTB_JOB_STALE_SECONDS)
    if RerunJob.objects.filter(pk=job_id, status=RerunJob.Status.RUNNING, heartbeat_at__lt=cutoff,
                               cancel_requested=False, attempts__lt=MAX_ATTEMPTS).update(
            heartbeat_at=now, worker_host=host, attempts=F("attempts") + 1, samples_done=0):
        _append_log(job_id, f"the previous worker was lost; retrying on {host}")
        return {"proceed": True, "reason": ""}
    job = RerunJob.objects.filter(pk=job_id).first()
    state = "unknown" if job is None else job.status
    return {"proceed": False, "reason": f"job {job_id} is {state}; nothing to do"}


def worker_progress(job_id: int, *, samples_done: int | None, samples_total: int | None,
                    log_lines: list[str]) -> dict[str, Any]:
    """A heartbeat with progress and new log lines. Returns {"status", "cancel_requested"}; the worker stops
    when the job is no longer running or a cancel is pending."""
    fields: dict[str, Any] = {"heartbeat_at": _now()}
    if samples_done is not None:
        fields["samples_done"] = samples_done
    if samples_total is not None:
        fields["samples_total"] = samples_total
    if RerunJob.objects.filter(pk=job_id, status=RerunJob.Status.RUNNING).update(**fields):
        _append_log(job_id, *log_lines)
    job = RerunJob.objects.get(pk=job_id)
    return {"status": job.status, "cancel_requested": job.cancel_requested}


def _store_eval_log(job_id: int, upload: IO[bytes], name: str) -> str:
    folder = Path(settings.PTB_EVAL_LOG_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    stored = f"job{job_id}-{_UNSAFE_NAME.sub('_', Path(name).name)[-150:] or 'log.eval'}"
    with (folder / stored).open("wb") as handle:
        for chunk in iter(lambda: upload.read(1 << 20), b""):
            handle.write(chunk)
    return stored


def eval_log_path(job: RerunJob) -> Path | None:
    """The stored .eval log of a job (under PTB_EVAL_LOG_DIR), None if there is none."""
    return Path(settings.PTB_EVAL_LOG_DIR) / job.eval_log if job.eval_log else None


def worker_finish(job_id: int, *, report: dict[str, Any], eval_log: IO[bytes] | None = None,
                  eval_log_name: str = "") -> RerunJob:
    """The worker's final report. Only a running job takes it; a job already ended (reaped, cancelled while
    queued) keeps its state and nothing is stored.

    ``report``: {"status": succeeded | failed | cancelled, "reason", "log": [lines], and on success "score"
    (accuracy, fraction), "stderr", "samples_done", "samples_total", "provenance" (dict)}. On success the .eval
    log is stored, then the score is added as a new evaluation of the run (traces.services.add_evaluation, id
    ``<run>-rerun-<job>``). A pending cancel wins over a late success: nothing is stored then.
    """
    status = report.get("status")
    if status not in ("succeeded", "failed", "cancelled"):
        raise RerunRefused(f"status must be succeeded, failed or cancelled, not {status!r}")
    job = RerunJob.objects.get(pk=job_id)
    _append_log(job_id, *[str(x) for x in report.get("log", [])])
    if job.status != RerunJob.Status.RUNNING:
        _append_log(job_id, f"a worker reported {status} after the job had ended {job.status}; ignored")
        return job
    fields: dict[str, Any] = {"finished_at": _now(), "heartbeat_at": _now(),
                              "result": _redacted({k: v for k, v in report.items() if k != "log"})}
    if status == "succeeded" and job.cancel_requested:
        status, report = "cancelled", {**report, "reason": "cancelled before the result was stored"}
    if status == "succeeded":
        try:
            fields.update(_store_success(job, report, eval_log, eval_log_name))
        except (ValueError, KeyError, TypeError, run_services.UnknownRun) as exc:
            status, report = "failed", {**report, "reason": f"the result could not be stored: {exc}"}
    fields["status"] = status
    fields["reason"] = "" if status == "succeeded" else _redacted(str(report.get("reason") or status))
    updated = RerunJob.objects.filter(pk=job_id, status=RerunJob.Status.RUNNING).update(**fields)
    if updated:
        _append_log(job_id, f"{status}" + (f": {fields['reason']}" if fields["reason"] else
                                           f": score {fields.get('new_score')}"))
    job.refresh_from_db()
    return job


def _store_success(job: RerunJob, report: dict[str, Any], eval_log: IO[bytes] | None, name: str) -> dict[str, Any]:
    if eval_log is None:
        raise ValueError("a successful report must carry its .eval log")
    score = float(report["score"])
    stored = _store_eval_log(job.pk, eval_log, name or "log.eval")
    evaluation_id = f"{job.run_id}-rerun-{job.pk}"
    provenance = {**report.get("provenance", {}), "job": job.pk, "eval_log": stored,
                  "samples": report.get("samples_done")}
    try:
        run_services.add_evaluation(
            run_id=job.run_id, accuracy=score, evaluation_id=evaluation_id, provenance=_redacted(provenance),
            metrics={"accuracy": score, "stderr": report.get("stderr")}, partial=job.limit is not None,
        )
    except Exception:
        (Path(settings.PTB_EVAL_LOG_DIR) / stored).unlink(missing_ok=True)
        raise
    return {"new_score": score, "evaluation_id": evaluation_id, "eval_log": stored,
            "samples_done": int(report.get("samples_done") or 0),
            "samples_total": report.get("samples_total")}


def parse_report(text: str) -> dict[str, Any]:
    """The ``report`` form field of a finish call (JSON object) as a dict; raises RerunRefused if malformed."""
    try:
        report = json.loads(text)
    except ValueError as exc:
        raise RerunRefused(f"report is not JSON: {exc}") from exc
    if not isinstance(report, dict):
        raise RerunRefused("report must be a JSON object")
    return report
