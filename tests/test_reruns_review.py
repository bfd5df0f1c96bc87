"""Verdict review: overrides with their audit log, the judge re-run refused without a command (the re-run itself is
a job: tests/test_reruns_worker.py), agreement counts, bulk reruns, stale and expired jobs."""
from __future__ import annotations

from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from evaluator.models import RerunJob
from tests.conftest import write_run
from traces import selectors, services
from ingest.tree import ingest_tree
from traces.layout import run_id as make_run_id

pytestmark = pytest.mark.django_db


def _flagged_run(rerun_tree: dict, tiny_checkpoint: Path) -> str:
    """A second run of the tree, judged contaminated; returns its id."""
    name = "gsm8k_Qwen_Qwen3-1.7B-Base_17000002"
    write_run(rerun_tree["root"], checkpoint=tiny_checkpoint, run_dir=name, contamination="contamination detected")
    ingest_tree(root=rerun_tree["root"])
    return make_run_id("claude_claude-opus-4-6_10h_run1", name)


def test_an_override_changes_the_effective_flag_and_is_audited(staff_client: Client, rerun_tree: dict) -> None:
    run_id = rerun_tree["run_id"]
    assert selectors.get_run(run_id).flags["contamination"] is None
    response = staff_client.post(f"/reruns/runs/{run_id}/override",
                                 {"kind": "contamination", "flagged": "true", "reason": "trained on the test split"})
    assert response.status_code == 302
    run = selectors.get_run(run_id)
    assert run.flags["contamination"] == "flagged" and run.flagged  # the leaderboard falls back to the base model

    staff_client.post(f"/reruns/runs/{run_id}/override",
                      {"kind": "contamination", "flagged": "false", "reason": "the split was train after all"})
    assert selectors.get_run(run_id).flags["contamination"] is None
    log = selectors.override_log(run_id)
    assert [(o.previous, o.new, o.reviewer) for o in log] == [
        ("clean", "flagged", "reviewer"), ("flagged", "clean", "reviewer")]
    assert 'class="badge override"' in staff_client.get("/runs/").content.decode()  # the run list marks it
    page = staff_client.get(f"/runs/{run_id}/").content.decode()
    assert "Reviewer overrides" in page and "trained on the test split" in page and "the split was train after all" in page


def test_the_api_override_writes_the_admin_history_the_form_writes(staff_client: Client, rerun_tree: dict) -> None:
    # issue 28: only the run page's form wrote the admin's "Recent actions" entry
    from django.contrib.admin.models import LogEntry

    run_id = rerun_tree["run_id"]
    form = {"kind": "contamination", "flagged": "true", "reason": "trained on the test split"}
    assert staff_client.post(f"/reruns/runs/{run_id}/override", form).status_code == 302
    response = staff_client.post(f"/api/runs/{run_id}/overrides", {**form, "flagged": True},
                                 content_type="application/json")
    assert response.status_code == 201 and response.json()["previous"] == "flagged"
    by_form, by_api = LogEntry.objects.order_by("pk")
    fields = ("user_id", "content_type_id", "object_id", "object_repr", "action_flag", "change_message")
    assert [getattr(by_api, f) for f in fields] == [getattr(by_form, f) for f in fields]
    assert by_api.change_message == "Contamination overridden: flagged (trained on the test split)"
    assert by_api.object_repr == f"Contamination of {selectors.get_run(run_id).title}: flagged"


def test_an_override_needs_a_reason_and_a_scored_kind(staff_client: Client, rerun_tree: dict) -> None:
    url = f"/reruns/runs/{rerun_tree['run_id']}/override"
    assert staff_client.post(url, {"kind": "contamination", "flagged": "true", "reason": " "}).status_code == 400
    assert staff_client.post(url, {"kind": "general_anomaly", "flagged": "true", "reason": "x"}).status_code == 400
    assert selectors.override_log(rerun_tree["run_id"]) == []


