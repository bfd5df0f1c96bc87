"""The admin pages a staff user meets first (issue 29): a refused rerun answers the form again with the reason; a
benchmark no worker can rerun (Arena-Hard Writing) is refused when queued; a job's log has one time a line and
wraps; jobs are named by their run; a sample's score is in words. (The bulk form's agent choice:
tests/test_reruns_review.py; the override's admin history: tests/test_issue17_pages.py.)"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from evaluator import services
from evaluator.eval_logs import score_text, summarize
from evaluator.models import RerunJob
from tests.conftest import RERUN_METHOD, write_run
from traces import selectors
from ingest.tree import ingest_tree
from traces.layout import run_id as make_run_id

from .test_reruns_worker_api import scored_log  # noqa: F401 - fixture: a real .eval log

pytestmark = pytest.mark.django_db


def test_a_bad_samples_value_answers_the_form_again_with_the_reason(staff_client: Client, rerun_tree: dict,
                                                                    redis_broker: str) -> None:
    response = staff_client.post("/reruns/new", {"run_id": rerun_tree["run_id"], "limit": "ten", "max_tokens": "16",
                                                 "dataset_path": "/data/x.jsonl"})
    page = response.content.decode()
    assert response.status_code == 400 and response["Content-Type"].startswith("text/html")
    assert '<header' in page  # the site's page, with its header and a way back
    assert ('<p class="notice form-error" id="rerun-error" role="alert"><strong>Not queued:</strong> Samples must be '
            "a whole number of at least 1 (or empty), not &#x27;ten&#x27;</p>") in page
    assert re.search(r'<input name="limit"[^>]*value="ten" aria-invalid="true" autofocus>', page)
    assert 'value="16"' in page and 'value="/data/x.jsonl"' in page
    title = selectors.get_run(rerun_tree["run_id"]).title
    assert f'<a href="/runs/{rerun_tree["run_id"]}/">{title}</a>' in page
    assert RerunJob.objects.count() == 0


def test_an_arena_hard_writing_rerun_is_refused_when_queued(staff_client: Client, rerun_tree: dict,
                                                            tiny_checkpoint: Path, redis_broker: str) -> None:
    name = "arenahardwriting_Qwen_Qwen3-1.7B-Base_17000002"
    write_run(rerun_tree["root"], checkpoint=tiny_checkpoint, run_dir=name)
    ingest_tree(root=rerun_tree["root"])
    run_id = make_run_id(RERUN_METHOD, name)
    response = staff_client.post("/reruns/new", {"run_id": run_id})
    assert response.status_code == 400
    assert ("arenahardwriting (arena-hard-v2.0 (harness evaluation_code/data/arena-hard-v2.0/question.jsonl)) cannot "
            "be rerun here: pairwise judging against the harness&#x27;s baseline answers; no inspect task implements "
            "it; rerun it with the harness&#x27;s evaluate.py") in response.content.decode()
    assert RerunJob.objects.count() == 0  # nothing queued, nothing failed
    with pytest.raises(services.RerunRefused, match="cannot be rerun here"):
        services.queue_rerun(run_id=run_id)


def test_a_job_log_line_carries_one_time_and_the_job_is_named_by_its_run(staff_client: Client,
                                                                         rerun_tree: dict) -> None:
    job = RerunJob.objects.create(run_id=rerun_tree["run_id"], benchmark="gsm8k", checkpoint="/x",
                                  status=RerunJob.Status.RUNNING)
    long = "loading " + "x" * 400
    services.worker_progress(job.pk, samples_done=1, samples_total=3,
                             log_lines=["2026-05-01 10:00:00 [worker] attempt 1 of 4: max_tokens 4000", long])
    lines = RerunJob.objects.get(pk=job.pk).log.splitlines()
    assert lines[0] == "2026-05-01 10:00:00 [worker] attempt 1 of 4: max_tokens 4000"  # the worker's time, once
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d loading x{400}", lines[1])  # an untimed line: now
    title = selectors.get_run(rerun_tree["run_id"]).title
    page = staff_client.get(f"/reruns/{job.pk}/").content.decode()
    assert f'<h1>Rerun #{job.pk}: <a href="/runs/{rerun_tree["run_id"]}/">{title}</a></h1>' in page
    assert f"<title>Rerun #{job.pk}: {title} · PostTrainBench Explorer</title>" in page
    listing = staff_client.get("/reruns/").content.decode()
    assert f'title="run {rerun_tree["run_id"]}">{title}</a>' in listing
    css = (Path(__file__).resolve().parent.parent / "static" / "css" / "site.css").read_text()
    assert re.search(r"\.job-log \{[^}]*white-space: pre-wrap;", css)  # long lines wrap inside the box


def test_the_jobs_list_says_which_new_score_is_exploratory(staff_client: Client, rerun_tree: dict) -> None:
    """A rerun on a local dataset (the demo's) or a sample is not the run's score: the jobs list said "Old 28.2%
    New 62.5%" as if the score had changed; its New column now says "exploratory" with why (found by an admin's
    pass, nu4: /reruns/ at 1440 px after the README's demo rerun)."""
    done = dict(benchmark="gsm8k", checkpoint="/x", status=RerunJob.Status.SUCCEEDED, old_score=0.282)
    local = RerunJob.objects.create(run_id=rerun_tree["run_id"], dataset_path="/data/datasets/gsm8k-demo",
                                    new_score=0.625, **done)
    whole = RerunJob.objects.create(run_id=rerun_tree["run_id"], new_score=0.3, **done)
    rows = {int(m.group(1)): m.group(2) for m in re.finditer(
        r'<tr><td><a href="/reruns/(\d+)/">(.*?)</tr>', staff_client.get("/reruns/").content.decode(), re.S)}
    assert ('62.5% <span class="muted exploratory" title="the local dataset gsm8k-demo, not the benchmark&#x27;s '
            'own">exploratory</span>') in rows[local.pk]
    assert "exploratory" not in rows[whole.pk] and "30.0%" in rows[whole.pk]


def test_a_judge_jobs_link_lands_on_the_run_pages_judge_panel(staff_client: Client, rerun_tree: dict) -> None:
    """A finished judge re-run's page links "The re-run verdicts on the run page": it pointed at ``#judge``, which
    no element of the run page has, so it opened the page at its top, far above the judge panel (found by an
    admin's pass, nu4: /reruns/3/ at 1440 px after the README's "Re-run judge")."""
    job = RerunJob.objects.create(run_id=rerun_tree["run_id"], kind=RerunJob.Kind.JUDGE, benchmark="gsm8k",
                                  checkpoint="/x", status=RerunJob.Status.SUCCEEDED)
    found = re.search(r'<a href="(/runs/[^"#]+/)#([^"]+)">The re-run verdicts on the run page</a>',
                      staff_client.get(f"/reruns/{job.pk}/").content.decode())
    assert found is not None
    assert f'id="{found.group(2)}"' in staff_client.get(found.group(1)).content.decode()


def test_a_samples_score_is_in_words(scored_log: Path) -> None:  # noqa: F811
    samples = summarize(scored_log)["samples"]
    shown = [s["scores"]["match"] for s in samples]
    assert shown and all(words in ("correct", "incorrect") for words, _ in shown)
    assert all(raw in ("C", "I") and words == {"C": "correct", "I": "incorrect"}[raw] for words, raw in shown)
    assert [score_text(v) for v in ("P", "N", True, 0.5, "7")] == ["partially correct", "no answer", "correct",
                                                                  "0.5", "7"]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_refused_form_and_a_job_page_in_a_browser(live_server, page, rerun_tree: dict, redis_broker: str) -> None:
    from .conftest import ARTIFACTS

    client = Client()
    client.force_login(get_user_model().objects.create_user("reviewer", is_staff=True))
    page.context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value,
                               "url": live_server.url}])
    job = RerunJob.objects.create(run_id=rerun_tree["run_id"], benchmark="gsm8k", checkpoint="/x", limit=3,
                                  dataset_path="/data/datasets/gsm8k-demo", status=RerunJob.Status.RUNNING)
    services.worker_progress(job.pk, samples_done=1, samples_total=3, log_lines=[
        "2026-05-01 10:00:00 [worker] attempt 1 of 4: max_tokens 4000 " + "--flag " * 60])
    page.goto(f"{live_server.url}/runs/{rerun_tree['run_id']}/")
    page.fill('#rerun-form input[name="limit"]', "ten")
    page.click('#rerun-form button[type="submit"]')
    assert page.locator("#rerun-error").inner_text().startswith("Not queued: Samples must be a whole number")
    page.screenshot(path=ARTIFACTS / "pages" / "rerun-refused-1440.png", full_page=True)
    page.goto(f"{live_server.url}/reruns/{job.pk}/")
    assert page.locator("#job-exploratory").is_visible()
    box = page.locator("#job-log")
    assert box.evaluate("e => e.scrollWidth <= e.clientWidth")  # long lines wrap inside the box
    page.screenshot(path=ARTIFACTS / "pages" / "rerun-job-1440.png", full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=ARTIFACTS / "pages" / "rerun-job-390.png", full_page=True)
    assert page.js_errors == []
