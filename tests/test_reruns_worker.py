"""Jobs end to end: a real Celery worker process on a real Redis broker evaluates a tiny Qwen2 checkpoint with
inspect-ai on CPU (the real inspect_evals tasks on local copies of their datasets, each attempt in a process of its
own) and reports back to a live test server over HTTP; judge re-runs as jobs; a job nobody takes; kill, cancel
and failure paths; the demo's rerunnable run clicked through in a browser."""
from __future__ import annotations

import json
import sys
import time
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from inspect_ai.log import read_eval_log

from evaluator.benchmarks import spec_for
from evaluator.models import RerunJob
from leaderboard.services import import_published
from tests.conftest import JUDGE_COMMAND, CeleryWorker, local_dataset, redis_url, use_broker, write_run
from traces import selectors
from ingest.tree import ingest_tree
from traces.layout import run_id as make_run_id

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


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
    # A local JSONL is not the benchmark's own dataset: the rerun is stored and shown, exploratory, and the run's
    # score and its leaderboard cell keep the original's.
    import_published()  # the suite's benchmarks and base models, for the leaderboard built from runs
    run_id = rerun_tree["run_id"]
    form = staff_client.get(f"/runs/{run_id}/").content.decode()
    assert "only on the benchmark's own dataset with all of its samples" in form and 'id="rerun-rule"' in form
    response = staff_client.post("/reruns/new", {"run_id": run_id, "max_tokens": "16",
                                                 "dataset_path": str(rerun_tree["dataset"])})
    assert response.status_code == 302
    job_id = int(response["Location"].rstrip("/").rsplit("/", 1)[1])
    job = _wait(job_id, lambda j: not j.is_active)
    assert job.status == "succeeded", job.reason + job.log

    log = read_eval_log(str(worker_settings.PTB_EVAL_LOG_DIR / job.eval_log))
    eval_score = log.results.scores[0].metrics["accuracy"].value
    newest, original = selectors.evaluations(run_id)
    assert (newest.origin, newest.score, newest.counts) == ("rerun-exploratory", eval_score, False)
    assert newest.score == job.new_score
    assert newest.provenance["exploratory"] == f"the local dataset {rerun_tree['dataset'].name}, not the benchmark's own"
    assert (original.origin, original.score, original.counts) == ("original", 0.25, True) and job.old_score == 0.25
    assert 100 * selectors.get_run(run_id).score == 25.0
    assert _runs_cell(run_id) == 25.0
    provenance = newest.provenance
    assert provenance["inspect_ai"] == log.eval.packages["inspect_ai"] and provenance["provider"] == "hf"
    assert len(provenance["chat_template_sha256"]) == 64 and provenance["settings"]["max_tokens"] == 16
    assert provenance["samples"] == 3 and provenance["job"] == job_id
    assert (job.samples_done, job.samples_total) == (3, 3) and job.worker_host

    page = staff_client.get(f"/reruns/{job_id}/").content.decode()
    assert 'id="job-state">succeeded' in page and "3 of 3 samples" in page and "hx-trigger" not in page
    assert 'id="job-exploratory"><strong>Exploratory evaluation:</strong> the local dataset ' in page
    assert "exploratory, not the run&#x27;s score" in page and 'id="job-counts"' not in page
    assert staff_client.get(f"/reruns/{job_id}/eval-log").status_code == 200
    run_page = staff_client.get(f"/runs/{run_id}/").content.decode()
    assert 'id="new-score"' not in run_page  # no "rerun score ... was ..." headline: the score did not change
    assert '<span class="exploratory">exploratory rerun</span>' in run_page
    assert f'<td class="num">{100 * eval_score:.1f}</td>' in run_page