def test_overriding_a_flagged_run_clears_its_fallback(staff_client: Client, rerun_tree: dict,
                                                      tiny_checkpoint: Path) -> None:
    flagged = _flagged_run(rerun_tree, tiny_checkpoint)
    assert selectors.get_run(flagged).flagged
    response = staff_client.post(f"/api/runs/{flagged}/overrides",
                                 {"kind": "contamination", "flagged": False, "reason": "a false positive"},
                                 content_type="application/json")
    assert response.status_code == 201 and response.json()["previous"] == "flagged"
    run = selectors.get_run(flagged)
    assert not run.flagged and run.overrides == {"contamination": False}


def test_agreement_counts_judge_against_reviewer(staff_client: Client, rerun_tree: dict, tiny_checkpoint: Path) -> None:
    flagged = _flagged_run(rerun_tree, tiny_checkpoint)
    services.override_verdict(run_id=flagged, kind="contamination", flagged=True, reason="agree", reviewer="a")
    services.override_verdict(run_id=rerun_tree["run_id"], kind="contamination", flagged=True, reason="no", reviewer="a")
    services.override_verdict(run_id=rerun_tree["run_id"], kind="disallowed_model", flagged=False, reason="ok", reviewer="a")
    assert selectors.override_agreement() == {
        "contamination": {"agreed": 1, "disagreed": 1, "judge_error": 0},
        "disallowed_model": {"agreed": 1, "disagreed": 0, "judge_error": 0},
    }
    page = staff_client.get("/admin/evaluator/rerunjob/agreement/").content.decode()
    assert 'data-kind="contamination"><td>contamination</td><td class="agreed">1</td><td class="disagreed">1</td>' in page
    assert staff_client.get("/api/reviews/agreement").json()[0] == {
        "kind": "contamination", "agreed": 1, "disagreed": 1, "judge_error": 0}


def test_the_judge_rerun_is_refused_without_a_command(staff_client: Client, rerun_tree: dict, settings) -> None:
    settings.PTB_JUDGE_COMMAND = []
    response = staff_client.post(f"/reruns/runs/{rerun_tree['run_id']}/judge")
    assert response.status_code == 409 and "no judge command is configured" in response.content.decode()
    settings.PTB_JUDGE_COMMAND = ["judge", "--dir={run_dir}"]
    assert staff_client.post(f"/api/runs/{rerun_tree['run_id']}/judge").status_code == 409


def test_bulk_rerun_queues_one_job_per_matching_run(staff_client: Client, rerun_tree: dict, tiny_checkpoint: Path,
                                                    redis_broker: str) -> None:
    flagged = _flagged_run(rerun_tree, tiny_checkpoint)
    # issue 29: the form offers the ingested runs' agents by name (it asked for a key as free text)
    [(key, name)] = selectors.filter_options()["agents"]
    form = staff_client.get("/admin/evaluator/rerunjob/bulk/").content.decode()
    assert f'<option value="{key}">{name} ({key})</option>' in form and '<option value="gsm8k">' in form
    response = staff_client.post("/admin/evaluator/rerunjob/bulk/", {
        "agent": key, "benchmark": "gsm8k", "only_flagged": "on",
        "only_with_checkpoint": "on", "runs": "10", "limit": "3", "max_tokens": "8"})
    assert response.status_code == 302
    assert [(j.run_id, j.status, j.limit, j.max_tokens) for j in RerunJob.objects.all()] == [(flagged, "queued", 3, 8)]
    staff_client.post("/admin/evaluator/rerunjob/bulk/", {"agent": key, "runs": "10"})
    assert RerunJob.objects.count() == 3
    unknown = staff_client.post("/admin/evaluator/rerunjob/bulk/", {"agent": "no-such-agent", "runs": "10"})
    assert unknown.status_code == 200 and "Select a valid choice" in unknown.content.decode()
    assert RerunJob.objects.count() == 3


