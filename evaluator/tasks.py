"""Celery tasks of the evaluator. The message is all a worker gets (evaluator.services.job_message)."""
from __future__ import annotations

from typing import Any

from celery import shared_task


@shared_task(name="evaluator.evaluate_rerun", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def evaluate_rerun(message: dict[str, Any]) -> str:
    """Evaluate one rerun job's checkpoint with inspect-ai and report back over HTTP (evaluator.worker).

    ``acks_late`` + ``reject_on_worker_lost``: a worker that dies mid-job leaves the message to be redelivered;
    the server retries the job once if its heartbeat went stale, and otherwise fails it (services.reap_stale_jobs).
    """
    from .worker import run_job  # inspect-ai and torch load only on workers

    return run_job(message)


@shared_task(name="evaluator.rerun_judge", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def rerun_judge(message: dict[str, Any]) -> str:
    """Run the worker's judge command on one run and send its verdict files back (evaluator.worker, kind
    ``judge``); same job life, heartbeats and redelivery as ``evaluate_rerun``."""
    from .worker import run_job

    return run_job(message)
