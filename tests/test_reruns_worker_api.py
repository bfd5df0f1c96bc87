"""The worker API's rules: who may report (the worker token and the job's own signed credential), a lost worker's
job retried once, late reports ignored, a cancel winning over a late success, and the server reading the score
from the uploaded .eval log itself (garbage, another job's or a tampered log refused)."""
from __future__ import annotations

import json
import time
from datetime import timedelta
from io import BytesIO
from pathlib import Path

import pytest
from django.core import signing
from django.test import Client
from django.utils import timezone

from evaluator import services
from evaluator.models import RerunJob
from evaluator.permissions import CREDENTIAL_SALT, issue_job_credential
from tests.conftest import GSM8K_ROWS, WORKER_TOKEN
from traces import selectors

pytestmark = pytest.mark.django_db


def _auth(job: RerunJob, credential: str | None = None) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {WORKER_TOKEN}",
            "HTTP_X_PTB_JOB_CREDENTIAL": issue_job_credential(job) if credential is None else credential}


@pytest.fixture(autouse=True)
def worker_token(settings) -> None:
    settings.PTB_WORKER_TOKEN = WORKER_TOKEN
    settings.PTB_JOB_STALE_SECONDS = 60


def _start(client: Client, job: RerunJob, host: str = "gpu2") -> dict:
    response = client.post(f"/api/worker/jobs/{job.pk}/start", {"host": host}, content_type="application/json",
                           **_auth(job))
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
                           "log": ["sample 2"]}, content_type="application/json", **_auth(job))
    assert response.json() == {"status": "running", "cancel_requested": True}
    job.refresh_from_db()
    assert (job.samples_done, job.samples_total) == (2, 9) and "sample 2" in job.log


def test_a_late_success_after_a_cancel_stores_nothing(client: Client, rerun_tree: dict) -> None:
    job = RerunJob.objects.create(run_id=rerun_tree["run_id"], benchmark="gsm8k", checkpoint="/x")
    _start(client, job)
    services.cancel_job(job)
    report = '{"status": "succeeded", "score": 1.0, "samples_done": 3, "samples_total": 3, "provenance": {}}'
    response = client.post(f"/api/worker/jobs/{job.pk}/finish",
                           {"report": report, "eval_log": BytesIO(b"zip")}, **_auth(job))
    assert response.json() == {"status": "cancelled", "reason": "cancelled before the result was stored"}
    assert len(selectors.evaluations(rerun_tree["run_id"])) == 1


def test_a_report_after_the_job_ended_is_ignored(client: Client, rerun_tree: dict) -> None:
    job = RerunJob.objects.create(run_id=rerun_tree["run_id"], benchmark="gsm8k", checkpoint="/x",
                                  status="failed", reason="worker lost: no heartbeat since ...")
    report = '{"status": "succeeded", "score": 1.0, "provenance": {}}'
    response = client.post(f"/api/worker/jobs/{job.pk}/finish", {"report": report, "eval_log": BytesIO(b"z")},
                           **_auth(job))
    assert response.json()["status"] == "failed"
    assert len(selectors.evaluations(rerun_tree["run_id"])) == 1
    assert client.post(f"/api/worker/jobs/{job.pk}/finish", {"report": "[1]"}, **_auth(job)).status_code == 400


