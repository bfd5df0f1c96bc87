"""Results kept once per warehouse version (ptbsite.warehouse.memo): the analysis page and its twins share one
computation until a write bumps the version (issue 24)."""
from __future__ import annotations

import pytest

from ptbsite import warehouse
from ptbsite.warehouse.memo import PerVersion

pytestmark = pytest.mark.django_db


def test_a_result_is_kept_until_a_write_bumps_the_version(fresh_warehouse):
    memo: PerVersion[list[int]] = PerVersion(maxsize=2)
    calls: list[str] = []

    def compute(key: str) -> list[int]:
        calls.append(key)
        return [len(calls)]

    first = memo.get("a", lambda: compute("a"))
    assert memo.get("a", lambda: compute("a")) is first and calls == ["a"]
    memo.get("b", lambda: compute("b"))
    assert calls == ["a", "b"]
    with warehouse.transaction() as con:  # any committed write bumps the version
        con.execute("CREATE TABLE IF NOT EXISTS memo_probe (x INTEGER)")
    again = memo.get("a", lambda: compute("a"))
    assert again == [3] and again is not first and calls == ["a", "b", "a"]
    memo.get("c", lambda: compute("c"))
    memo.get("d", lambda: compute("d"))  # maxsize 2: "a" of this version is dropped
    memo.get("a", lambda: compute("a"))
    assert calls == ["a", "b", "a", "c", "d", "a"]
    warehouse.memo.forget()
    memo.get("a", lambda: compute("a"))
    assert calls[-1] == "a" and len(calls) == 7


def test_the_analysis_page_and_its_twins_compute_the_analysis_once(client, demo_ingested, monkeypatch):
    import importlib

    analysis_module = importlib.import_module("traces.selectors.analysis")  # the package exports a function so named

    computed: list[str] = []
    real = analysis_module.read_analysis

    def counting(con, suite: str):
        computed.append(suite)
        return real(con, suite)

    monkeypatch.setattr(analysis_module, "read_analysis", counting)
    warehouse.memo.forget()
    assert client.get("/analysis/").status_code == 200
    assert client.get("/api/analysis").status_code == 200
    assert computed == ["posttrainbench"]
    warehouse.version.bump()  # what every committed write does
    assert client.get("/api/analysis").status_code == 200
    assert computed == ["posttrainbench", "posttrainbench"]
