"""Writes of the evaluator app: queue, cancel and re-queue jobs (evaluations and judge re-runs), take the
workers' reports (the score is read from the uploaded .eval log, evaluator.eval_logs), fail stale jobs.

Runs are read through traces.selectors and results written through traces.services only. Every status change
is a conditional UPDATE (``filter(pk=..., status=...).update(...)``), so a cancel, a stale-job reaper and a
worker's report racing each other cannot both win.
"""
from __future__ import annotations

import json
import logging
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

from traces import selectors as run_selectors
from traces import services as run_services
from ingest.redaction import Redactor
from traces.schemas import Run

from evaluator.benchmarks import BENCHMARKS, cannot_rerun

from . import eval_logs, judge
from .models import RerunJob
from .permissions import issue_job_credential
from .protocol import TASK_NAMES, FinishReport, JobMessage, ProgressAnswer, StartAnswer

MAX_EVAL_LOG_BYTES = 512 << 20
MAX_ATTEMPTS = 2  # deliveries of one job: the first, and one retry after a lost worker
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
log = logging.getLogger(__name__)


def _celery() -> Any:
    """The Celery app, imported on first use: a web worker that only serves pages never loads Celery's app and
    worker machinery (~12 MB of RSS; bench/web_memory.py)."""
    from ptbsite.celery import app

    return app


class RerunRefused(ValueError):
    """The job cannot be queued or changed (unknown run, bad settings, job already finished); says why."""


class BrokerUnavailable(RuntimeError):
    """The Celery broker refused the job; the job is stored as failed with this reason."""


def _now():
    return timezone.now()


_STAMPED = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ")  # a line a worker already timed (evaluator.worker)


def _log_line(text: str) -> str:
    """One line of a job's log: ``YYYY-MM-DD HH:MM:SS <text>`` (UTC), the time it happened: a worker's own (it
    times its lines when they happen and sends them with the next heartbeat), else now. One time a line."""
    return f"{text}\n" if _STAMPED.match(text) else f"{_now():%Y-%m-%d %H:%M:%S} {text}\n"


def _redacted(value: Any) -> Any:
    """A worker's text or JSON-shaped value with secrets redacted (ingest.redaction): workers' logs, reasons and
    provenance can quote environment dumps or error messages holding keys."""
    redact = Redactor.from_environ(os.environ).redact
    if isinstance(value, str):
        return redact(value)
    return json.loads(redact(json.dumps(value)))


def _append_log(job_id: int, *lines: str) -> None:
    if lines:
        text = _redacted("".join(_log_line(x) for x in lines))
        RerunJob.objects.filter(pk=job_id).update(log=Concat(F("log"), Value(text)))


def job_message(job: RerunJob) -> JobMessage:
    """The Celery task message of a job (evaluator.protocol.JobMessage): its settings, the server's URL
    (PTB_PUBLIC_URL), the job's own credential, and the heartbeat and timeout (PTB_JOB_HEARTBEAT_SECONDS;
    PTB_JUDGE_TIMEOUT_SECONDS or PTB_JOB_TIMEOUT_SECONDS by kind); None where unset."""
    return JobMessage(
        job_id=job.pk, kind=job.kind, task_id=job.celery_task_id, run_id=job.run_id,
        benchmark=job.benchmark, checkpoint=job.checkpoint, run_dir=job.run_dir, limit=job.limit,
        max_tokens=job.max_tokens, dataset_path=job.dataset_path or None, provider=job.provider,
        api_base=settings.PTB_PUBLIC_URL, credential=issue_job_credential(job),
        heartbeat_s=settings.PTB_JOB_HEARTBEAT_SECONDS,
        timeout_s=settings.PTB_JUDGE_TIMEOUT_SECONDS if job.kind == RerunJob.Kind.JUDGE
        else settings.PTB_JOB_TIMEOUT_SECONDS,
    )