def test_a_rerun_on_the_benchmarks_own_dataset_with_all_samples_becomes_the_score(
    celery_worker: CeleryWorker, redis_broker: str, worker_settings, rerun_tree: dict, staff_client: Client,
) -> None:
    # The worker's own Hugging Face cache holds openai/gsm8k (3 synthetic test rows stand in for the real test set,
    # which cannot be downloaded here); no dataset and no limit: the rerun counts.
    import shutil

    from demo.datasets import synthetic_rows
    from evaluator.hf_cache import write_dataset_cache

    import_published()
    spec = spec_for("gsm8k")
    write_dataset_cache(celery_worker.hf_datasets_cache, spec.dataset, synthetic_rows("gsm8k", 3))
    try:
        response = staff_client.post("/reruns/new", {"run_id": rerun_tree["run_id"], "max_tokens": "8",
                                                     "dataset_path": ""})
        job_id = int(response["Location"].rstrip("/").rsplit("/", 1)[1])
        assert 'id="job-counts"' in staff_client.get(f"/reruns/{job_id}/").content.decode()
        job = _wait(job_id, lambda j: not j.is_active, timeout=240)
    finally:
        shutil.rmtree(celery_worker.hf_datasets_cache, ignore_errors=True)
        shutil.rmtree(celery_worker.inspect_cache, ignore_errors=True)
    assert job.status == "succeeded", job.reason + job.log
    assert job.exploratory_reason == "" and (job.samples_done, job.samples_total) == (3, 3)
    newest, original = selectors.evaluations(rerun_tree["run_id"])
    assert (newest.origin, newest.counts, original.counts) == ("rerun", True, False)
    assert "exploratory" not in newest.provenance
    assert selectors.get_run(rerun_tree["run_id"]).score == job.new_score == newest.score
    assert _runs_cell(rerun_tree["run_id"]) == pytest.approx(100 * job.new_score)
    run_page = staff_client.get(f"/runs/{rerun_tree['run_id']}/").content.decode()
    assert 'id="old-score">25.0' in run_page and f'id="new-score">{100 * job.new_score:.1f}' in run_page


def _runs_cell(run_id: str) -> float:
    """The gsm8k cell (percent) of the run's agent on the leaderboard built from runs, on the run's base model."""
    from leaderboard import selectors as board

    run = selectors.get_run(run_id)
    rows = [r for r in board.leaderboard(source="runs", base_model=run.base_model).rows if r.source == "runs"]
    (row,) = [r for r in rows if r.key == run.agent_key]
    return round(100 * row.cells[run.benchmark].score, 6)


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
    assert lines[3] == (f"exploratory, not the run's score: 2 samples, not the whole test set; "
                        f"the local dataset {rerun_tree['dataset'].name}, not the benchmark's own")
    assert job.samples_total == 2
    # Two samples are not the test set: the rerun is kept as exploratory and the run's score stays the original's.
    newest = selectors.evaluations(rerun_tree["run_id"])[0]
    assert (newest.origin, newest.counts) == ("rerun-exploratory", False)
    assert 100 * selectors.get_run(rerun_tree["run_id"]).score == 25.0


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
    templates_dir: Path,
) -> None:
    url = use_broker(monkeypatch, redis_url(1, flush=True))  # its own queue: the module's worker must not take it
    worker = CeleryWorker(url, tmp_path / "doomed-worker.log", templates=templates_dir)
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


# --- the real benchmark tasks ---

@pytest.mark.parametrize("benchmark, task", [
    ("gsm8k", "inspect_evals/gsm8k"), ("aime2025", "inspect_evals/aime2025"), ("humaneval", "inspect_evals/humaneval"),
    ("gpqamain", "gpqa_main"), ("bfcl", "inspect_evals/bfcl"),
])
def test_the_real_benchmark_task_runs_on_a_local_copy_of_its_dataset(
    celery_worker: CeleryWorker, redis_broker: str, worker_settings, rerun_tree: dict, tiny_checkpoint: Path,
    staff_client: Client, tmp_path: Path, benchmark: str, task: str,
) -> None:
    # The worker has no hub and an empty Hugging Face cache; the job names a local copy of the benchmark's dataset
    # (2 synthetic rows in the `datasets` cache layout), which the real task loads offline.
    name = f"{benchmark}_Qwen_Qwen3-1.7B-Base_17000101"
    write_run(rerun_tree["root"], checkpoint=tiny_checkpoint, run_dir=name)
    ingest_tree(root=rerun_tree["root"])
    run_id = make_run_id("claude_claude-opus-4-6_10h_run1", name)
    copy = local_dataset(tmp_path / f"{benchmark}-copy", benchmark, n=2)
    response = staff_client.post("/api/reruns", {"run_id": run_id, "max_tokens": 8, "dataset_path": str(copy)},
                                 content_type="application/json")
    assert response.status_code == 201, response.content
    job = _wait(response.json()["id"], lambda j: not j.is_active, timeout=240)
    assert job.status == "succeeded", job.reason + job.log

    log = read_eval_log(str(worker_settings.PTB_EVAL_LOG_DIR / job.eval_log))
    assert log.eval.task == task and log.eval.model == f"hf/{job.checkpoint}"
    assert log.eval.metadata["ptb_job"] == job.pk and log.results.total_samples == 2
    assert job.new_score == log.results.scores[0].metrics["accuracy"].value
    settings = selectors.evaluations(run_id)[0].provenance["settings"]
    spec = spec_for(benchmark)
    assert (settings["max_connections"], settings["family"], settings["family_from"]) == (
        spec.max_connections, "qwen", "path")
    assert settings["chat_template_file"] == "qwen3.jinja" and settings["dataset"] == str(copy)
    assert (job.samples_done, job.samples_total) == (2, 2)