@pytest.mark.parametrize("ended", ["failed", "succeeded", "cancelled"])
def test_nothing_a_worker_sends_after_the_job_ended_changes_it(client: Client, rerun_tree: dict,
                                                               ended: str) -> None:
    """A job credential replayed after the job ended (every worker endpoint: start, progress, finish with each
    status) changes no field of the job, not its log, and stores no evaluation (issue 25)."""
    job = RerunJob.objects.create(run_id=rerun_tree["run_id"], benchmark="gsm8k", checkpoint="/x")
    _start(client, job)
    RerunJob.objects.filter(pk=job.pk).update(status=ended, reason="ended by the test", finished_at=timezone.now())
    before = RerunJob.objects.filter(pk=job.pk).values().get()
    evaluations = selectors.evaluations(rerun_tree["run_id"])
    assert _start(client, job, "attacker")["proceed"] is False
    progress = client.post(f"/api/worker/jobs/{job.pk}/progress", {"samples_done": 9, "samples_total": 9,
                           "log": ["INJECTED progress line"]}, content_type="application/json", **_auth(job))
    assert progress.json() == {"status": ended, "cancel_requested": False}
    for status in ("succeeded", "failed", "cancelled"):
        report = json.dumps({"status": status, "score": 1.0, "reason": "INJECTED reason", "samples_done": 9,
                             "log": ["INJECTED finish line"], "provenance": {"x": 1}})
        response = client.post(f"/api/worker/jobs/{job.pk}/finish", {"report": report, "eval_log": BytesIO(b"z")},
                               **_auth(job))
        assert response.json() == {"status": ended, "reason": "ended by the test"}
    assert RerunJob.objects.filter(pk=job.pk).values().get() == before
    assert "INJECTED" not in RerunJob.objects.get(pk=job.pk).log
    assert selectors.evaluations(rerun_tree["run_id"]) == evaluations


# --- the protocols' models (evaluator.protocol) ---

@pytest.mark.parametrize("report, named", [
    ('{"status": "done"}', "report.status: Input should be 'succeeded', 'failed' or 'cancelled'"),
    ('{"reason": "no status"}', "report.status: Field required"),
    ('{"status": "failed", "samples_done": "many"}', "report.samples_done: Input should be a valid integer"),
    ('{"status": "failed", "samples_done": -1}', "report.samples_done: Input should be greater than or equal to 0"),
    ('{"status": "succeeded", "verdict_files": {"a.txt": 3}}', "report.verdict_files.a.txt: Input should be a valid string"),
    ('{"status": "failed", "scroe": 0.5}', "report.scroe: Extra inputs are not permitted"),
    ("[1]", "report: Input should be an object"),
    ('{"status": ', "report: Invalid JSON"),
])
def test_a_malformed_report_is_answered_400_naming_the_field(client: Client, report: str, named: str) -> None:
    job = RerunJob.objects.create(run_id="r", benchmark="gsm8k", checkpoint="/x")
    _start(client, job)
    log = RerunJob.objects.get(pk=job.pk).log
    response = client.post(f"/api/worker/jobs/{job.pk}/finish", {"report": report}, **_auth(job))
    assert response.status_code == 400 and response.json()["detail"].startswith(named), response.content
    job.refresh_from_db()
    assert (job.status, job.log, job.result) == ("running", log, None)  # refused before anything was taken


def test_a_malformed_task_message_is_refused_before_the_worker_calls_the_server() -> None:
    """The Celery task validates its message (Celery's pydantic=True) before its body runs: run here in process
    (Task.apply), it fails naming the field, and no call reaches the server (none could: api_base is no URL)."""
    from pydantic import ValidationError

    from evaluator import services, tasks

    job = RerunJob.objects.create(run_id="r", benchmark="gsm8k", checkpoint="/x", celery_task_id="task-m")
    message = {**services.job_message(job).model_dump(mode="json"), "api_base": "http://nowhere.invalid"}
    for task in (tasks.evaluate_rerun, tasks.rerun_judge):
        for broken, named in (({**message, "kind": "rerun"}, "kind"), ({**message, "limit": 0}, "limit"),
                              ({k: v for k, v in message.items() if k != "credential"}, "credential")):
            result = task.apply(args=[broken], task_id="task-m")
            assert isinstance(result.result, ValidationError), result.result
            assert [e["loc"] for e in result.result.errors()] == [(named,)]
    assert RerunJob.objects.get(pk=job.pk).status == "queued"


def test_the_protocols_job_statuses_and_kinds_are_the_models() -> None:
    from typing import get_args

    from evaluator.protocol import TASK_NAMES, JobKind, JobStatus

    assert set(get_args(JobStatus)) == set(RerunJob.Status.values)
    assert set(get_args(JobKind)) == set(RerunJob.Kind.values) == set(TASK_NAMES)


