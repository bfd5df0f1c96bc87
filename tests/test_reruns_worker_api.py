"""The worker API's rules: who may report, a lost worker's job retried once, late reports ignored, a cancel
winning over a late success."""
from __future__ import annotations

from datetime import timedelta
from io import BytesIO

import pytest
from django.test import Client
from django.utils import timezone

from evaluator import services
from evaluator.models import RerunJob
from tests.conftest import WORKER_TOKEN
from traces import selectors

pytestmark = pytest.mark.django_db
AUTH = {"HTTP_AUTHORIZATION": f"Bearer {WORKER_TOKEN}"}


@pytest.fixture(autouse=True)
def worker_token(settings) -> None:
    settings.PTB_WORKER_TOKEN = WORKER_TOKEN
    settings.PTB_JOB_STALE_SECONDS = 60


def _start(client: Client, job: RerunJob, host: str = "gpu2") -> dict:
    response = client.post(f"/api/worker/jobs/{job.pk}/start", {"host": host}, content_type="application/json", **AUTH)
    assert response.status_code == 200
    return response.json()


def test_a_queued_job_starts_once(client: Client) -> None:
    job = RerunJob.objects.create(run_id="r", benchmark="gsm8k", checkpoint="/x")
    assert _start(client, job)["proceed"] is True
    job.refresh_from_db()
    assert (job.status, job.worker_host, job.attempts) == ("running", "gpu2", 1)
    assert _start(client, job, "gpu3") == {"proceed": False, "reason": f"job {job.pk} is running; nothing to do"}


def test_a_redelivered_job_of_a_lost_worker_is_retried_once(client: Client) -> None:
    old = timezone.now() - timedelta(seconds=61)
    job = RerunJob.objects.create(run_id="r", benchmark="gsm8k", checkpoint="/x", status="running", attempts=1,
                                  started_at=old, heartbeat_at=old, samples_done=7)
    assert _start(client, job, "gpu3")["proceed"] is True
    job.refresh_from_db()
    assert (job.attempts, job.worker_host, job.samples_done) == (2, "gpu3", 0)
    assert "previous worker was lost; retrying on gpu3" in job.log
    RerunJob.objects.filter(pk=job.pk).update(heartbeat_at=old)
    assert _start(client, job, "gpu4")["proceed"] is False  # MAX_ATTEMPTS reached: the reaper fails it


def test_progress_answers_a_pending_cancel(client: Client) -> None:
    job = RerunJob.objects.create(run_id="r", benchmark="gsm8k", checkpoint="/x")
    _start(client, job)
    services.cancel_job(job)
    response = client.post(f"/api/worker/jobs/{job.pk}/progress", {"samples_done": 2, "samples_total": 9,
                           "log": ["sample 2"]}, content_type="application/json", **AUTH)
    assert response.json() == {"status": "running", "cancel_requested": True}
    job.refresh_from_db()
    assert (job.samples_done, job.samples_total) == (2, 9) and "sample 2" in job.log


def test_a_late_success_after_a_cancel_stores_nothing(client: Client, rerun_tree: dict) -> None:
    job = RerunJob.objects.create(run_id=rerun_tree["run_id"], benchmark="gsm8k", checkpoint="/x")
    _start(client, job)
    services.cancel_job(job)
    report = '{"status": "succeeded", "score": 1.0, "samples_done": 3, "samples_total": 3, "provenance": {}}'
    response = client.post(f"/api/worker/jobs/{job.pk}/finish",
                           {"report": report, "eval_log": BytesIO(b"zip")}, **AUTH)
    assert response.json() == {"status": "cancelled", "reason": "cancelled before the result was stored"}
    assert len(selectors.evaluations(rerun_tree["run_id"])) == 1


def test_a_report_after_the_job_ended_is_ignored(client: Client, rerun_tree: dict) -> None:
    job = RerunJob.objects.create(run_id=rerun_tree["run_id"], benchmark="gsm8k", checkpoint="/x",
                                  status="failed", reason="worker lost: no heartbeat since ...")
    report = '{"status": "succeeded", "score": 1.0, "provenance": {}}'
    response = client.post(f"/api/worker/jobs/{job.pk}/finish", {"report": report, "eval_log": BytesIO(b"z")}, **AUTH)
    assert response.json()["status"] == "failed"
    assert len(selectors.evaluations(rerun_tree["run_id"])) == 1
    assert client.post(f"/api/worker/jobs/{job.pk}/finish", {"report": "[1]"}, **AUTH).status_code == 400
