"""Rerun jobs end to end: a real Celery worker process on a real Redis broker evaluates a tiny Qwen2 checkpoint
with inspect-ai on CPU and reports back to a live test server over HTTP; kill, cancel and failure paths."""
from __future__ import annotations

import json
import time
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client
from inspect_ai.log import read_eval_log

from evaluator.models import RerunJob
from tests.conftest import CeleryWorker, redis_url, use_broker
from traces import selectors

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def staff_client() -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_user("reviewer", is_staff=True))
    return client


def _wait(job_id: int, until, timeout: float = 120) -> RerunJob:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = RerunJob.objects.get(pk=job_id)
        if until(job):
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} never reached the condition: {job.status}, log:\n{job.log}")


def _long_dataset(tmp_path: Path) -> Path:
    path = tmp_path / "long.jsonl"
    path.write_text("".join(json.dumps({"input": f"What is {i} + {i}?", "target": str(2 * i)}) + "\n" for i in range(300)))
    return path


def test_a_rerun_from_the_run_page_stores_the_eval_logs_score(
    celery_worker: CeleryWorker, redis_broker: str, worker_settings, rerun_tree: dict, staff_client: Client,
) -> None:
    run_id = rerun_tree["run_id"]
    response = staff_client.post("/reruns/new", {"run_id": run_id, "max_tokens": "16",
                                                 "dataset_path": str(rerun_tree["dataset"])})
    assert response.status_code == 302
    job_id = int(response["Location"].rstrip("/").rsplit("/", 1)[1])
    job = _wait(job_id, lambda j: not j.is_active)
    assert job.status == "succeeded", job.reason + job.log

    log = read_eval_log(str(worker_settings.PTB_EVAL_LOG_DIR / job.eval_log))
    eval_score = log.results.scores[0].metrics["accuracy"].value
    newest, original = selectors.evaluations(run_id)
    assert (newest["origin"], newest["accuracy"]) == ("rerun", eval_score) == ("rerun", job.new_score)
    assert (original["origin"], original["accuracy"]) == ("original", 0.25) and job.old_score == 0.25
    assert selectors.get_run(run_id).score == 100 * eval_score  # the newest evaluation is the run's score
    provenance = newest["provenance"]
    assert provenance["inspect_ai"] == log.eval.packages["inspect_ai"] and provenance["provider"] == "hf"
    assert len(provenance["chat_template_sha256"]) == 64 and provenance["settings"]["max_tokens"] == 16
    assert provenance["samples"] == 3 and provenance["job"] == job_id
    assert (job.samples_done, job.samples_total) == (3, 3) and job.worker_host

    page = staff_client.get(f"/reruns/{job_id}/").content.decode()
    assert 'id="job-state">succeeded' in page and "3 of 3 samples" in page and "hx-trigger" not in page
    assert staff_client.get(f"/reruns/{job_id}/eval-log").status_code == 200
    run_page = staff_client.get(f"/runs/{run_id}/").content.decode()
    assert 'id="old-score">25.0' in run_page and f'id="new-score">{100 * eval_score:.1f}' in run_page


def test_the_rerun_command_waits_and_prints_the_result(
    celery_worker: CeleryWorker, redis_broker: str, worker_settings, rerun_tree: dict,
) -> None:
    out = StringIO()
    call_command("rerun", rerun_tree["run_id"], limit=2, max_tokens=8, dataset_path=str(rerun_tree["dataset"]),
                 wait=True, stdout=out)
    lines = out.getvalue().splitlines()
    job = RerunJob.objects.get(pk=int(lines[0]))
    assert lines[1] == "status: succeeded"
    assert lines[2] == f"new score: {job.new_score:.4f} (accuracy; old 0.2500)"
    assert job.samples_total == 2
    # Two samples are not the test set: the rerun is kept as partial and the run's score stays the original's.
    newest = selectors.evaluations(rerun_tree["run_id"])[0]
    assert (newest["origin"], newest["counts"]) == ("rerun-partial", False)
    assert selectors.get_run(rerun_tree["run_id"]).score == 25.0


