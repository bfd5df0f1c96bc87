"""The demo's rerunnable run, clicked through in headless Chromium: ``manage.py demo_worker_assets`` turns a demo run's
config-only final_model/ stub into a tiny checkpoint and writes a local gsm8k dataset; a real Celery worker on Redis
runs the real inspect_evals gsm8k task on it; the job page goes queued -> running with progress -> succeeded; the
new score stands beside the old on the run page; the .eval log downloads and its samples show."""
from __future__ import annotations

import json
import time
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from inspect_ai.log import read_eval_log

from ptbsite.templatetags.scores import pct

from evaluator import workers
from evaluator.models import RerunJob
from tests.conftest import ARTIFACTS, CeleryWorker, RERUN_METHOD, RERUN_RUN_DIR, write_run
from traces import selectors
from traces.layout import run_id as make_run_id
from ingest.tree import ingest_tree

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.slow]


def test_the_demo_run_reruns_end_to_end_in_a_browser(
    live_server, page, celery_worker: CeleryWorker, redis_broker: str, worker_settings, fresh_warehouse: Path,
    tmp_path: Path,
) -> None:
    # A results tree as make_demo_results writes it: a scored gsm8k Qwen run whose final_model/ is a config stub.
    root = tmp_path / "demo-results"
    run_dir = write_run(root, checkpoint=None)
    (run_dir / "final_model").mkdir()
    (run_dir / "final_model" / "config.json").write_text(json.dumps({"architectures": ["Qwen3ForCausalLM"]}))
    worker_settings.PTB_LOCAL_DATASETS_DIR = tmp_path / "datasets"
    worker_settings.DATA_DIR = tmp_path / "data"
    out = StringIO()
    call_command("demo_worker_assets", str(root), train_steps=0, stdout=out)  # untrained: quick to build
    run_id = make_run_id(RERUN_METHOD, RERUN_RUN_DIR)
    assert f"/runs/{run_id}/" in out.getvalue() and (run_dir / "final_model" / "model.safetensors").is_file()
    assert ingest_tree(root=root).stored == 1

    client = Client()
    client.force_login(get_user_model().objects.create_user("reviewer", is_staff=True))
    page.context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value,
                               "url": live_server.url}])
    deadline = time.monotonic() + 30  # the worker answers Celery's inspect once it is up (a busy machine: later)
    while not workers.census("celery", fresh=True).listening:  # the answer is cached for the page below
        assert time.monotonic() < deadline, "the worker never answered Celery's inspect"
    page.goto(f"{live_server.url}/runs/{run_id}/")
    dataset = page.locator("#rerun-dataset")  # loaded into the form by htmx
    dataset.wait_for()
    assert "gsm8k demo" in dataset.locator("option:checked").inner_text()
    assert page.locator("#rerun-workers").inner_text().startswith("1 worker(s) on queue celery")
    page.fill('#rerun-form input[name="max_tokens"]', "16")  # the untrained model would write 4,000 tokens
    page.click('#rerun-form button[type="submit"]')
    page.wait_for_url("**/reruns/*/")
    job_id = int(page.url.rstrip("/").rsplit("/", 1)[1])

    seen: list[tuple[str, str]] = []
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        state = (page.locator("#job-state").inner_text(), page.locator("#job-samples").inner_text())
        if not seen or seen[-1] != state:
            seen.append(state)
        if state[0] in ("succeeded", "failed", "cancelled"):
            break
        time.sleep(0.25)
    page.screenshot(path=ARTIFACTS / "rerun-job.png", full_page=True)
    job = RerunJob.objects.get(pk=job_id)
    assert seen[-1] == ("succeeded", "8 of 8 samples"), (seen, job.reason, job.log)
    states = [s for s, _ in seen]
    assert states.index("running") < states.index("succeeded")
    assert any(s == "running" and samples.endswith("of 8 samples") for s, samples in seen)  # progress while running

    assert page.locator("#job-exploratory").inner_text().startswith("Exploratory evaluation: the local dataset ")
    new = page.locator("#job-new-score").inner_text()
    # issue 17: scores as percent (were fractions, "0.2500")
    assert page.locator("#job-old-score").inner_text() == "25.0%" and new == f"{pct(job.new_score)}%"
    with page.expect_download() as download:
        page.click("#job-eval-log")
    saved = tmp_path / "downloaded.eval"
    download.value.save_as(saved)
    log = read_eval_log(str(saved))
    assert log.eval.task == "inspect_evals/gsm8k" and log.results.scores[0].metrics["accuracy"].value == job.new_score
    page.click("#job-eval-view")
    assert page.locator("#log-task").inner_text() == "inspect_evals/gsm8k"
    assert page.locator("#log-samples tbody tr").count() == 8
    samples = page.locator("#log-samples").inner_text()
    assert "Sam has" in samples  # the demo questions, as text
    # issue 29: scores in words (it showed inspect's raw "match: I")
    assert "match: I" not in samples and "incorrect" in samples
    page.screenshot(path=ARTIFACTS / "rerun-eval-log.png", full_page=True)

    # issue 29: the demo's local dataset is not the benchmark's own: an exploratory evaluation, never the score
    page.goto(f"{live_server.url}/runs/{run_id}/")
    assert page.locator("#old-score").count() == 0 and page.locator("#new-score").count() == 0
    row = page.locator('#evaluations-table tr[data-origin="rerun-exploratory"]')
    assert "exploratory rerun" in row.inner_text() and f"{100 * job.new_score:.1f}" in row.inner_text()
    assert 100 * selectors.get_run(run_id).score == 25.0
    page.locator("#evaluations").screenshot(path=ARTIFACTS / "pages" / "run-exploratory-rerun.png")
    provenance = selectors.evaluations(run_id)[0].provenance
    assert provenance["settings"]["dataset"] == str(tmp_path / "datasets" / "gsm8k-demo")
    assert provenance["settings"]["chat_template_is_harness"] is False
    assert page.locator("#rerun-form").count() == 1 and not page.js_errors
