"""A rerun's "how it was run" (issue 25): a short readable summary on the public run page and in its JSON twin
(harness commit, inspect-ai and inspect-evals versions, dataset and its size, samples, max tokens, when, how long);
the server's paths, the worker's host and pids only on staff pages."""
from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from evaluator.benchmarks import HARNESS
from traces import services

pytestmark = pytest.mark.django_db

HOST = "gpu-node-17.cluster.internal"


def _provenance(tmp_path) -> dict:
    """The provenance a worker reports and the server completes (evaluator.worker._evaluate,
    evaluator.services._store_success), with this machine's paths in it."""
    checkpoint = f"{tmp_path}/results/method/run/final_model"
    return {
        "inspect_ai": "0.3.205", "provider": "hf", "model_id": f"hf/{checkpoint}",
        "chat_template_sha256": "a" * 64,
        "settings": {"benchmark": "gsm8k", "dataset": f"{tmp_path}/datasets/gsm8k-demo", "limit": 3,
                     "max_tokens": 16, "model_args": {"model_path": checkpoint, "device": "cpu"}},
        "versions": {"inspect_ai": "0.3.205", "inspect_evals": "0.3.103", "torch": "2.5.1",
                     "harness": HARNESS.as_dict()},
        "worker_host": HOST,
        "attempts": [{"max_tokens": 16, "error": None, "seconds": 12.5, "exit_code": 0, "pid": 48213}],
        "started": "2026-12-01T10:00:00+00:00", "finished": "2026-12-01T10:00:42+00:00", "seconds": 42.3,
        "job": 7, "eval_log": "job7-log.eval", "samples": 3, "samples_total": 1319, "log_task": "gsm8k",
        "log_model": f"hf/{checkpoint}", "log_inspect_ai": "0.3.205",
        "score_read_by": "server (inspect_ai.log.read_eval_log)",
    }


def test_the_public_run_page_and_its_twin_show_a_summary_and_no_server_internals(rerun_tree: dict, tmp_path,
                                                                                 settings) -> None:
    settings.PTB_PAGE_CACHE = False
    run_id = rerun_tree["run_id"]
    provenance = _provenance(tmp_path)
    services.add_evaluation(run_id=run_id, accuracy=0.5, metrics={"accuracy": 0.5}, provenance=provenance,
                            evaluation_id=f"{run_id}-rerun-7", exploratory="3 samples, not the whole test set")
    secrets = [str(tmp_path), HOST, "48213", "model_path", "chat_template_sha256"]

    twin = Client().get(f"/api/runs/{run_id}").json()
    rerun = next(e for e in twin["evaluations"] if e["origin"] != "original")
    assert "provenance" not in rerun
    assert rerun["how_run"] == {
        "harness_commit": HARNESS.commit, "inspect_ai": "0.3.205", "inspect_evals": "0.3.103", "provider": "hf",
        "dataset": "gsm8k-demo", "local_dataset": True, "dataset_size": 1319, "samples": 3, "max_tokens": 16,
        "started": "2026-12-01T10:00:00Z", "seconds": 42.3}
    text = json.dumps(twin)
    assert [s for s in secrets if s in text] == []

    page = Client().get(f"/runs/{run_id}/").content.decode()
    summary = page[page.index('<p class="how-run">'):page.index("</details>", page.index('<p class="how-run">'))]
    for shown in ("3 of 1319 samples", "gsm8k-demo (a local copy)", "at most 16 new tokens",
                  "Started 2026-12-01 10:00 UTC, took 42 s", f"Harness <code>{HARNESS.commit[:7]}</code>",
                  "inspect-ai 0.3.205", "inspect-evals 0.3.103"):
        assert shown in " ".join(summary.split()), shown
    assert [s for s in secrets if s in page] == []

    staff = Client()
    staff.force_login(get_user_model().objects.create_user("reviewer", is_staff=True))
    staff_page = staff.get(f"/runs/{run_id}/").content.decode()
    assert HOST in staff_page and str(tmp_path) in staff_page and "48213" in staff_page


def test_a_dataset_named_by_the_harness_is_shown_as_named_and_odd_provenance_does_not_break() -> None:
    from traces.schemas import HowRun

    named = HowRun.from_provenance({"settings": {"dataset": "openai/gsm8k (data_dir main, split test)"}})
    assert (named.dataset, named.local_dataset) == ("openai/gsm8k (data_dir main, split test)", False)
    odd = HowRun.from_provenance({"settings": "x", "versions": [1], "samples": "many", "seconds": True,
                                  "started": "not a date"})
    assert (odd.samples, odd.seconds, odd.started, odd.harness_commit) == (None, None, None, None)
    windows = HowRun.from_provenance({"settings": {"dataset": "C:\\data\\gsm8k-copy\\"}})
    assert (windows.dataset, windows.local_dataset) == ("gsm8k-copy", True)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_summary_and_the_lockout_page_as_a_person_sees_them(live_server, rerun_tree: dict, tmp_path, page,
                                                                  settings) -> None:
    """Screenshots for review (test-artifacts/pages/): the opened "how it was run" at 1440 and 390 px, and the
    sign-in lockout page (django-axes, templates/registration/locked_out.html)."""
    from tests.conftest import ARTIFACTS

    shots = ARTIFACTS / "pages"
    shots.mkdir(parents=True, exist_ok=True)
    run_id = rerun_tree["run_id"]
    services.add_evaluation(run_id=run_id, accuracy=0.5, metrics={"accuracy": 0.5},
                            provenance=_provenance(tmp_path), evaluation_id=f"{run_id}-rerun-7", exploratory="3 samples, not the whole test set")
    for width in (1440, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{live_server.url}/runs/{run_id}/")
        page.locator("details.provenance summary").click()
        summary = page.locator("p.how-run")
        assert summary.is_visible() and "3 of 1319 samples" in summary.inner_text()
        assert str(tmp_path) not in page.content()
        page.locator("#evaluations-table").screenshot(path=shots / f"run-rerun-provenance-{width}.png")
    settings.AXES_FAILURE_LIMIT = 1
    get_user_model().objects.create_user("reviewer", password="a-long-test-password", is_staff=True)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", "reviewer")
    page.fill("#id_password", "wrong")
    page.click("input[type=submit]")
    assert "Too many failed sign-ins" in page.locator("h1").inner_text()
    page.screenshot(path=shots / "login-locked-out.png", full_page=True)
