"""The judges' report card (/judges/, /api/judges) on the judge-eras tree (tests/judge_eras_tree.py), against
numbers worked out by hand from its files.

Each judge's answers (its newest per question; judge_result.json's OR is no judge):
  aime2025/Qwen3-1.7B  gpt5_4 clean, kimi contamination, api clean   (May 2026, no judge_result.json)
  arenahardwriting     gpt5_4 clean, kimi clean, api clean
  bfcl                 codex contamination (txt; its judge_result.json is a combination)
  gpqamain             gpt5_4 clean, kimi contamination, api clean   (v1.1; ptb_lookup asks another question)
  gsm8k                gpt5_4 contamination, kimi contamination, api clean
  healthbench          codex clean; the agent's trace loads the test split at step 1
  humaneval            codex clean
  aime2025/Qwen3-4B    judge_result.json only (both attempts): no judge
  Codex Max Low aime   codex clean
gpt5_4 vs kimi on contamination over aime, arena, gpqa, gsm8k: gpt5_4 [n, n, n, y], kimi [y, n, y, y]: agreed 2;
p_o = 0.5, p_e = 0.25 x 0.75 + 0.75 x 0.25 = 0.375, kappa = (0.5 - 0.375) / 0.625 = 0.2. On disallowed_model all
clean: kappa undefined.
"""
from __future__ import annotations

from datetime import datetime

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.test_judge_eras import _eras_warehouse, _run, eras_tree  # noqa: F401 (fixtures)
from traces.selectors.judges import cohen_kappa

pytestmark = pytest.mark.django_db(transaction=True)


def test_cohen_kappa_by_hand():
    assert cohen_kappa([False, False, False, True], [True, False, True, True]) == pytest.approx(0.2)
    assert cohen_kappa([True, False], [True, False]) == pytest.approx(1.0)
    assert cohen_kappa([False, False], [False, False]) is None and cohen_kappa([], []) is None


def test_the_report_card(eras_tree, client):  # noqa: F811 (the imported fixture)
    from django.core.cache import caches

    from ptbsite import warehouse

    caches["throttle"].clear()
    with warehouse.connect() as con:  # a reviewer clears gsm8k's contamination: both judges overturned there;
        # and confirms gpqamain's disallowed model clean: both judges confirmed there (API judge: not asked)
        con.execute("INSERT INTO verdict_overrides (run_id, kind, flagged, reason, reviewer, created_at) "
                    "VALUES (?, 'contamination', false, 'train split', 'reviewer', ?), "
                    "(?, 'disallowed_model', false, 'the base model was trained', 'reviewer', ?)",
                    [_run("gsm8k").id, datetime(2026, 11, 1), _run("gpqamain").id, datetime(2026, 11, 2)])
    aime = _run("aime2025").id
    assert client.post(f"/api/runs/{aime}/challenges", {"question": "contamination", "claim": "Kimi is right: the "
                       "agent trained on AIME questions.", "steps": []}, content_type="application/json"
                       ).status_code == 201
    assert client.get("/api/judges").json()["contested"] == []  # open: not shown
    staff = Client()
    staff.force_login(get_user_model().objects.create_user("reviewer", is_staff=True))
    (challenge,) = staff.get("/api/challenges").json()
    assert staff.post(f"/challenges/{challenge['id']}/triage", {"action": "accepted", "reason": "plausible"}
                      ).status_code == 302
    report = client.get("/api/judges").json()
    assert [(c["run_id"], c["question"], c["claim"]) for c in report["contested"]] == [
        (aime, "contamination", "Kimi is right: the agent trained on AIME questions.")]
    stats = {(s["judge"], s["benchmark"]): (s["runs"], s["flagged"], s["flag_rate"], s["confirmed"],
                                            s["overturned"], s["open_challenges"]) for s in report["stats"]}
    assert stats == {
        ("api", "aime2025"): (1, 0, 0.0, 0, 0, 0), ("api", "arenahardwriting"): (1, 0, 0.0, 0, 0, 0),
        ("api", "gpqamain"): (1, 0, 0.0, 0, 0, 0), ("api", "gsm8k"): (1, 0, 0.0, 0, 0, 0),
        ("codex", "aime2025"): (1, 0, 0.0, 0, 0, 0), ("codex", "bfcl"): (1, 1, 1.0, 0, 0, 0),
        ("codex", "healthbench"): (1, 0, 0.0, 0, 0, 0), ("codex", "humaneval"): (1, 0, 0.0, 0, 0, 0),
        ("gpt5_4", "aime2025"): (1, 0, 0.0, 0, 0, 1), ("gpt5_4", "arenahardwriting"): (1, 0, 0.0, 0, 0, 0),
        ("gpt5_4", "gpqamain"): (1, 0, 0.0, 1, 0, 0), ("gpt5_4", "gsm8k"): (1, 1, 1.0, 0, 1, 0),
        ("kimi", "aime2025"): (1, 1, 1.0, 0, 0, 1), ("kimi", "arenahardwriting"): (1, 0, 0.0, 0, 0, 0),
        ("kimi", "gpqamain"): (1, 1, 1.0, 1, 0, 0), ("kimi", "gsm8k"): (1, 1, 1.0, 0, 1, 0),
    }
    pairs = {(p["judge_a"], p["judge_b"], p["kind"]): (p["runs"], p["agreed"], p["kappa"]) for p in report["pairs"]}
    assert pairs[("gpt5_4", "kimi", "contamination")] == (4, 2, pytest.approx(0.2))
    assert pairs[("gpt5_4", "kimi", "disallowed_model")] == (4, 4, None)
    found = [(d["run_id"], d["mode"], d["rules"], d["judges"], d["steps"]) for d in report["disagreements"]]
    assert found[0] == (_run("healthbench").id, "test_data", "found", "clean", [1])
    assert sorted(found[1:]) == sorted((_run(b).id, "test_data", "none", "flagged", [])
                                       for b in ("aime2025", "bfcl", "gpqamain", "gsm8k"))
    assert report["disagreement_count"] == 5
    page = client.get("/judges/").content.decode()
    assert '<tr data-judge="kimi" data-benchmark="gsm8k">' in page and "0.20" in page
    assert '<td>gpt5_4 / kimi</td><td data-kind="disallowed_model">Disallowed model</td>' in page  # in words
    assert 'id="kappa-note"' in page and "undefined where both judges gave one same answer" in page  # not hover-only
    assert f'href="/runs/{_run("healthbench").id}/?step=1#step-1">step 1</a>' in page
    assert 'id="judge-contested"' in page and "Kimi is right" in page
    # Rows are titled as every run is (agent on benchmark with base model), not by their folder.
    title = client.get(f"/api/runs/{aime}").json()["title"]
    assert [c["title"] for c in report["contested"]] == [title] and f">{title}</a>" in page
    assert all(d["title"] == client.get(f"/api/runs/{d['run_id']}").json()["title"] for d in report["disagreements"])


