"""Reads of the evaluator app: rerun jobs. Every read first ends stale running jobs (services.reap_stale_jobs),
so no page or API answer ever shows a job "running" on a worker that is gone."""
from __future__ import annotations

from .models import RerunJob
from .services import reap_stale_jobs


def get_job(job_id: int) -> RerunJob | None:
    reap_stale_jobs()
    return RerunJob.objects.select_related("created_by").filter(pk=job_id).first()


def list_jobs(*, run_id: str | None = None, status: str | None = None, limit: int = 100) -> list[RerunJob]:
    """Jobs newest first, optionally of one run and/or one status."""
    reap_stale_jobs()
    jobs = RerunJob.objects.select_related("created_by")
    if run_id:
        jobs = jobs.filter(run_id=run_id)
    if status:
        jobs = jobs.filter(status=status)
    return list(jobs[:limit])
