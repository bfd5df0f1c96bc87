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


def test_rounding_in_place_and_through_subclasses():
    """Floats met in place inside dicts and lists, at the top, inside tuples and as float subclasses (numpy's
    float64) are rounded alike; NaN, infinities, booleans, ints and strings pass as they are; tuples become lists."""
    import math

    import numpy as np

    noisy = 100 * 0.6044
    got = _rounded({"x": noisy, "l": [noisy, (noisy, {"t": noisy})], "np": np.float64(noisy), "nl": [np.float64(noisy)],
                    "nan": float("nan"), "inf": [float("inf"), -float("inf")], "b": True, "i": 10**20, "s": "1.6749999999999994",
                    "z": -0.0, "tiny": 5e-324})
    assert got["x"] == got["np"] == got["nl"][0] == 60.44 and got["l"] == [60.44, [60.44, {"t": 60.44}]]
    assert math.isnan(got["nan"]) and got["inf"] == [math.inf, -math.inf]
    assert got["b"] is True and got["i"] == 10**20 and got["s"] == "1.6749999999999994"
    assert math.copysign(1.0, got["z"]) == -1.0 and got["tiny"] == 5e-324
    assert _rounded(noisy) == 60.44 and _rounded((noisy,)) == [60.44] and _rounded(None) is None


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