# --- forged credentials ---

def test_a_forged_or_foreign_credential_is_refused(client: Client, settings) -> None:
    job = RerunJob.objects.create(run_id="r", benchmark="gsm8k", checkpoint="/x", celery_task_id="task-1")
    other = RerunJob.objects.create(run_id="r", benchmark="gsm8k", checkpoint="/x", celery_task_id="task-2")
    url = f"/api/worker/jobs/{job.pk}/start"
    good = issue_job_credential(job)
    forged = {
        "none": "",
        "signed with another key": signing.dumps({"job": job.pk, "task": "task-1"}, key="not-the-secret-key",
                                                 salt=CREDENTIAL_SALT, compress=True),
        "another salt": signing.dumps({"job": job.pk, "task": "task-1"}, salt="other", compress=True),
        "edited": good[:-3] + ("AAA" if not good.endswith("AAA") else "BBB"),
        "another job's": issue_job_credential(other),
    }
    for what, credential in forged.items():
        response = client.post(url, {"host": "h"}, content_type="application/json", **_auth(job, credential))
        assert response.status_code == 403, what
    assert client.post(url, {"host": "h"}, content_type="application/json", **_auth(other, forged["another job's"])
                       ).status_code == 403  # the credential of job `other` on job's URL
    RerunJob.objects.filter(pk=job.pk).update(celery_task_id="task-1-requeued")
    response = client.post(url, {"host": "h"}, content_type="application/json", **_auth(job, good))
    assert response.status_code == 403 and "earlier delivery" in response.json()["detail"]
    job.refresh_from_db()
    settings.PTB_JOB_CREDENTIAL_SECONDS = 1
    old = issue_job_credential(job)
    time.sleep(2.1)
    response = client.post(url, {"host": "h"}, content_type="application/json", **_auth(job, old))
    assert response.status_code == 403 and "expired" in response.json()["detail"]
    assert RerunJob.objects.get(pk=job.pk).status == "queued"  # nothing a refused call did changed the job
    settings.PTB_JOB_CREDENTIAL_SECONDS = 60
    assert client.post(url, {"host": "h"}, content_type="application/json", **_auth(job)).json()["proceed"] is True
    # The worker token is still needed beside the credential.
    headers = {**_auth(job), "HTTP_AUTHORIZATION": "Bearer wrong"}
    assert client.post(f"/api/worker/jobs/{job.pk}/progress", {}, content_type="application/json",
                       **headers).status_code == 403


# --- the server reads the .eval log ---

@pytest.fixture(scope="module")
def scored_log(tmp_path_factory: pytest.TempPathFactory, tiny_checkpoint: Path, templates_dir: Path) -> Path:
    """A real .eval log: the tiny checkpoint on a 3-row gsm8k-format JSONL (one attempt, 8 new tokens)."""
    from evaluator.runner import evaluate_checkpoint

    folder = tmp_path_factory.mktemp("scored")
    dataset = folder / "gsm8k_local.jsonl"
    dataset.write_text("".join(json.dumps(row) + "\n" for row in GSM8K_ROWS))
    outcome = evaluate_checkpoint(checkpoint=tiny_checkpoint, benchmark="gsm8k", limit=None, max_tokens=8,
                                  log_dir=folder / "logs", provider="hf", dataset_path=dataset,
                                  templates_dir=templates_dir, eval_metadata={"ptb_job": 0, "ptb_task": "t"})
    return outcome.log_path


def _log_for(job: RerunJob, base: Path, tmp_path: Path, edit=None) -> BytesIO:
    """The base log as this job's worker would have written it (its metadata and model), then ``edit``ed."""
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(base))
    log.eval.metadata = {"ptb_job": job.pk, "ptb_task": job.celery_task_id, "ptb_run": job.run_id}
    log.eval.model = f"hf/{job.checkpoint}"
    if edit:
        edit(log)
    path = tmp_path / f"job{job.pk}-{time.monotonic_ns()}.eval"
    write_eval_log(log, str(path))
    return BytesIO(path.read_bytes())


