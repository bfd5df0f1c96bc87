"""The API serves numbers without float noise (issue 29: ``60.440000000000005``): every float of every public JSON
answer on the demo warehouse has at most 15 significant digits (``ptbsite.api._rounded``)."""
from __future__ import annotations

import json

import pytest

from ptbsite.api import _rounded

pytestmark = pytest.mark.django_db


def test_rounding_keeps_what_the_figure_says():
    assert _rounded({"a": [100 * 0.6044, 1.6749999999999994, 12.34567890123456], "b": 3, "c": None, "d": "x"}) == {
        "a": [60.44, 1.675, 12.3456789012346], "b": 3, "c": None, "d": "x"}
    assert 100 * 0.6044 == 60.440000000000005  # the noise this removes


def _floats(value):
    if isinstance(value, float):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _floats(v)
    elif isinstance(value, list):
        for v in value:
            yield from _floats(v)


def test_no_api_answer_carries_float_noise(demo_ingested, client):
    run_id = client.get("/api/runs?limit=1").json()["runs"][0]["id"]
    urls = ["/api/leaderboard", "/api/leaderboard?source=all", "/api/leaderboard?base_model=Qwen3-4B-Base",
            "/api/runs?limit=500", f"/api/runs/{run_id}", f"/api/runs/{run_id}/timeline",
            *(f"/api/plots/{p}" for p in ("time-vs-score", "time-spent", "per-benchmark", "budget-and-effort",
                                           "usage-vs-score")),
            "/api/analysis"]
    counted = 0
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        noisy = [v for v in _floats(json.loads(response.content)) if float(f"{v:.15g}") != v]
        assert noisy == [], (url, noisy[:5])
        counted += sum(1 for _ in _floats(json.loads(response.content)))
    assert counted > 1000
