"""Reads of the evaluator app: jobs, the local datasets the rerun form offers, and whether workers listen.
Nothing here writes: stale jobs are ended by ``manage.py reap_jobs`` (services.reap_stale_jobs), never by a read."""
from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from evaluator.hf_cache import LocalDataset, local_datasets
from traces import selectors as run_selectors

from . import workers
from .models import RerunJob


def get_job(job_id: int) -> RerunJob | None:
    return RerunJob.objects.select_related("created_by").filter(pk=job_id).first()


def list_jobs(*, run_id: str | None = None, status: str | None = None, limit: int = 100) -> list[RerunJob]:
    """Jobs newest first, optionally of one run and/or one status."""
    jobs = RerunJob.objects.select_related("created_by")
    if run_id:
        jobs = jobs.filter(run_id=run_id)
    if status:
        jobs = jobs.filter(status=status)
    return list(jobs[:limit])


def run_titles(run_ids: list[str]) -> dict[str, str]:
    """Run id -> "<agent> on <benchmark> with <base model>" (traces' Run.title) for the ids that name a run: how
    job pages and lists name a job's run."""
    return run_selectors.run_titles(run_ids)


def get_run(run_id: str) -> run_selectors.Run | None:
    """The run a rerun form names (traces.selectors.get_run), None for an unknown id."""
    return run_selectors.get_run(run_id) if run_id else None


def datasets_for(benchmark: str) -> list[LocalDataset]:
    """The local datasets of ``benchmark`` under PTB_LOCAL_DATASETS_DIR (evaluator.hf_cache), by folder name."""
    return local_datasets(settings.PTB_LOCAL_DATASETS_DIR, benchmark)


def waiting_notice(job: RerunJob) -> str | None:
    """What a queued job's page says once no worker took it within PTB_JOB_PICKUP_SECONDS: that no worker is
    listening on its queue, or which workers listen (busy with other jobs); None for a job not waiting that
    long (or not queued)."""
    if job.status != RerunJob.Status.QUEUED or job.created_at > timezone.now() - timedelta(
            seconds=settings.PTB_JOB_PICKUP_SECONDS):
        return None
    found = workers.census(job.queue)
    waited = int((timezone.now() - job.created_at).total_seconds())
    if not found.listening:
        why = f" (the broker could not be asked: {found.error})" if found.error else ""
        return (f"No worker is listening on queue {job.queue}{why}: the job has waited {waited} s and will start "
                "when a worker does (README: make worker).")
    return (f"{len(found.workers)} worker(s) listen on queue {job.queue} ({', '.join(found.workers)}), but none has "
            f"taken this job in {waited} s: they are busy with other jobs.")
