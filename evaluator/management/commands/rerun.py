"""``python manage.py rerun RUN_ID [--limit N] [--max-tokens N] [--dataset-path P] [--wait]``: queue a rerun job.

Prints the job id. With ``--wait`` it waits for the job to end and prints the final status, the reason on
failure and the new score; the exit status is non-zero unless the job succeeded.
"""
from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError

from evaluator import selectors, services


class Command(BaseCommand):
    help = "Queue a re-evaluation of a run's checkpoint (a RerunJob handled by a Celery worker); prints its id."

    def add_arguments(self, parser):
        parser.add_argument("run_id")
        parser.add_argument("--limit", type=int, default=None, help="samples (default: all)")
        parser.add_argument("--max-tokens", type=int, default=None, help="default: the benchmark's retry ladder")
        parser.add_argument("--dataset-path", default="", help="on the worker, a local dataset folder or JSONL instead of its Hugging Face cache (an exploratory "
                                 "evaluation: never the run's score)")
        parser.add_argument("--provider", default="auto", choices=["auto", "vllm", "hf"])
        parser.add_argument("--wait", action="store_true", help="wait for the job to end and print its result")
        parser.add_argument("--timeout", type=float, default=24 * 3600, help="seconds --wait waits at most")

    def handle(self, *args, run_id: str, limit, max_tokens, dataset_path: str, provider: str, wait: bool,
               timeout: float, **options):
        try:
            job = services.queue_rerun(run_id=run_id, limit=limit, max_tokens=max_tokens,
                                       dataset_path=dataset_path, provider=provider)
        except (services.RerunRefused, services.BrokerUnavailable) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(str(job.pk))
        if not wait:
            return
        deadline = time.monotonic() + timeout
        reaped = time.monotonic()
        while job.is_active:
            if time.monotonic() > deadline:
                raise CommandError(f"job {job.pk} still {job.status} after {timeout:.0f} s")
            time.sleep(0.5)
            if time.monotonic() - reaped > 10:  # a command may write: end the job if its worker was lost
                services.reap_stale_jobs()
                reaped = time.monotonic()
            current = selectors.get_job(job.pk)
            if current is None:
                raise CommandError(f"job {job.pk} was deleted while it was {job.status}")
            job = current
        self.stdout.write(f"status: {job.status}")
        if job.reason:
            self.stdout.write(f"reason: {job.reason}")
        if job.new_score is not None:
            old = "none" if job.old_score is None else f"{job.old_score:.4f}"
            self.stdout.write(f"new score: {job.new_score:.4f} (accuracy; old {old})")
            if job.exploratory_reason:
                self.stdout.write(f"exploratory, not the run's score: {job.exploratory_reason}")
        if job.status != job.Status.SUCCEEDED:
            raise CommandError(f"job {job.pk} {job.status}")
