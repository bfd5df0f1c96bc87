"""Worker faults with real Celery workers (issue 25): a worker SIGKILLed mid-attempt on the filesystem broker and on
Redis (the job ends "worker lost" once its heartbeat is stale, nothing stored, and a retry of the job succeeds);
the same task delivered twice (acks_late redelivery: one evaluation stored, never two); a worker whose callbacks
are refused (the job never reports success); broken checkpoints (each a failed job naming the missing or broken
file). The checkpoint is the tiny Qwen2 one, evaluated by inspect-ai on CPU (tests/conftest.py)."""
from __future__ import annotations

import json
import shutil
import time
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils.timezone import now as django_now

from evaluator import services
from ptbsite.celery import app
from tests.conftest import CeleryWorker, redis_url, use_broker
from tests.test_reruns_worker import _long_dataset, _wait
from traces import selectors

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _filesystem_broker(monkeypatch: pytest.MonkeyPatch, data_dir: Path) -> dict[str, str]:
    """Point this process's Celery app at kombu's filesystem transport under ``data_dir/broker`` (the folders
    ptbsite.settings gives a worker whose PTB_DATA_DIR is ``data_dir``); returns the worker's environment."""
    folders = {"data_folder_in": str(data_dir / "broker" / "queue"), "data_folder_out": str(data_dir / "broker" / "queue"),
               "processed_folder": str(data_dir / "broker" / "processed"),
               "control_folder": str(data_dir / "broker" / "control"), "store_processed": False}
    for key in ("data_folder_in", "processed_folder", "control_folder"):
        Path(folders[key]).mkdir(parents=True, exist_ok=True)  # type: ignore[arg-type]
    use_broker(monkeypatch, "filesystem://")
    monkeypatch.setattr(app.conf, "broker_transport_options", folders)
    return {"PTB_DATA_DIR": str(data_dir)}


def _broker(kind: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, index: int) -> tuple[str, dict[str, str]]:
    if kind == "redis":
        return use_broker(monkeypatch, redis_url(index, flush=True)), {}
    return "filesystem://", _filesystem_broker(monkeypatch, tmp_path / "broker-data")


@pytest.mark.parametrize("broker", ["filesystem", "redis"])
def test_a_worker_killed_mid_attempt_ends_the_job_worker_lost_and_a_retry_succeeds(
        broker: str, worker_settings, rerun_tree: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        templates_dir: Path) -> None:
    url, env = _broker(broker, monkeypatch, tmp_path, index=2)
    worker_settings.PTB_JOB_STALE_SECONDS = 3
    before = selectors.evaluations(rerun_tree["run_id"])
    worker = CeleryWorker(url, tmp_path / "doomed.log", templates=templates_dir, env=env)
    try:
        job = services.queue_rerun(run_id=rerun_tree["run_id"], max_tokens=64,
                                   dataset_path=str(_long_dataset(tmp_path)))
        _wait(job.pk, lambda j: j.status == "running" and j.samples_done >= 1, timeout=180)
        worker.kill()  # SIGKILL to the whole group: the worker and its attempt process, mid-sample
    finally:
        worker.stop()
    killed_at = time.monotonic()
    time.sleep(3.5)
    call_command("reap_jobs", stdout=StringIO())
    job.refresh_from_db()
    assert job.status == "failed" and job.reason.startswith("worker lost: no heartbeat since"), job.reason
    assert time.monotonic() - killed_at < worker_settings.PTB_JOB_STALE_SECONDS + 10
    assert selectors.evaluations(rerun_tree["run_id"]) == before and not job.eval_log
    assert not list(Path(worker_settings.PTB_EVAL_LOG_DIR).glob(f"job{job.pk}-*"))

    # The retry: the run evaluated again (a short dataset now) by a fresh worker on the same broker.
    retry = services.queue_rerun(run_id=rerun_tree["run_id"], max_tokens=16, dataset_path=str(rerun_tree["dataset"]))
    fresh = CeleryWorker(url, tmp_path / "fresh.log", templates=templates_dir, env=env)
    try:
        retry = _wait(retry.pk, lambda j: not j.is_active, timeout=240)
    finally:
        fresh.stop()
    assert retry.status == "succeeded", retry.reason + retry.log
    after = selectors.evaluations(rerun_tree["run_id"])
    assert len(after) == len(before) + 1 and any(e.id == f"{rerun_tree['run_id']}-rerun-{retry.pk}" for e in after)
    job.refresh_from_db()
    assert job.status == "failed"  # the killed job stays as it ended