@pytest.fixture
def running_job(client: Client, rerun_tree: dict, scored_log: Path, settings, tmp_path: Path) -> RerunJob:
    settings.PTB_EVAL_LOG_DIR = tmp_path / "evals"
    from inspect_ai.log import read_eval_log

    checkpoint = read_eval_log(str(scored_log), header_only=True).eval.model.removeprefix("hf/")
    job = RerunJob.objects.create(run_id=rerun_tree["run_id"], benchmark="gsm8k", checkpoint=checkpoint,
                                  dataset_path=str(rerun_tree["dataset"]), celery_task_id="task-log")
    _start(client, job)
    job.refresh_from_db()
    return job


def _finish(client: Client, job: RerunJob, upload: BytesIO, claimed: float = 0.99):
    report = json.dumps({"status": "succeeded", "score": claimed, "samples_done": 3, "samples_total": 3,
                         "provenance": {"provider": "hf"}})
    return client.post(f"/api/worker/jobs/{job.pk}/finish", {"report": report, "eval_log": upload}, **_auth(job))


def test_the_score_stored_is_read_from_the_log_not_the_report(client: Client, running_job: RerunJob,
                                                               scored_log: Path, tmp_path: Path, settings) -> None:
    from inspect_ai.log import read_eval_log

    response = _finish(client, running_job, _log_for(running_job, scored_log, tmp_path), claimed=0.99)
    assert response.status_code == 200 and response.json() == {"status": "succeeded", "reason": ""}
    in_log = read_eval_log(str(scored_log)).results.scores[0].metrics["accuracy"].value
    running_job.refresh_from_db()
    assert running_job.new_score == in_log != 0.99
    assert "the worker reported score 0.99; the .eval log says" in running_job.log
    newest = selectors.evaluations(running_job.run_id)[0]
    assert newest.score == in_log and newest.provenance["log_task"] == "gsm8k"
    assert newest.provenance["score_read_by"].startswith("server")
    assert (settings.PTB_EVAL_LOG_DIR / running_job.eval_log).is_file()


@pytest.mark.parametrize("upload, refusal", [
    ("garbage", "not an inspect-ai .eval log"),
    ("another job", "was not written for job"),
    ("another checkpoint", "not the job's checkpoint"),
    ("another task", "is of task 'inspect_evals/aime2025', not gsm8k"),
    ("tampered accuracy", "is not the mean of its 3 sample scores"),
    ("errored", "ended error, not success"),
])
def test_a_garbage_or_forged_log_is_refused(client: Client, running_job: RerunJob, scored_log: Path, tmp_path: Path,
                                            settings, upload: str, refusal: str) -> None:
    def edit(log) -> None:
        if upload == "another job":
            log.eval.metadata = {"ptb_job": running_job.pk + 1, "ptb_task": "task-other"}
        elif upload == "another checkpoint":
            log.eval.model = "hf//somewhere/else/final_model"
        elif upload == "another task":
            log.eval.task = "inspect_evals/aime2025"
        elif upload == "tampered accuracy":
            log.results.scores[0].metrics["accuracy"].value = 1.0
        elif upload == "errored":
            log.status = "error"

    body = BytesIO(b"PK\x03\x04 this is not a zip at all" * 50) if upload == "garbage" else _log_for(
        running_job, scored_log, tmp_path, edit)
    before = selectors.evaluations(running_job.run_id)
    response = _finish(client, running_job, body)
    assert response.status_code == 422 and refusal in response.json()["detail"], response.content
    running_job.refresh_from_db()
    assert running_job.status == "failed" and running_job.reason.startswith("the uploaded .eval log was refused")
    assert refusal in running_job.reason and running_job.new_score is None and not running_job.eval_log
    assert selectors.evaluations(running_job.run_id) == before  # nothing stored
    assert not any(settings.PTB_EVAL_LOG_DIR.glob("*"))  # the refused upload is not kept
