"""The pages a staff user works on and the public's challenge form, in headless Chromium at 1440x900 and 390x844
(issue 29): the challenges list with its triage forms, the challenge form, the rerun jobs list and a job page with
a long log. No page is wider than the screen; the screenshots go to test-artifacts/pages/staff-*-{1440,390}.png
for a person to look at."""
from __future__ import annotations

import pytest
from django.test import Client

from evaluator import services
from evaluator.models import RerunJob

from .conftest import ARTIFACTS
from .test_browser_phone import OVERFLOWING
from .test_challenges import run_id  # noqa: F401 - fixture: one judged run in a fresh warehouse

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SHOTS = ARTIFACTS / "pages"
WIDTHS = {1440: 900, 390: 844}
CLAIM = ("Step 5 trains on the GSM8K test split: the judge missed it. The agent ran "
         "/home/agent/work/scripts/prepare_dataset_with_the_test_split_included.py --split=test --out=/tmp/train.jsonl")


def _look(page, url: str, name: str) -> None:
    """Open ``url`` at each width: no page wider than the screen; a full-page screenshot per width."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width, height in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": height})
        response = page.goto(url)
        assert response is not None and response.status == 200, url
        page.screenshot(path=SHOTS / f"staff-{name}-{width}.png", full_page=True)
        scroll = page.evaluate("document.documentElement.scrollWidth")
        assert scroll <= width, (url, width, scroll, page.evaluate(OVERFLOWING))
        assert page.evaluate(OVERFLOWING) == [], (url, width)


def test_challenges_and_rerun_jobs_fit_a_phone_and_a_desktop(live_server, page, run_id: str,  # noqa: F811
                                                             staff_client: Client) -> None:
    public = Client()
    for question, contact in (("contamination", "a.very.long.contact.address.for.a.reviewer@example.org"),
                              ("disallowed_model", "")):
        made = public.post(f"/api/runs/{run_id}/challenges", {
            "question": question, "claim": CLAIM, "steps": [5, 1], "contact": contact}, content_type="application/json")
        assert made.status_code == 201, made.content
    page.context.add_cookies([{"name": "sessionid", "value": staff_client.cookies["sessionid"].value,
                               "url": live_server.url}])
    running = RerunJob.objects.create(run_id=run_id, benchmark="gsm8k", checkpoint="/data/results/" + "x" * 80,
                                      limit=3, dataset_path="/data/datasets/gsm8k-demo",
                                      status=RerunJob.Status.RUNNING)
    services.worker_progress(running.pk, samples_done=1, samples_total=3, log_lines=[
        "2026-05-01 10:00:00 [worker] attempt 1 of 4: max_tokens 4000 " + "--flag " * 60])
    RerunJob.objects.create(run_id=run_id, benchmark="gsm8k", checkpoint="/x", status=RerunJob.Status.FAILED,
                            reason="CheckpointLoadError: /data/results/method/run/final_model/model.safetensors is "
                                   "broken (1024 bytes): incomplete metadata, file not fully covered")

    _look(page, f"{live_server.url}/challenges/", "challenges")
    assert page.locator("section.challenge").count() == 2
    _look(page, f"{live_server.url}/challenges/runs/{run_id}/new", "challenge-form")
    _look(page, f"{live_server.url}/reruns/", "jobs")
    assert page.locator("#jobs tbody tr").count() == 2
    # At 390 px the table scrolls in its box, and a job's run title keeps a readable width (not a word a line).
    assert page.locator("#jobs tbody td.run").first.evaluate("td => td.getBoundingClientRect().width") >= 180
    _look(page, f"{live_server.url}/reruns/{running.pk}/", "job")
    assert page.js_errors == [], page.js_errors


def test_the_thank_you_after_a_challenge_is_on_screen(live_server, page, run_id: str) -> None:  # noqa: F811
    """A visitor who sends a challenge sees the notice that it reached the reviewers where the run page opens (found
    by a new user at 390 px: the page opened at its judge panel, the notice far above the screen)."""
    for width, height in WIDTHS.items():
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"{live_server.url}/challenges/runs/{run_id}/new?question=contamination")
        page.fill("#challenge-claim", CLAIM)
        page.fill("#challenge-steps", "5")
        page.click("#challenge-form button[type=submit]")
        page.wait_for_load_state("load")
        notice = page.locator("ul.messages li.success")
        assert notice.inner_text().startswith("Thank you: your challenge is with the reviewers."), width
        box = notice.bounding_box()
        assert box is not None and 0 <= box["y"] and box["y"] + box["height"] <= height, (width, box)


def test_re_evaluate_waits_for_the_dataset_choice(live_server, page, run_id: str,  # noqa: F811
                                                  staff_client: Client) -> None:
    """The run page's rerun form loads its dataset choice by htmx after a worker census (up to 2 s): until it has
    arrived the "Re-evaluate" button cannot be pressed, or the job would go to the worker's Hugging Face cache
    whatever the choice defaults to (the demo's local copy): found by an admin's pass (nu4), 1440 px."""
    page.set_viewport_size({"width": 1440, "height": 900})
    page.context.add_cookies([{"name": "sessionid", "value": staff_client.cookies["sessionid"].value,
                               "url": live_server.url}])
    held = []
    page.route("**/reruns/form-extras*", lambda route: held.append(route))  # held: the census not answered yet
    with page.expect_request("**/reruns/form-extras*"):
        page.goto(f"{live_server.url}/runs/{run_id}/")
    assert len(held) == 1
    button = page.locator('#rerun-form button[type="submit"]')
    assert button.count() == 1 and button.is_disabled()
    held[0].continue_()
    page.locator("#rerun-dataset").wait_for()
    assert page.locator('#rerun-form button[type="submit"]').count() == 1
    assert page.locator('#rerun-form button[type="submit"]').is_enabled()
    assert "{#" not in page.locator("#rerun-form").inner_text()  # a template comment is not shown
    assert page.js_errors == []
