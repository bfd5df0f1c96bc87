"""Who may see and do what on the rerun and review pages and endpoints; a broker that is down."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from evaluator.models import ApiToken, RerunJob
from evaluator.permissions import issue_job_credential
from tests.conftest import WORKER_TOKEN, use_broker

pytestmark = pytest.mark.django_db


def _pages(run_id: str, job_id: int) -> list[tuple[str, str]]:
    return [
        ("get", "/reruns/"), ("get", f"/reruns/{job_id}/"), ("get", f"/reruns/{job_id}/status"),
        ("get", f"/reruns/{job_id}/eval-log"), ("post", "/reruns/new"), ("post", f"/reruns/{job_id}/cancel"),
        ("post", f"/reruns/runs/{run_id}/override"), ("post", f"/reruns/runs/{run_id}/judge"),
        ("get", "/admin/evaluator/rerunjob/bulk/"), ("post", "/admin/evaluator/rerunjob/bulk/"),
        ("get", "/admin/evaluator/rerunjob/agreement/"),
        ("get", "/api/reruns"), ("post", "/api/reruns"), ("get", f"/api/reruns/{job_id}"),
        ("post", f"/api/reruns/{job_id}/cancel"), ("post", f"/api/runs/{run_id}/overrides"),
        ("post", f"/api/runs/{run_id}/judge"), ("get", "/api/reviews/agreement"),
        ("get", "/reruns/form-extras?benchmark=gsm8k"), ("get", "/api/workers"),
        ("get", f"/reruns/{job_id}/eval-log/view"),
    ]


def _worker_endpoints(job_id: int) -> list[str]:
    return [f"/api/worker/jobs/{job_id}/start", f"/api/worker/jobs/{job_id}/progress", f"/api/worker/jobs/{job_id}/finish"]


@pytest.fixture
def job(rerun_tree: dict) -> RerunJob:
    return RerunJob.objects.create(run_id=rerun_tree["run_id"], benchmark="gsm8k", checkpoint="/x/final_model")


def test_anonymous_gets_403_everywhere(client: Client, rerun_tree: dict, job: RerunJob) -> None:
    for method, url in _pages(rerun_tree["run_id"], job.pk):
        assert getattr(client, method)(url).status_code == 403, (method, url)


def test_non_staff_gets_403_everywhere(client: Client, rerun_tree: dict, job: RerunJob) -> None:
    client.force_login(get_user_model().objects.create_user("visitor"))
    for method, url in _pages(rerun_tree["run_id"], job.pk):
        assert getattr(client, method)(url).status_code == 403, (method, url)


def test_a_non_staff_users_api_token_gets_403(client: Client, rerun_tree: dict, job: RerunJob) -> None:
    _, key = ApiToken.issue(get_user_model().objects.create_user("visitor"))
    assert client.get("/api/reruns", HTTP_AUTHORIZATION=f"Token {key}").status_code == 403
    assert client.get("/api/reruns", HTTP_AUTHORIZATION="Token not-a-key").status_code == 403


def test_staff_reaches_every_page(staff_client: Client, rerun_tree: dict, job: RerunJob) -> None:
    for method, url in _pages(rerun_tree["run_id"], job.pk):
        if method == "get":
            # 404 only where the job has no .eval log yet; every other page answers 200.
            assert staff_client.get(url).status_code == (404 if "/eval-log" in url else 200), url


def test_worker_endpoints_need_the_worker_token(client: Client, job: RerunJob, settings) -> None:
    settings.PTB_WORKER_TOKEN = WORKER_TOKEN
    credential = {"HTTP_X_PTB_JOB_CREDENTIAL": issue_job_credential(job)}
    for url in _worker_endpoints(job.pk):
        assert client.post(url, {}, content_type="application/json", **credential).status_code == 403
        assert client.post(url, {}, content_type="application/json", HTTP_AUTHORIZATION="Bearer wrong",
                           **credential).status_code == 403
    # The worker token alone is not enough either: each job has its own credential.
    start, progress, finish = _worker_endpoints(job.pk)
    assert client.post(start, {"host": "h"}, content_type="application/json",
                       HTTP_AUTHORIZATION=f"Bearer {WORKER_TOKEN}").status_code == 403
    assert client.post(progress, {}, content_type="application/json",
                       HTTP_AUTHORIZATION=f"Bearer {WORKER_TOKEN}").status_code == 403
    assert client.post(finish, {"report": '{"status": "failed"}'}, HTTP_AUTHORIZATION=f"Bearer {WORKER_TOKEN}"
                       ).status_code == 403
    assert RerunJob.objects.get(pk=job.pk).status == "queued"
    settings.PTB_WORKER_TOKEN = ""  # no token configured: no worker gets in
    assert client.post(_worker_endpoints(job.pk)[0], {"host": "h"}, content_type="application/json",
                       HTTP_AUTHORIZATION="Bearer ").status_code == 403


def test_posts_need_the_csrf_token(rerun_tree: dict, job: RerunJob) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(get_user_model().objects.create_user("reviewer", is_staff=True))
    assert client.post("/reruns/new", {"run_id": rerun_tree["run_id"]}).status_code == 403
    assert client.post(f"/reruns/{job.pk}/cancel").status_code == 403
    assert client.post(f"/api/reruns/{job.pk}/cancel").status_code == 403
    assert RerunJob.objects.get(pk=job.pk).status == "queued"


def test_an_api_token_needs_no_csrf(rerun_tree: dict, job: RerunJob) -> None:
    client = Client(enforce_csrf_checks=True)
    _, key = ApiToken.issue(get_user_model().objects.create_user("reviewer", is_staff=True))
    response = client.post(f"/api/reruns/{job.pk}/cancel", HTTP_AUTHORIZATION=f"Token {key}")
    assert response.status_code == 200
    assert response.json()["status"] == "cancelled"


def test_only_staff_see_the_admin_controls_on_the_run_page(client: Client, staff_client: Client, rerun_tree: dict) -> None:
    url = f"/runs/{rerun_tree['run_id']}/"
    assert "Re-evaluate" not in client.get(url).content.decode()
    page = staff_client.get(url).content.decode()
    assert "Re-evaluate" in page and 'action="/reruns/new"' in page and "Override verdict" in page
    assert "Re-run judge" not in page  # no judge command configured


def test_broker_down_answers_503_and_pages_still_browse(staff_client: Client, rerun_tree: dict,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    use_broker(monkeypatch, "redis://127.0.0.1:9/0")  # nothing listens on port 9
    response = staff_client.post("/reruns/new", {"run_id": rerun_tree["run_id"], "limit": "3"})
    assert response.status_code == 503
    assert "job queue is unavailable" in response.content.decode()
    job = RerunJob.objects.get()
    assert job.status == "failed" and job.reason.startswith("broker unavailable")
    api = staff_client.post("/api/reruns", {"run_id": rerun_tree["run_id"]}, content_type="application/json")
    assert api.status_code == 503
    assert staff_client.get(f"/runs/{rerun_tree['run_id']}/").status_code == 200
    assert staff_client.get("/reruns/").status_code == 200