# --- nobody listening ---

def _until_the_worker_answers(timeout: float = 30) -> None:
    from evaluator import workers

    deadline = time.monotonic() + timeout
    while not workers.census("celery", fresh=True).listening:
        assert time.monotonic() < deadline, "the module's worker never answered Celery's inspect"

def test_a_job_nobody_takes_says_no_worker_is_listening(
    celery_worker: CeleryWorker, redis_broker: str, worker_settings, rerun_tree: dict, staff_client: Client,
) -> None:
    from django.core.cache import cache

    cache.clear()
    worker_settings.PTB_JOB_QUEUE = "nobody-listens-here"
    worker_settings.PTB_JOB_PICKUP_SECONDS = 1
    extras = staff_client.get("/reruns/form-extras?benchmark=gsm8k").content.decode()
    assert "No worker has been seen on queue <code>nobody-listens-here</code>" in extras
    response = staff_client.post("/reruns/new", {"run_id": rerun_tree["run_id"], "max_tokens": "8",
                                                 "dataset_path": str(rerun_tree["dataset"])})
    job_id = int(response["Location"].rstrip("/").rsplit("/", 1)[1])
    assert "Waiting" not in staff_client.get(f"/reruns/{job_id}/status").content.decode()  # not yet: 1 s
    time.sleep(1.5)
    status = staff_client.get(f"/reruns/{job_id}/status").content.decode()
    assert "No worker is listening on queue nobody-listens-here" in status
    assert 'id="job-state">queued' in status and RerunJob.objects.get(pk=job_id).queue == "nobody-listens-here"
    # The module's worker listens on the default queue: the form names it (once it answered a broadcast: a busy
    # machine may make it miss one), and a job there is not "waiting".
    worker_settings.PTB_JOB_QUEUE = "celery"
    _until_the_worker_answers()
    extras = staff_client.get("/reruns/form-extras?benchmark=gsm8k").content.decode()
    assert 'id="rerun-workers">1 worker(s) on queue <code>celery</code>: test-' in extras
    assert staff_client.get("/api/workers").json()["listening"] is True
    staff_client.post(f"/reruns/{job_id}/cancel")


# --- the judge re-run is a job ---

def test_the_judge_reruns_as_a_job(
    celery_worker: CeleryWorker, redis_broker: str, worker_settings, rerun_tree: dict, staff_client: Client,
) -> None:
    # The server offers the re-run because it has a command; the worker runs its own (the same stub here).
    worker_settings.PTB_JUDGE_COMMAND = json.loads(JUDGE_COMMAND)
    run_id = rerun_tree["run_id"]
    assert "Re-run judge" in staff_client.get(f"/runs/{run_id}/").content.decode()
    response = staff_client.post(f"/reruns/runs/{run_id}/judge")
    assert response.status_code == 302
    job_id = int(response["Location"].rstrip("/").rsplit("/", 1)[1])
    job = _wait(job_id, lambda j: not j.is_active)
    assert (job.kind, job.status) == ("judge", "succeeded"), job.reason + job.log
    assert "verdicts stored: contamination flagged, disallowed_model clean" in job.log
    page = staff_client.get(f"/reruns/{job_id}/").content.decode()
    assert "Judge re-run #" in page and "judge done" in page and "hx-trigger" not in page
    run = selectors.get_run(run_id)
    reruns = {v.kind: v for v in run.verdicts if v.attempt == "rerun"}
    assert reruns["contamination"].value == "flagged"
    # It ran in a copy of the run's task/ folder, with the run directory as its argument.
    assert reruns["contamination"].note == "re-run by reviewer"
    assert reruns["evaluation_access"].note == f"saw train.py of {rerun_tree['run_dir'].name}; re-run by reviewer"
    assert reruns["disallowed_model"].value == "clean"
    assert run.flags["contamination"] is None  # a txt-era rerun is shown, the original verdict counts (spec 3.1)
    assert "re-run by reviewer" in staff_client.get(f"/runs/{run_id}/").content.decode()
    assert not (rerun_tree["run_dir"] / "task" / "contamination_judgement.txt").exists()
    api = staff_client.post(f"/api/runs/{run_id}/judge", content_type="application/json")
    assert api.status_code == 201 and api.json()["kind"] == "judge"
    _wait(api.json()["id"], lambda j: not j.is_active)


