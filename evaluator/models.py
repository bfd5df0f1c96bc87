"""Rerun jobs and staff API tokens (Django's own database; runs themselves live in the warehouse).

A RerunJob is one job on a GPU (or CPU) Celery worker about one run: an evaluation of its checkpoint (kind
``evaluation``) or a re-run of the judge on its directory (kind ``judge``). Its life: queued -> running ->
succeeded | failed | cancelled, and queued -> cancelled | failed (broker down, or its credential expired in the
queue). Scores are fractions 0..1, as in the warehouse's ``evaluations.accuracy``.
"""
from __future__ import annotations

import hashlib
import secrets
from pathlib import PurePath

from django.conf import settings
from django.db import models


class RerunJob(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    class Kind(models.TextChoices):
        EVALUATION = "evaluation"
        JUDGE = "judge"

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.EVALUATION, db_index=True)
    queue = models.CharField(max_length=64, default="celery", help_text="the Celery queue the job was sent to")
    run_dir = models.CharField(max_length=1000, blank=True, help_text="run directory as the worker sees it (judge)")
    run_id = models.CharField(max_length=64, db_index=True, help_text="warehouse runs.id")
    benchmark = models.CharField(max_length=64)
    checkpoint = models.CharField(max_length=1000, help_text="checkpoint directory as the worker sees it")
    limit = models.PositiveIntegerField(null=True, blank=True, help_text="samples; empty: the full set")
    max_tokens = models.PositiveIntegerField(null=True, blank=True, help_text="empty: the retry ladder")
    dataset_path = models.CharField(max_length=1000, blank=True,
                                    help_text="on the worker: a local dataset folder (Hugging Face cache layout) or "
                                              "a JSONL stand-in; empty: the worker's own dataset cache")
    provider = models.CharField(max_length=8, default="auto", help_text="auto | vllm | hf")

    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED, db_index=True)
    cancel_requested = models.BooleanField(default=False)
    reason = models.TextField(blank=True, help_text="why the job failed or was cancelled")
    samples_done = models.PositiveIntegerField(default=0)
    samples_total = models.PositiveIntegerField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0, help_text="deliveries to a worker (a lost worker's job retries)")
    worker_host = models.CharField(max_length=255, blank=True)
    celery_task_id = models.CharField(max_length=64, blank=True)
    log = models.TextField(blank=True, help_text="the worker's log lines")

    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="rerun_jobs")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    old_score = models.FloatField(null=True, blank=True, help_text="the run's score (fraction) when queued")
    new_score = models.FloatField(null=True, blank=True, help_text="this rerun's accuracy (fraction)")
    evaluation_id = models.CharField(max_length=128, blank=True, help_text="warehouse evaluations.id stored")
    eval_log = models.CharField(max_length=255, blank=True, help_text="file name under PTB_EVAL_LOG_DIR")
    result = models.JSONField(null=True, blank=True, help_text="the worker's report: provenance, settings, attempts")

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"rerun #{self.pk} of {self.run_id} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE

    @property
    def exploratory_reason(self) -> str:
        """Why this evaluation's score cannot become the run's score, "" when it can. The rule: only a rerun
        on the benchmark's own dataset (the worker's Hugging Face cache of it, no ``dataset_path``) with all of
        its samples (no ``limit``) may replace a run's score; anything else is an exploratory evaluation, stored
        and shown as such (traces.services.add_evaluation). A judge job has no score: ""."""
        if self.kind != self.Kind.EVALUATION:
            return ""
        reasons = []
        if self.limit is not None:
            reasons.append(f"{self.limit} sample{'s' if self.limit != 1 else ''}, not the whole test set")
        if self.dataset_path:
            # its name only: the reason is shown on public pages, where no server path may appear (issue 25)
            reasons.append(f"the local dataset {PurePath(self.dataset_path).name}, not the benchmark's own")
        return "; ".join(reasons)

    @property
    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.splitlines()[-lines:])


class ApiToken(models.Model):
    """A staff user's API key for ``Authorization: Token <key>``; only its SHA-256 is stored."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True)
    key_sha256 = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"API token {self.name or self.pk} of {self.user}"

    @staticmethod
    def digest(key: str) -> str:
        return hashlib.sha256(key.encode()).hexdigest()

    @classmethod
    def issue(cls, user, name: str = "") -> tuple[ApiToken, str]:
        """A new token for ``user``; returns (token, key). The key is shown once and never stored."""
        key = secrets.token_urlsafe(32)
        return cls.objects.create(user=user, name=name, key_sha256=cls.digest(key)), key