def _publish(job: RerunJob) -> RerunJob:
    """Send the job to the broker (its queue) as the task of its kind (evaluator.protocol.TASK_NAMES), the message
    as JSON; on a broker error fail the job and raise BrokerUnavailable."""
    # Imported here, as the Celery app is: kombu (with amqp) is ~10 MB of RSS that a page-only web worker skips.
    from kombu.exceptions import OperationalError

    message = job_message(job)
    try:
        with _celery().connection_for_write() as conn:
            conn.ensure_connection(max_retries=1)
            _celery().send_task(TASK_NAMES[message.kind], args=[message.model_dump(mode="json")],
                                task_id=job.celery_task_id, queue=job.queue, connection=conn, retry=False)
    except (OperationalError, OSError) as exc:
        reason = f"broker unavailable ({_celery().conf.broker_url.split('@')[-1]}): {exc}"
        RerunJob.objects.filter(pk=job.pk).update(status=RerunJob.Status.FAILED, reason=reason, finished_at=_now())
        _append_log(job.pk, reason)
        raise BrokerUnavailable(reason) from exc
    _append_log(job.pk, f"queued as Celery task {job.celery_task_id} on queue {job.queue}")
    job.refresh_from_db()
    return job


def _known_run(run_id: str) -> tuple[Run, Path]:
    """The run (traces.selectors.get_run) and its directory in the results tree; RerunRefused for an unknown run."""
    run, run_dir = run_selectors.get_run(run_id), run_selectors.run_directory(run_id)
    if run is None or run_dir is None:
        raise RerunRefused(f"no run {run_id}")
    return run, run_dir


def queue_rerun(
    *, run_id: str, user=None, limit: int | None = None, max_tokens: int | None = None,
    dataset_path: str = "", provider: str = "auto",
) -> RerunJob:
    """Create a RerunJob for a run's checkpoint and queue its Celery task; return the job.

    ``limit``: samples (None: all); ``max_tokens``: None runs the benchmark's retry ladder; ``dataset_path``:
    on the worker, a local dataset folder (Hugging Face cache layout, evaluator.hf_cache) or a JSONL (see
    evaluator.benchmarks.load_task); empty: the worker's own dataset cache. ``old_score`` is the run's current
    score.

    Raises:
        RerunRefused: unknown run or bad settings (nothing stored).
        BrokerUnavailable: the broker refused; the job is stored as failed with the reason.
    """
    if provider not in ("auto", "vllm", "hf"):
        raise RerunRefused(f"provider must be auto, vllm or hf, not {provider!r}")
    for name, number in (("limit", limit), ("max_tokens", max_tokens)):
        if number is not None and number < 1:
            raise RerunRefused(f"{name} must be a positive number, not {number}")
    run, run_dir = _known_run(run_id)
    if run.benchmark not in BENCHMARKS:
        raise RerunRefused(f"run {run_id} is of benchmark {run.benchmark!r}, which has no evaluation here "
                           f"(known: {', '.join(sorted(BENCHMARKS))})")
    refused = cannot_rerun(BENCHMARKS[run.benchmark])
    if refused:
        raise RerunRefused(refused)
    checkpoint = run_selectors.checkpoint_path(run_id)
    if checkpoint is None:  # the run went between the two reads
        raise RerunRefused(f"no run {run_id}")
    job = RerunJob.objects.create(
        run_id=run.id, benchmark=run.benchmark, checkpoint=os.path.abspath(checkpoint), limit=limit,
        max_tokens=max_tokens, dataset_path=dataset_path.strip(), provider=provider, created_by=user if user and user.pk else None,
        old_score=run.score, celery_task_id=str(uuid.uuid4()),
        queue=settings.PTB_JOB_QUEUE, run_dir=os.path.abspath(run_dir),
    )
    return _publish(job)