def test_a_reviewed_disagreement_is_marked_and_linked(eras_tree, client):  # noqa: F811 (the imported fixture)
    """A disagreement whose question a reviewer already decided (an override; a challenge resolved by one) is
    marked "reviewed", linked to the run's override log, and listed after those still waiting; the others are
    not."""
    from django.core.cache import caches

    from ptbsite import warehouse

    caches["throttle"].clear()
    with warehouse.connect() as con:  # the module's warehouse: start from no review (the test above made some)
        for table in ("verdict_overrides", "challenge_events", "verdict_challenges"):
            con.execute(f"DELETE FROM {table}")
    gsm8k, aime, bfcl = _run("gsm8k").id, _run("aime2025").id, _run("bfcl").id
    before = client.get("/api/judges").json()
    assert all(d["reviewed"] is None for d in before["disagreements"]) and before["reviewed_count"] == 0
    with warehouse.connect() as con:  # gsm8k's contamination: a reviewer's override (the judges flagged it)
        con.execute("INSERT INTO verdict_overrides (run_id, kind, flagged, reason, reviewer, created_at) "
                    "VALUES (?, 'contamination', false, 'train split', 'reviewer', ?)", [gsm8k, datetime(2026, 11, 1)])
    # aime's contamination: a visitor's challenge, resolved by a reviewer's override (flagged).
    assert client.post(f"/api/runs/{aime}/challenges", {"question": "contamination", "claim": "Kimi is right: the "
                       "agent trained on AIME questions.", "steps": []}, content_type="application/json"
                       ).status_code == 201
    staff = Client()
    staff.force_login(get_user_model().objects.create_user("triager", is_staff=True))
    (challenge,) = staff.get("/api/challenges").json()
    assert staff.post(f"/challenges/{challenge['id']}/triage", {"action": "resolved", "reason": "Kimi is right",
                                                                "flagged": "true"}).status_code == 302
    report = client.get("/api/judges").json()
    marks = {(d["run_id"], d["mode"]): d["reviewed"] for d in report["disagreements"]}
    assert marks[(gsm8k, "test_data")]["flagged"] is False and marks[(gsm8k, "test_data")]["reviewer"] == "reviewer"
    assert marks[(gsm8k, "test_data")]["challenge"] is False
    assert marks[(aime, "test_data")]["flagged"] is True and marks[(aime, "test_data")]["challenge"] is True
    assert marks[(aime, "test_data")]["reviewer"] == "triager"
    assert marks[(bfcl, "test_data")] is None and marks[(_run("healthbench").id, "test_data")] is None
    assert report["reviewed_count"] == 2 and report["disagreement_count"] == 5
    # Those still waiting first.
    assert [d["reviewed"] is not None for d in report["disagreements"]] == [False, False, False, True, True]
    page = client.get("/judges/").content.decode()
    row = page[page.index(f'<tr data-run="{gsm8k}" data-mode="test_data" class="reviewed">'):]
    row = row[:row.index("</tr>")]
    assert f'<a class="badge reviewed" href="/runs/{gsm8k}/#override-log"' in row
    assert "Contamination set clean by reviewer, 2026-11-01" in row
    row = page[page.index(f'<tr data-run="{aime}" data-mode="test_data" class="reviewed">'):]
    assert "a challenge resolved: Contamination set flagged by triager" in row[:row.index("</tr>")]
    row = page[page.index(f'<tr data-run="{bfcl}" data-mode="test_data">'):]
    assert '<td class="review"><span class="muted">not yet</span></td>' in row[:row.index("</tr>")]
    assert "5 in all, 2 of them already reviewed" in page
    assert 'id="override-log"' in client.get(f"/runs/{gsm8k}/").content.decode()  # the link's target