def test_the_same_task_delivered_twice_stores_one_evaluation(
        worker_settings, rerun_tree: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        templates_dir: Path) -> None:
    """acks_late: a broker may deliver a task again (a lost ack, a restored unacked message). A second copy of the
    message reaches the idle worker while the other one runs the job, and a third copy arrives after the job
    finished: one start wins, the others are told there is nothing to do, and one evaluation is stored.

    The copy is published once the job is running: published at once, both copies can sit in Redis until a worker
    polls, and a worker still starting (a loaded machine) leaves both to the first one, one after the other (the
    solo pool polls no new message while it runs a task), so the second copy would find the job ended."""
    url = use_broker(monkeypatch, redis_url(2, flush=True))
    before = selectors.evaluations(rerun_tree["run_id"])
    workers = [CeleryWorker(url, tmp_path / f"w{n}.log", templates=templates_dir,
                            env={"PTB_TEST_WORKER": str(n)}) for n in range(2)]
    try:
        job = services.queue_rerun(run_id=rerun_tree["run_id"], max_tokens=16,
                                   dataset_path=str(_long_dataset(tmp_path)), limit=8)
        _wait(job.pk, lambda j: j.status == "running", timeout=180)
        services._publish(job)  # the same task id, message and credential: a redelivery as a worker sees it
        job = _wait(job.pk, lambda j: not j.is_active, timeout=240)
        assert job.status == "succeeded", job.reason + job.log
        services._publish(job)  # and once more after the job ended
        deadline = time.monotonic() + 60
        while sum(w.log().count("skipped: job") for w in workers) < 2 and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        for worker in workers:
            worker.stop()
    logs = "".join(w.log() for w in workers)
    assert logs.count(f"skipped: job {job.pk} is running; nothing to do") == 1, logs[-3000:]
    assert logs.count(f"skipped: job {job.pk} is succeeded; nothing to do") == 1, logs[-3000:]
    job.refresh_from_db()
    assert job.status == "succeeded" and job.attempts == 1 and job.log.count("started on") == 1
    after = selectors.evaluations(rerun_tree["run_id"])
    assert len(after) == len(before) + 1
    assert len(list(Path(worker_settings.PTB_EVAL_LOG_DIR).glob(f"job{job.pk}-*"))) == 1


def test_a_worker_whose_callbacks_are_refused_never_reports_success(
        worker_settings, rerun_tree: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        templates_dir: Path) -> None:
    """The worker starts the job, then every call it makes is refused (the server's worker token changed under
    it): its heartbeats and its final report fail, so the job is ended by the reaper, not by the worker, and no
    evaluation is stored although the evaluation itself ran."""
    url = use_broker(monkeypatch, redis_url(2, flush=True))
    worker_settings.PTB_JOB_STALE_SECONDS = 3
    before = selectors.evaluations(rerun_tree["run_id"])
    worker = CeleryWorker(url, tmp_path / "refused.log", templates=templates_dir)
    try:
        job = services.queue_rerun(run_id=rerun_tree["run_id"], max_tokens=16,
                                   dataset_path=str(_long_dataset(tmp_path)), limit=6)
        _wait(job.pk, lambda j: j.status == "running", timeout=180)
        worker_settings.PTB_WORKER_TOKEN = "rotated-token"  # the live server now refuses this worker
        worker.wait_for("403 Forbidden", timeout=240)
        worker.wait_for(f"evaluator.evaluate_rerun[{job.celery_task_id}]", timeout=10)
        deadline = time.monotonic() + 240
        while "raised unexpected" not in worker.log() and "succeeded in" not in worker.log():
            assert time.monotonic() < deadline, worker.log()[-3000:]
            time.sleep(0.5)
    finally:
        worker.stop()
    job.refresh_from_db()
    assert job.status == "running"  # nothing the worker sent after the token change was taken
    time.sleep(3.5)
    call_command("reap_jobs", stdout=StringIO())
    job.refresh_from_db()
    assert job.status == "failed" and job.reason.startswith("worker lost"), job.reason
    assert selectors.evaluations(rerun_tree["run_id"]) == before and not job.eval_log


def _no_config(model: Path) -> str:
    (model / "config.json").unlink()
    return f"CheckpointMissing: checkpoint {model} has no config.json"


def _truncated(model: Path) -> str:
    weights = model / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:4096])
    return f"CheckpointLoadError: {weights} is broken (4096 bytes)"


def _unknown_architecture(model: Path) -> str:
    config = json.loads((model / "config.json").read_text())
    (model / "config.json").write_text(json.dumps({**config, "model_type": "ptb-unknown-arch",
                                                   "architectures": ["PtbUnknownForCausalLM"]}))
    return f"CheckpointLoadError: {model / 'config.json'} cannot be loaded: The checkpoint you are trying to load has model type `ptb-unknown-arch`"


def _no_tokenizer(model: Path) -> str:
    for path in model.iterdir():
        if path.name.startswith("tokenizer"):
            path.unlink()
    return f"CheckpointLoadError: checkpoint {model} has no usable tokenizer"


