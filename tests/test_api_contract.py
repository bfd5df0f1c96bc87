"""The OpenAPI document matches the answers (issue 13): schemathesis against the WSGI app, plus the cases behind it.

``test_every_operation_keeps_its_contract`` runs schemathesis' default checks (no server error, documented
status codes, content types and headers, response schemas, schema-valid requests accepted, invalid ones
rejected) on every operation with bounded examples, over the demo warehouse. Staff and worker operations answer
403 without credentials, which their documents list.
"""
from __future__ import annotations

import re

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from django.core.wsgi import get_wsgi_application
from traces import layout

# Django's WSGI application, not ptbsite.wsgi's module: that one refuses pandas for web workers
# (bench/web_memory.py), which would hold for this whole test process (transformers and datasets need pandas).
application = get_wsgi_application()

EXAMPLES = 8  # per operation (26 operations)
schema = schemathesis.openapi.from_wsgi("/api/openapi.json", application)
AWARE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")


@pytest.mark.django_db
@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_every_operation_keeps_its_contract(case, demo_ingested):
    case.call_and_validate()


def _scored_run(demo_ingested):
    report, _, _ = demo_ingested
    demo = next(r for r in report.runs if r.accuracy is not None and r.steps_planned)
    method, run_dir = demo.run_dir.split("/")
    return layout.run_id(method, run_dir)


@pytest.mark.django_db
def test_run_answers_validate_against_the_document(demo_ingested):
    run_id = _scored_run(demo_ingested)
    for path, params, query in (("/api/runs/{run_id}", {"run_id": run_id}, {}),
                                ("/api/runs/{run_id}/steps", {"run_id": run_id}, {"limit": 500}),
                                ("/api/runs/{run_id}/steps/{index}/text", {"run_id": run_id, "index": 1}, {}),
                                ("/api/runs/{run_id}/timeline", {"run_id": run_id}, {})):
        case = schema[path]["GET"].Case(path_parameters=params, query=query)
        response = case.call_and_validate()
        assert response.status_code == 200, (path, response.text[:300])


def test_times_carry_their_zone(client, demo_ingested):
    run_id = _scored_run(demo_ingested)
    detail = client.get(f"/api/runs/{run_id}").json()
    assert detail["evaluations"] and all(AWARE.match(e["created_at"]) for e in detail["evaluations"])
    steps = client.get(f"/api/runs/{run_id}/steps?limit=500").json()["steps"]
    times = [s["time"] for s in steps if s["time"]]
    assert times and all(AWARE.match(t) and t.endswith("Z") for t in times), times[:3]


def test_error_answers_are_documented():
    doc = schema.raw_schema
    paths = doc["paths"]
    assert set(paths["/api/runs/{run_id}"]["get"]["responses"]) >= {"200", "404", "422", "503"}
    assert set(paths["/api/leaderboard"]["get"]["responses"]) >= {"200", "404", "422", "503"}
    assert set(paths["/api/reruns"]["post"]["responses"]) >= {"201", "400", "403", "422", "503"}
    assert set(paths["/api/worker/jobs/{job_id}/finish"]["post"]["responses"]) >= {"200", "400", "403", "404", "503"}
    assert "403" not in paths["/api/runs"]["get"]["responses"]  # public
    assert "Retry-After" in paths["/api/runs"]["get"]["responses"]["503"]["headers"]
    for ops in paths.values():
        for op in ops.values():
            for status, answer in op["responses"].items():
                if status.startswith(("4", "5")):
                    assert answer["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}


@pytest.mark.parametrize("query", ["dir=", "flags=", "source=", "dir=&flags=&source=&sort=&base_model=&facet="])
def test_empty_form_values_mean_the_default(client, use_published, query):
    empty = client.get(f"/api/leaderboard?{query}")
    assert empty.status_code == 200, empty.content[:200]
    default = client.get("/api/leaderboard").json()
    assert [r["key"] for r in empty.json()["rows"]] == [r["key"] for r in default["rows"]]
    assert empty.json()["apply_flags"] is True and empty.json()["source"] == "published"


def test_values_outside_the_enumerations_are_rejected(client, use_published):
    response = client.get("/api/leaderboard?flags=sometimes")
    assert response.status_code == 422
    assert "detail" in response.json()