def test_a_missing_checkpoint_fails_naming_the_path_and_changes_nothing(
    celery_worker: CeleryWorker, redis_broker: str, worker_settings, rerun_tree: dict,
) -> None:
    import shutil

    shutil.rmtree(rerun_tree["run_dir"] / "final_model")
    before = selectors.evaluations(rerun_tree["run_id"])
    out = StringIO()
    with pytest.raises(CommandError, match="failed"):
        call_command("rerun", rerun_tree["run_id"], max_tokens=8, dataset_path=str(rerun_tree["dataset"]),
                     wait=True, stdout=out)
    job = RerunJob.objects.get()
    assert job.status == "failed"
    assert f"CheckpointMissing: checkpoint {rerun_tree['run_dir'] / 'final_model'} does not exist" in job.reason
    assert f"reason: {job.reason}" in out.getvalue()
    assert selectors.evaluations(rerun_tree["run_id"]) == before and not job.eval_log


def test_a_dataset_missing_on_the_worker_is_named(
    celery_worker: CeleryWorker, redis_broker: str, worker_settings, rerun_tree: dict,
) -> None:
    with pytest.raises(CommandError):
        call_command("rerun", rerun_tree["run_id"], limit=3, max_tokens=8, wait=True, stdout=StringIO())
    job = RerunJob.objects.get()
    assert job.status == "failed" and "gsm8k needs dataset openai/gsm8k" in job.reason
    assert len(selectors.evaluations(rerun_tree["run_id"])) == 1


def test_a_running_job_can_be_cancelled(
    celery_worker: CeleryWorker, redis_broker: str, worker_settings, rerun_tree: dict, staff_client: Client,
    tmp_path: Path,
) -> None:
    response = staff_client.post("/reruns/new", {"run_id": rerun_tree["run_id"], "max_tokens": "64",
                                                 "dataset_path": str(_long_dataset(tmp_path))})
    job_id = int(response["Location"].rstrip("/").rsplit("/", 1)[1])
    _wait(job_id, lambda j: j.status == "running" and j.samples_done >= 1)
    assert 'hx-trigger="every 1s"' in staff_client.get(f"/reruns/{job_id}/status").content.decode()
    staff_client.post(f"/reruns/{job_id}/cancel")
    job = _wait(job_id, lambda j: not j.is_active, timeout=60)
    assert job.status == "cancelled" and "cancelled" in job.reason
    assert job.samples_done < 300
    assert len(selectors.evaluations(rerun_tree["run_id"])) == 1


def test_a_worker_killed_mid_job_leaves_the_job_failed(
    worker_settings, rerun_tree: dict, staff_client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = use_broker(monkeypatch, redis_url(1, flush=True))  # its own queue: the module's worker must not take it
    worker = CeleryWorker(url, tmp_path / "doomed-worker.log")
    try:
        worker_settings.PTB_JOB_STALE_SECONDS = 3
        response = staff_client.post("/reruns/new", {"run_id": rerun_tree["run_id"], "max_tokens": "64",
                                                     "dataset_path": str(_long_dataset(tmp_path))})
        job_id = int(response["Location"].rstrip("/").rsplit("/", 1)[1])
        _wait(job_id, lambda j: j.status == "running" and j.samples_done >= 1)
        worker.kill()
    finally:
        worker.stop()
    time.sleep(4)
    out = StringIO()
    call_command("reap_jobs", stdout=out)
    assert f": {job_id}" in out.getvalue()
    job = RerunJob.objects.get(pk=job_id)
    assert job.status == "failed" and job.reason.startswith("worker lost: no heartbeat since")
    assert 'id="job-state">failed' in staff_client.get(f"/reruns/{job_id}/").content.decode()
    assert len(selectors.evaluations(rerun_tree["run_id"])) == 1
