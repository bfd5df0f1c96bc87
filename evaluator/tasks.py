"""Celery tasks of the evaluator: one body, registered under the name of each kind of job
(evaluator.protocol.TASK_NAMES), so a worker's log says which kind it ran. The message is all a worker gets
(evaluator.protocol.JobMessage, validated here by Celery's ``pydantic=True`` before the body runs).

``acks_late`` + ``reject_on_worker_lost``: a worker that dies mid-job leaves the message to be redelivered; the
server retries the job once if its heartbeat went stale, and otherwise fails it (services.reap_stale_jobs).
"""
from __future__ import annotations

from celery import shared_task

from .protocol import TASK_NAMES, JobMessage


def do_job(message: JobMessage) -> str:
    """Evaluate a job's checkpoint with inspect-ai, or run the worker's judge command on its run (by
    ``message.kind``), and report back over HTTP (evaluator.worker.run_job); returns the final status."""
    from .worker import run_job  # inspect-ai and torch load only on workers

    return run_job(message)


_OPTIONS = {"acks_late": True, "reject_on_worker_lost": True, "ignore_result": True, "pydantic": True}
evaluate_rerun = shared_task(name=TASK_NAMES["evaluation"], **_OPTIONS)(do_job)
rerun_judge = shared_task(name=TASK_NAMES["judge"], **_OPTIONS)(do_job)
