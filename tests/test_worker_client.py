"""The worker's client of the job API (``evaluator.worker.JobClient``) when the server answers an error.

Stand-in: ``httpx.MockTransport`` replaces the site's server here. The real server answers a 5xx to ``/finish`` only
on a fault of its own (a new user found one: web workers could not write Arrow tables, tests/test_wsgi.py), which
a test cannot provoke on purpose; the end-to-end paths with a real server and a real Celery worker are in
tests/test_reruns_worker.py and tests/test_worker_faults.py.
"""
from __future__ import annotations

import json
from urllib.parse import parse_qs

import httpx
import pytest

from evaluator.protocol import FinishReport
from evaluator.worker import JobClient


def _client(answers: list[tuple[int, dict | str]], seen: list[dict]) -> JobClient:
    """A JobClient whose server answers ``answers`` in turn (status, JSON body or text) and records each report."""
    def handle(request: httpx.Request) -> httpx.Response:
        body = request.content.decode()
        if "multipart/form-data" in request.headers["content-type"]:
            report = body.split('name="report"\r\n\r\n', 1)[1].split("\r\n--", 1)[0]
        else:
            report = parse_qs(body)["report"][0]
        seen.append(json.loads(report))
        status, answer = answers.pop(0)
        return httpx.Response(status, json=answer) if isinstance(answer, dict) else httpx.Response(status, text=answer)

    client = JobClient(api_base="http://site.test", token="t", credential="c", job_id=7)
    client.http = httpx.Client(base_url="http://site.test", transport=httpx.MockTransport(handle))
    return client


def test_a_server_error_is_retried_and_the_report_stored_on_the_next_try():
    seen: list[dict] = []
    client = _client([(503, "restarting"), (200, {"status": "succeeded", "reason": ""})], seen)
    answer = client.finish(FinishReport(status="succeeded", score=0.5), None, backoff_s=0.0)
    assert answer.status == "succeeded"
    assert [r["status"] for r in seen] == ["succeeded", "succeeded"] and seen[1]["score"] == 0.5


def test_a_server_that_keeps_failing_is_told_why_the_results_were_not_stored(tmp_path):
    seen: list[dict] = []
    log = tmp_path / "run.eval"
    log.write_bytes(b"PK\x03\x04 eval log")
    client = _client([(500, "AttributeError: 'NoneType' object has no attribute '__version__'")] * 5
                     + [(200, {"status": "failed", "reason": "stored"})], seen)
    answer = client.finish(FinishReport(status="succeeded", score=0.625, log=["scored"]), log, backoff_s=0.0)
    assert answer.status == "failed"
    assert [r["status"] for r in seen] == ["succeeded"] * 5 + ["failed"]
    reason = seen[-1]["reason"]
    assert reason.startswith("the server refused the worker's succeeded report: HTTP 500 ")
    assert "__version__" in reason and seen[-1]["log"] == ["scored"]


def test_a_refusal_is_not_retried_and_the_failure_report_names_it():
    seen: list[dict] = []
    client = _client([(400, {"detail": "report.score: not a number"}), (409, {"detail": "job 7 has ended"})], seen)
    with pytest.raises(httpx.HTTPStatusError) as refused:
        client.finish(FinishReport(status="succeeded", score=0.1), None, backoff_s=0.0)
    assert refused.value.response.status_code == 409  # the failure report's own answer
    assert [r["status"] for r in seen] == ["succeeded", "failed"]
    assert "HTTP 400" in seen[1]["reason"] and "not a number" in seen[1]["reason"]
