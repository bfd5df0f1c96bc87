"""The public's challenge of a verdict (issue 26): anonymous creation through the API and the form (CSRF-protected),
validation of every field, the per-address rate limit (429), staff triage (accept: contested on the run page with
its claim; reject with a reason, never shown; resolve with an override, linked) and the audit log."""
from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

from tests.test_issue17_pages import AGENT_TRACE, JUDGE_TRACE, RUN_DIR
from traces import layout
from ingest.tree import ingest_tree

from .conftest import RERUN_METHOD, write_run

pytestmark = pytest.mark.django_db(transaction=True)
CLAIM = "Step 5 trains on the GSM8K test split: the judge missed it. <script>alert(1)</script>"


@pytest.fixture
def run_id(tmp_path: Path, fresh_warehouse: Path) -> str:
    """One judged run (txt verdicts, both clean; 7 agent-trace steps) in a fresh warehouse; the throttle's counts
    cleared (they live in a cache that outlives a test)."""
    from django.core.cache import caches

    caches["throttle"].clear()
    path = write_run(tmp_path / "results", checkpoint=None, run_dir=RUN_DIR)
    (path / "solve_out.txt").write_text(AGENT_TRACE)
    (path / "judge_output.json").write_text(JUDGE_TRACE)
    assert ingest_tree(root=tmp_path / "results").stored == 1
    return layout.run_id(RERUN_METHOD, RUN_DIR)


def _post(client: Client, run_id: str, **body) -> object:
    return client.post(f"/api/runs/{run_id}/challenges", {"question": "contamination", "claim": CLAIM,
                                                         "steps": [5, 1], **body}, content_type="application/json")


def test_an_anonymous_challenge_is_stored_and_not_shown_before_staff_accept_it(client, run_id, staff_client):
    answer = _post(client, run_id, contact="me@example.org")
    assert answer.status_code == 201, answer.content
    made = answer.json()
    assert (made["question"], made["status"], made["steps"]) == ("contamination", "open", [5, 1])
    assert "contact" not in made  # the contact is for staff only
    page = client.get(f"/runs/{run_id}/").content.decode()
    assert "judge missed it" not in page and "contested" not in page
    assert client.get(f"/api/runs/{run_id}").json()["challenges"] == []
    listed = staff_client.get("/api/challenges?status=open").json()
    assert [(c["id"], c["claim"], c["contact"], c["status"]) for c in listed] == [
        (made["id"], CLAIM, "me@example.org", "open")]
    assert len(listed[0]["address"]) == 16 and "127.0.0.1" not in str(listed[0])  # a salted hash, not the address


@pytest.mark.parametrize(("body", "says"), [
    ({"question": "tea_leaves"}, "question: 'tea_leaves' is not a question of this run (Contamination, "
                                 "Disallowed model, External API usage)"),
    ({"claim": "too short"}, "claim: at least 20 characters, saying what the judge missed or got wrong"),
    ({"claim": "x" * 2001}, "claim: at most 2000 characters (this one has 2001)"),
    ({"steps": [99, 3, -1]}, "steps: 99, -1 not a step of this run's trace (0 to {last})"),
    ({"steps": list(range(21))}, "steps: at most 20"),
    ({"contact": "c" * 201}, "contact: at most 200 characters"),
])
def test_each_field_is_validated(client, run_id, body, says):
    from traces import selectors

    answer = _post(client, run_id, **body)
    last = selectors.get_run(run_id).step_count - 1
    assert last >= 5
    assert answer.status_code == 422 and answer.json()["detail"] == says.format(last=last)


def test_unknown_run_and_malformed_body(client, run_id):
    assert _post(client, "0123456789abcdef").status_code == 404
    assert client.post(f"/api/runs/{run_id}/challenges", {"claim": CLAIM}, content_type="application/json"
                       ).status_code == 422  # no question


def test_rate_limited_per_address(client, run_id):
    """PTB_CHALLENGE_RATE 5/h: the sixth from one address answers 429 with Retry-After; another address may send."""
    for _ in range(5):
        assert _post(client, run_id).status_code == 201
    refused = _post(client, run_id)
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert _post(client, run_id, REMOTE_ADDR="10.0.0.9").status_code == 429  # a body field, not the address
    other = client.post(f"/api/runs/{run_id}/challenges", {"question": "contamination", "claim": CLAIM},
                        content_type="application/json", REMOTE_ADDR="10.0.0.9")
    assert other.status_code == 201
    form = client.post(f"/challenges/runs/{run_id}/new", {"question": "contamination", "claim": CLAIM, "steps": "5"})
    assert form.status_code == 429 and "Too many challenges" in form.content.decode()


def test_the_form_is_csrf_protected_and_validates(run_id):
    browser = Client(enforce_csrf_checks=True)
    page = browser.get(f"/challenges/runs/{run_id}/new?question=disallowed_model")
    html = page.content.decode()
    assert page.status_code == 200 and 'name="csrfmiddlewaretoken"' in html
    assert '<option value="disallowed_model" selected>Disallowed model</option>' in html
    assert browser.post(f"/challenges/runs/{run_id}/new", {"question": "contamination", "claim": CLAIM}
                        ).status_code == 403  # no token
    token = browser.cookies["csrftoken"].value
    bad = browser.post(f"/challenges/runs/{run_id}/new", {"question": "contamination", "claim": CLAIM,
                                                          "steps": "5, nine", "csrfmiddlewaretoken": token})
    assert bad.status_code == 400 and "steps: step numbers separated by commas" in bad.content.decode()
    for digits in ("²", "5, ٣"):  # str.isdigit() is true for these, int() raises or reads another script
        odd = browser.post(f"/challenges/runs/{run_id}/new", {"question": "contamination", "claim": CLAIM,
                                                              "steps": digits, "csrfmiddlewaretoken": token})
        assert odd.status_code == 400 and "steps: step numbers separated by commas" in odd.content.decode()
    assert "&lt;script&gt;" in bad.content.decode() and "<script>alert" not in bad.content.decode()
    good = browser.post(f"/challenges/runs/{run_id}/new", {"question": "contamination", "claim": CLAIM,
                                                           "steps": "5, 1", "csrfmiddlewaretoken": token})
    assert good.status_code == 302 and good["Location"] == f"/runs/{run_id}/"
    run_page = browser.get(f"/runs/{run_id}/").content.decode()
    assert 'href="/challenges/runs/' in run_page and "Challenge this verdict" in run_page