@pytest.fixture
def mock_judge_worker(tmp_path: Path, templates_dir: Path, monkeypatch: pytest.MonkeyPatch):
    """A worker of its own (on its own Redis database) whose PTB_JUDGE_COMMAND is the demo's stand-in judge, as
    `make worker` sets it; this process queues to it."""
    command = json.dumps([sys.executable, str(Path(__file__).resolve().parent.parent / "demo" / "mock_hosted_judge.py"),
                          "{run_dir}"])
    url = redis_url(4, flush=True)
    worker = CeleryWorker(url, tmp_path / "mock-judge-worker.log", templates=templates_dir,
                          env={"PTB_JUDGE_COMMAND": command})
    use_broker(monkeypatch, url)
    yield command
    worker.stop()


def test_the_demos_stand_in_judge_flips_a_verdict_through_the_worker(
    mock_judge_worker: str, worker_settings, rerun_tree: dict, staff_client: Client,
) -> None:
    """demo/mock_hosted_judge.py (a mock of the hosted LLM judge, which cannot run here) re-judges a run whose judge
    said "no contamination detected", on a real worker: the agent's script trains on the test split, so the
    stand-in flags it. Its verdict file is the one it wrote into its fresh output folder, although the run's task/
    already holds a file of that name (the before/after diff of task/ used to drop such a file); every question it
    answered is stored as a rerun verdict, shown on the run page as the re-run job's, and read by the ``any``
    judging rule, while the era's rule keeps reading the original txt verdict (spec 3.3)."""
    from traces.verdicts import flags_under

    run_dir, run_id = rerun_tree["run_dir"], rerun_tree["run_id"]
    (run_dir / "task" / "train_extra.py").write_text(
        'ds = load_dataset("openai/gsm8k", "main", split="test"); ds.to_json("data/extra_train.json")\n')
    (run_dir / "task" / "judgement_mock_hosted.json").write_text('{"contamination": false, "disallowed_model": false}')
    worker_settings.PTB_JUDGE_COMMAND = json.loads(mock_judge_worker)
    before = selectors.get_run(run_id)
    assert {v.kind: v.value for v in before.verdicts} == {"contamination": "clean", "disallowed_model": "clean"}
    response = staff_client.post(f"/api/runs/{run_id}/judge", content_type="application/json")
    assert response.status_code == 201
    job = _wait(response.json()["id"], lambda j: not j.is_active)
    assert (job.kind, job.status) == ("judge", "succeeded"), job.reason + job.log
    run = selectors.get_run(run_id)
    reruns = {v.kind: v for v in run.verdicts if v.attempt == "rerun"}
    assert {k: (v.judge, v.value) for k, v in reruns.items()} == {
        "contamination": ("mock_hosted", "flagged"), "disallowed_model": ("mock_hosted", "clean")}
    assert "task/train_extra.py line 1 loads the test split into training data (data/extra_train.json)" in \
        reruns["contamination"].text and reruns["contamination"].text.startswith("Stand-in judge")
    assert run.flags["contamination"] is None                                   # era: the original txt verdict
    assert flags_under(run.verdicts, "any")["contamination"] == "flagged"      # the judge's newest answer
    twin = staff_client.get(f"/api/runs/{run_id}").json()
    (row,) = [v for v in twin["judge_panel"] if v["judge"] == "mock_hosted" and v["kind"] == "contamination"]
    assert row["origin"] == "written by a judge re-run job (judgement_mock_hosted.json)" and not row["counts"]
    page = staff_client.get(f"/runs/{run_id}/").content.decode()
    assert "written by a judge re-run job (judgement_mock_hosted.json)" in page
    assert "judgement_mock_hosted.json</code> in the run directory" not in page
    # Labelled on the page as a rerun of the stand-in judge (demo/mock_hosted_judge.py), not as the hosted judge.
    row = page[page.index('data-judge="mock_hosted" data-attempt="rerun"'):]
    row = row[:row.index("</tr>")]
    assert '<span class="muted">(rerun)</span>' in row and ">stand-in judge</span>" in row