def test_admin_actions_cancel_and_requeue(rerun_tree: dict, redis_broker: str) -> None:
    staff_client = Client()  # the ORM admin's changelist needs the model permissions: a superuser
    staff_client.force_login(get_user_model().objects.create_superuser("admin"))
    job = RerunJob.objects.create(run_id=rerun_tree["run_id"], benchmark="gsm8k", checkpoint="/x", limit=2)
    url = "/admin/evaluator/rerunjob/"
    staff_client.post(url, {"action": "cancel_selected", "_selected_action": [job.pk]})
    job.refresh_from_db()
    assert job.status == "cancelled"
    staff_client.post(url, {"action": "requeue_selected", "_selected_action": [job.pk]})
    new = RerunJob.objects.exclude(pk=job.pk).get()
    assert (new.run_id, new.status, new.limit) == (job.run_id, "queued", 2)


def test_a_stale_job_is_failed_by_the_reaper_not_by_a_read(staff_client: Client, rerun_tree: dict, settings) -> None:
    # Reads never write: the job page of a job whose worker went silent still shows it running until the reaper
    # (manage.py reap_jobs, started beside the server by `serve`) ends it.
    settings.PTB_JOB_STALE_SECONDS = 60
    old = timezone.now() - timedelta(seconds=61)
    job = RerunJob.objects.create(run_id=rerun_tree["run_id"], benchmark="gsm8k", checkpoint="/x", status="running",
                                  started_at=old, heartbeat_at=old, worker_host="gpu7")
    fresh = RerunJob.objects.create(run_id=rerun_tree["run_id"], benchmark="gsm8k", checkpoint="/x",
                                    status="running", started_at=old, heartbeat_at=timezone.now())
    page = staff_client.get(f"/reruns/{job.pk}/").content.decode()
    assert 'id="job-state">running' in page and "worker lost" not in page
    assert staff_client.get(f"/api/reruns/{job.pk}").json()["status"] == "running"
    assert RerunJob.objects.get(pk=job.pk).status == "running"
    call_command("reap_jobs", stdout=StringIO())
    page = staff_client.get(f"/reruns/{job.pk}/").content.decode()
    assert "worker lost: no heartbeat since" in page and "(host gpu7)" in page
    job.refresh_from_db()
    fresh.refresh_from_db()
    assert (job.status, fresh.status) == ("failed", "running")


def test_a_queued_job_whose_credential_expired_is_failed_by_the_reaper(rerun_tree: dict, settings) -> None:
    settings.PTB_JOB_CREDENTIAL_SECONDS = 3600
    job = RerunJob.objects.create(run_id=rerun_tree["run_id"], benchmark="gsm8k", checkpoint="/x")
    young = RerunJob.objects.create(run_id=rerun_tree["run_id"], benchmark="gsm8k", checkpoint="/x")
    RerunJob.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(hours=2))
    out = StringIO()
    call_command("reap_jobs", stdout=out)
    assert f": {job.pk}" in out.getvalue()
    job.refresh_from_db()
    young.refresh_from_db()
    assert job.status == "failed" and "no worker took the job from queue celery within 3600 s" in job.reason
    assert young.status == "queued"


def test_reap_jobs_command_fails_stale_jobs(rerun_tree: dict, settings, capsys) -> None:
    settings.PTB_JOB_STALE_SECONDS = 5
    old = timezone.now() - timedelta(minutes=5)
    job = RerunJob.objects.create(run_id=rerun_tree["run_id"], benchmark="gsm8k", checkpoint="/x", status="running",
                                  started_at=old, heartbeat_at=old, cancel_requested=True)
    call_command("reap_jobs")
    assert f"1 stale job(s) ended (no heartbeat for 5 s): {job.pk}" in capsys.readouterr().out
    job.refresh_from_db()
    assert job.status == "cancelled" and "worker lost" in job.reason  # a pending cancel ends cancelled