def test_triage_accept_reject_resolve_and_the_audit(client, run_id, staff_client):
    from traces import selectors

    first = _post(client, run_id).json()["id"]
    second = _post(client, run_id, question="disallowed_model",
                   claim="The agent downloaded Qwen/Qwen3-4B, the instruct model, at step 5.").json()["id"]
    third = _post(client, run_id, claim="Nothing to see here, the judge was right, I just wanted to write.").json()["id"]
    assert client.post(f"/challenges/{first}/triage", {"action": "accepted", "reason": "x"}).status_code == 403
    assert staff_client.post(f"/challenges/{first}/triage", {"action": "accepted", "reason": "step 5 shows it"}
                      ).status_code == 302
    assert staff_client.post(f"/challenges/{third}/triage", {"action": "rejected", "reason": "no evidence"}
                      ).status_code == 302
    refused = staff_client.post(f"/challenges/{second}/triage", {"action": "resolved", "reason": "confirmed"})
    # The site's page (its header, a way back), the reason above every challenge (issue 29), not a plain-text page.
    assert refused.status_code == 400 and refused["Content-Type"].startswith("text/html")
    assert "<header" in refused.content.decode() and (
        f'<p class="notice form-error" id="triage-error" role="alert"><strong>Not stored:</strong> challenge {second}: '
        "flagged: a resolution overrides the verdict: say flagged or clean</p>") in refused.content.decode()
    assert staff_client.post(f"/challenges/{second}/triage", {"action": "resolved", "reason": "confirmed at step 5",
                                                       "flagged": "true"}).status_code == 302
    twin = client.get(f"/api/runs/{run_id}").json()
    shown = {c["id"]: (c["status"], c["claim"]) for c in twin["challenges"]}
    assert shown == {first: ("accepted", CLAIM), second: ("resolved", "The agent downloaded Qwen/Qwen3-4B, the "
                                                                       "instruct model, at step 5.")}
    assert third not in shown  # rejected: never shown
    question = next(q for q in twin["judge_questions"] if q["kind"] == "contamination")
    assert question["contested"] == [CLAIM]
    page = client.get(f"/runs/{run_id}/").content.decode()
    assert 'data-contested="contamination"' in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert(1)</script>" not in page
    # The resolution is a reviewer's override, in the run's override log, linked from the challenge's audit.
    run = selectors.get_run(run_id)
    assert run.flags["disallowed_model"] == "flagged"
    (override,) = selectors.override_log(run_id)
    assert override.reason == f"challenge {second}: confirmed at step 5" and override.reviewer == "reviewer"
    audit = {c["id"]: c["events"] for c in staff_client.get("/api/challenges?status=all").json()}
    assert [(e["action"], e["reason"], e["reviewer"]) for e in audit[first]] == [("accepted", "step 5 shows it",
                                                                                 "reviewer")]
    assert audit[third][0]["action"] == "rejected" and audit[third][0]["reason"] == "no evidence"
    assert audit[second][0]["override_at"] is not None
    staff_page = staff_client.get("/challenges/?status=resolved").content.decode()
    assert "the run&#x27;s override log" in staff_page or "the run's override log" in staff_page
    assert client.get("/challenges/").status_code == 403


def test_a_challenge_of_the_api_question_is_resolved_with_an_override(client, run_id, staff_client):
    """The API judge's flag makes a run fall back (README "Judging rules"), so a reviewer can override it: from a
    resolved challenge of "External API usage" and from the run page's override form (found by a new user: the
    triage answered "kind must be one of contamination, disallowed_model")."""
    from traces import selectors

    made = _post(client, run_id, question="disallowed_api_usage",
                 claim="Step 5 calls the OpenAI API for worked solutions; the API judge missed it.").json()["id"]
    answer = staff_client.post(f"/challenges/{made}/triage", {"action": "resolved", "reason": "step 5 calls it",
                                                             "flagged": "true"})
    assert answer.status_code == 302, answer.content.decode()[-600:]
    assert selectors.get_run(run_id).flags["disallowed_api_usage"] == "flagged"
    (override,) = selectors.override_log(run_id)
    assert (override.kind, override.flagged) == ("disallowed_api_usage", True)
    page = staff_client.get(f"/runs/{run_id}/").content.decode()
    assert '<option value="disallowed_api_usage">External API usage</option>' in page.split('id="override-form"')[1]


def test_the_override_choice_says_a_resolution_needs_it(client, run_id, staff_client):
    """The triage form's empty "Override to" choice read "(resolve only)", as if a resolution could go without an
    override, which the triage refuses ("a resolution overrides the verdict: say flagged or clean")."""
    _post(client, run_id)
    page = staff_client.get("/challenges/").content.decode()
    assert '<select name="flagged"><option value="">(choose one to resolve)</option>' in page
    assert "(resolve only)" not in page