def queue_judge(*, run_id: str, user=None) -> RerunJob:
    """Create a judge re-run job for a run (kind ``judge``: a worker runs its PTB_JUDGE_COMMAND on the run's
    directory) and queue its Celery task; return the job.

    Raises:
        RerunRefused: unknown run, or no judge command configured here (nothing stored).
        BrokerUnavailable: the broker refused; the job is stored as failed with the reason.
    """
    if not judge.judge_configured(settings.PTB_JUDGE_COMMAND):
        raise RerunRefused("no judge command is configured (set PTB_JUDGE_COMMAND to a JSON list of argv)")
    run, run_dir = _known_run(run_id)
    job = RerunJob.objects.create(
        kind=RerunJob.Kind.JUDGE, run_id=run.id, benchmark=run.benchmark,
        run_dir=os.path.abspath(run_dir), created_by=user if user and user.pk else None,
        celery_task_id=str(uuid.uuid4()), queue=settings.PTB_JOB_QUEUE,
    )
    return _publish(job)


def requeue_job(job: RerunJob, *, user=None) -> RerunJob:
    """A new job with the same run and settings as a finished one (the old job stays as it was)."""
    if job.is_active:
        raise RerunRefused(f"job {job.pk} is still {job.status}")
    if job.kind == RerunJob.Kind.JUDGE:
        return queue_judge(run_id=job.run_id, user=user)
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
    killed, or lost the network): failed ("worker lost: ..."), or cancelled if a cancel was pending; and every
    queued job older than its credential (PTB_JOB_CREDENTIAL_SECONDS), which no worker could start any more.
    Returns the ids ended. Run by ``manage.py reap_jobs`` (``--every N`` repeats it; ``manage.py serve`` starts
    one beside the server); no read does it."""
    now = _now()
    cutoff = now - timedelta(seconds=settings.PTB_JOB_STALE_SECONDS)
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
    expired = now - timedelta(seconds=settings.PTB_JOB_CREDENTIAL_SECONDS)
    for job in RerunJob.objects.filter(status=RerunJob.Status.QUEUED, created_at__lt=expired):
        reason = (f"no worker took the job from queue {job.queue} within {settings.PTB_JOB_CREDENTIAL_SECONDS} s; "
                  "its credential expired (re-queue it once a worker listens)")
        if RerunJob.objects.filter(pk=job.pk, status=RerunJob.Status.QUEUED).update(
                status=RerunJob.Status.FAILED, reason=reason, finished_at=_now()):
            _append_log(job.pk, reason)
            ended.append(job.pk)
    return ended


# --- the worker's reports (evaluator.api, authenticated with the worker token) ---

def worker_start(job_id: int, *, host: str) -> StartAnswer:
    """A worker received the job; the answer says whether it proceeds, and why not.

    A queued job becomes running. A running job whose heartbeat went stale was redelivered after its worker
    died (acks_late + reject_on_worker_lost): it is retried once (MAX_ATTEMPTS). Anything else (cancelled,
    finished, or running on a live worker) is refused, and the worker drops the message.
    """
    now = _now()
    if RerunJob.objects.filter(pk=job_id, status=RerunJob.Status.QUEUED).update(
            status=RerunJob.Status.RUNNING, started_at=now, heartbeat_at=now, worker_host=host,
            attempts=F("attempts") + 1):
        _append_log(job_id, f"started on {host}")
        return StartAnswer(proceed=True, reason="")
    cutoff = now - timedelta(seconds=settings.PTB_JOB_STALE_SECONDS)
    if RerunJob.objects.filter(pk=job_id, status=RerunJob.Status.RUNNING, heartbeat_at__lt=cutoff,
                               cancel_requested=False, attempts__lt=MAX_ATTEMPTS).update(
            heartbeat_at=now, worker_host=host, attempts=F("attempts") + 1, samples_done=0):
        _append_log(job_id, f"the previous worker was lost; retrying on {host}")
        return StartAnswer(proceed=True, reason="")
    job = RerunJob.objects.filter(pk=job_id).first()
    state = "unknown" if job is None else job.status
    return StartAnswer(proceed=False, reason=f"job {job_id} is {state}; nothing to do")


def worker_progress(job_id: int, *, samples_done: int | None, samples_total: int | None,
                    log_lines: list[str]) -> ProgressAnswer:
    """A heartbeat with progress and new log lines. The answer carries the job's status and whether a cancel is
    pending; the worker stops when the job is no longer running or a cancel is pending."""
    fields: dict[str, Any] = {"heartbeat_at": _now()}
    if samples_done is not None:
        fields["samples_done"] = samples_done
    if samples_total is not None:
        fields["samples_total"] = samples_total
    if RerunJob.objects.filter(pk=job_id, status=RerunJob.Status.RUNNING).update(**fields):
        _append_log(job_id, *log_lines)
    job = RerunJob.objects.get(pk=job_id)
    return ProgressAnswer(status=job.status, cancel_requested=job.cancel_requested)


def _store_eval_log(job_id: int, upload: IO[bytes], name: str) -> str:
    """Copy an upload into PTB_EVAL_LOG_DIR as ``job<id>-<safe name>``; raises ValueError (nothing kept) past
    MAX_EVAL_LOG_BYTES."""
    folder = Path(settings.PTB_EVAL_LOG_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    stem = _UNSAFE_NAME.sub('_', Path(name).name)[-150:] or "log.eval"
    stored = f"job{job_id}-{stem if stem.endswith('.eval') else stem + '.eval'}"
    size = 0
    with (folder / stored).open("wb") as handle:
        for chunk in iter(lambda: upload.read(1 << 20), b""):
            size += len(chunk)
            if size > MAX_EVAL_LOG_BYTES:
                handle.close()
                (folder / stored).unlink(missing_ok=True)
                raise ValueError(f"the .eval log is larger than {MAX_EVAL_LOG_BYTES >> 20} MiB")
            handle.write(chunk)
    return stored


def eval_log_path(job: RerunJob) -> Path | None:
    """The stored .eval log of a job (under PTB_EVAL_LOG_DIR), None if there is none."""
    return Path(settings.PTB_EVAL_LOG_DIR) / job.eval_log if job.eval_log else None


class LogUploadRefused(RerunRefused):
    """The worker's .eval log was refused (garbage, another job's, tampered); the job ended failed."""


def worker_finish(job_id: int, *, report: FinishReport, eval_log: IO[bytes] | None = None,
                  eval_log_name: str = "") -> RerunJob:
    """The worker's final report (evaluator.protocol.FinishReport). Only a running job takes it; a job already
    ended (reaped, cancelled while queued) keeps its state and nothing is stored.

    The worker's ``score`` is ignored: the score stored is the one the server reads from the .eval log itself
    (evaluator.eval_logs). On success the .eval log is stored and checked, then its score is added as a new
    evaluation of the run (traces.services.add_evaluation, id ``<run>-rerun-<job>``; exploratory, never the run's
    score, unless it ran on the benchmark's own dataset with all of its samples: RerunJob.exploratory_reason); a
    judge's verdicts are stored as the run's ``rerun`` verdicts. A pending cancel wins over a late success: nothing
    is stored then. The job's ``result`` keeps the report's fields that differ from their defaults, less its log
    and verdict files.

    Raises LogUploadRefused for a refused .eval log (the job is failed with the reason first).
    """
    status = report.status
    # Claim the report: only a running job takes it, and the claim moves its heartbeat, so a reaper that read the
    # old heartbeat cannot end the job while its result is being stored. A report for an ended job (a replayed
    # credential, a worker the reaper gave up on) changes nothing: not the job, not its log, not the run.
    if not RerunJob.objects.filter(pk=job_id, status=RerunJob.Status.RUNNING).update(heartbeat_at=_now()):
        job = RerunJob.objects.get(pk=job_id)
        log.warning("job %s: a worker reported %s after the job had ended %s; ignored", job_id, status, job.status)
        return job
    job = RerunJob.objects.get(pk=job_id)
    result = report.model_dump(mode="json", exclude={"log", "verdict_files"}, exclude_defaults=True)
    fields: dict[str, Any] = {"finished_at": _now(), "heartbeat_at": _now(), "result": _redacted(result)}
    reason = report.reason
    if status == "succeeded" and job.cancel_requested:
        status, reason = "cancelled", "cancelled before the result was stored"
    refused = None
    if status == "succeeded":
        try:
            if job.kind == RerunJob.Kind.JUDGE:
                fields.update(_store_judge(job, report))
            else:
                fields.update(_store_success(job, report, eval_log, eval_log_name))
        except eval_logs.LogRefused as exc:
            refused = f"the uploaded .eval log was refused: {exc}"
            status, reason = "failed", refused
        except (ValueError, KeyError, TypeError, run_services.UnknownRun) as exc:
            status, reason = "failed", f"the result could not be stored: {exc}"
    fields["status"] = status
    fields["reason"] = "" if status == "succeeded" else _redacted(reason or status)
    updated = RerunJob.objects.filter(pk=job_id, status=RerunJob.Status.RUNNING).update(**fields)
    if updated:
        _append_log(job_id, *report.log)
        _append_log(job_id, f"{status}" + (f": {fields['reason']}" if fields["reason"] else
                                           f": score {fields.get('new_score')}" if job.kind == RerunJob.Kind.EVALUATION
                                           else "") + (f" (exploratory, not the run's score: {job.exploratory_reason})"
                                                       if status == "succeeded" and job.exploratory_reason else ""))
    job.refresh_from_db()
    if refused:
        raise LogUploadRefused(refused)
    return job


def _store_judge(job: RerunJob, report: FinishReport) -> dict[str, Any]:
    verdicts = judge.store_judge_files(run_id=job.run_id, files=report.verdict_files or {},
                                       reviewer=job.created_by.username if job.created_by else "command line")
    _append_log(job.pk, "verdicts stored: " + ", ".join(f"{v.kind} {v.value}" for v in verdicts))
    return {"samples_done": 1, "samples_total": 1}


def _store_success(job: RerunJob, report: FinishReport, eval_log: IO[bytes] | None, name: str) -> dict[str, Any]:
    if eval_log is None:
        raise ValueError("a successful report must carry its .eval log")
    stored = _store_eval_log(job.pk, eval_log, name or "log.eval")
    path = Path(settings.PTB_EVAL_LOG_DIR) / stored
    try:
        read = eval_logs.read_job_log(path, job)
    except eval_logs.LogRefused:
        path.unlink(missing_ok=True)
        raise
    claimed = report.score
    if claimed is not None and claimed != read.score:
        _append_log(job.pk, f"the worker reported score {claimed}; the .eval log says {read.score}, which is stored")
    evaluation_id = f"{job.run_id}-rerun-{job.pk}"
    provenance = {**(report.provenance or {}), "job": job.pk, "eval_log": stored,
                  "samples": read.samples_done, "samples_total": read.samples_total, "log_task": read.task, "log_model": read.model,
                  "log_inspect_ai": read.inspect_ai, "score_read_by": "server (inspect_ai.log.read_eval_log)"}
    try:
        run_services.add_evaluation(
            run_id=job.run_id, accuracy=read.score, evaluation_id=evaluation_id, provenance=_redacted(provenance),
            metrics={"accuracy": read.score, "stderr": read.stderr}, exploratory=job.exploratory_reason,
        )
    except Exception:
        path.unlink(missing_ok=True)
        raise
    return {"new_score": read.score, "evaluation_id": evaluation_id, "eval_log": stored,
            "samples_done": read.samples_done, "samples_total": read.samples_total}