def _empty(model: Path) -> str:
    shutil.rmtree(model)
    model.mkdir()
    return f"CheckpointMissing: checkpoint {model} is an empty folder"


@pytest.mark.parametrize("breaks", [_no_config, _truncated, _unknown_architecture, _no_tokenizer, _empty],
                         ids=lambda f: f.__name__.strip("_"))
def test_a_broken_checkpoint_fails_its_job_naming_the_file(breaks, celery_worker: CeleryWorker, redis_broker: str,
                                                           worker_settings, rerun_tree: dict) -> None:
    reason = breaks(rerun_tree["run_dir"] / "final_model")
    before = selectors.evaluations(rerun_tree["run_id"])
    job = services.queue_rerun(run_id=rerun_tree["run_id"], max_tokens=8, dataset_path=str(rerun_tree["dataset"]))
    job = _wait(job.pk, lambda j: not j.is_active, timeout=180)
    assert job.status == "failed" and job.reason.startswith(reason), job.reason
    assert selectors.evaluations(rerun_tree["run_id"]) == before and not job.eval_log


def test_a_task_redelivered_after_its_worker_died_is_retried_once_and_stored_once(
        worker_settings, rerun_tree: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        templates_dir: Path) -> None:
    """The real acks_late path on Redis: the worker is SIGKILLed mid-attempt without acknowledging the task; after
    the visibility timeout (PTB_BROKER_VISIBILITY_SECONDS, 4 s here) another worker gets the same message, finds
    the job's heartbeat stale and retries it (attempt 2 of MAX_ATTEMPTS); one evaluation and one log stored."""
    url = use_broker(monkeypatch, redis_url(2, flush=True))
    worker_settings.PTB_JOB_STALE_SECONDS = 3
    env = {"PTB_BROKER_VISIBILITY_SECONDS": "4"}
    before = selectors.evaluations(rerun_tree["run_id"])
    doomed = CeleryWorker(url, tmp_path / "doomed.log", templates=templates_dir, env=env)
    try:
        job = services.queue_rerun(run_id=rerun_tree["run_id"], max_tokens=16, limit=12,
                                   dataset_path=str(_long_dataset(tmp_path)))
        _wait(job.pk, lambda j: j.status == "running" and j.samples_done >= 1, timeout=180)
        doomed.kill()
    finally:
        doomed.stop()
    # The second worker comes up once the job's last heartbeat is stale: the message was delivered more than the
    # visibility timeout ago, so a worker that starts at once gets it at once, while the heartbeat is still fresh,
    # and is rightly told the job is running (on an idle machine a worker starts within the 3 s).
    job.refresh_from_db()
    assert job.heartbeat_at is not None
    stale_at = job.heartbeat_at + timedelta(seconds=worker_settings.PTB_JOB_STALE_SECONDS + 1)
    time.sleep(max(0.0, (stale_at - django_now()).total_seconds()))
    second = CeleryWorker(url, tmp_path / "second.log", templates=templates_dir, env=env)
    try:
        job = _wait(job.pk, lambda j: not j.is_active, timeout=300)
    finally:
        second.stop()
    assert job.status == "succeeded", job.reason + job.log
    assert job.attempts == 2 and "the previous worker was lost; retrying on" in job.log
    assert job.celery_task_id in second.log()  # the same task, delivered again
    after = selectors.evaluations(rerun_tree["run_id"])
    assert len(after) == len(before) + 1
    assert len(list(Path(worker_settings.PTB_EVAL_LOG_DIR).glob(f"job{job.pk}-*"))) == 1


@pytest.mark.parametrize(("env", "visibility"), [
    ({}, 6 * 3600 + 600),  # the default: past the default job timeout
    ({"PTB_JOB_TIMEOUT_SECONDS": "7200"}, 7800),
    ({"PTB_BROKER_VISIBILITY_SECONDS": "4"}, 4),
])
def test_the_redis_visibility_timeout_outlasts_a_job(env: dict[str, str], visibility: int) -> None:
    """A message is delivered again only once its job cannot still be running (ptbsite/settings.py): a copy reaching
    an idle worker while the job runs would be acknowledged and the message deleted. Read from the settings of a
    fresh process, as a worker reads them."""
    import os
    import subprocess
    import sys

    code = ("import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'ptbsite.settings'); django.setup(); "
            "from django.conf import settings; print(settings.CELERY_BROKER_TRANSPORT_OPTIONS['visibility_timeout'])")
    clean = {k: v for k, v in os.environ.items() if k not in ("PTB_JOB_TIMEOUT_SECONDS", "PTB_BROKER_VISIBILITY_SECONDS")}
    out = subprocess.run([sys.executable, "-c", code], env={**clean, "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0",
                                                              **env},
                         cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True, check=True)
    assert int(out.stdout.strip().splitlines()[-1]) == visibility
