"""``/api/search`` reads ``key=value`` words of ``q`` as /search/ does (a new user's pass, branch nuz2): the page
answered ``benchmark=gsm8k loss`` with the GSM8K runs holding "loss" while its JSON twin searched the word
"benchmark=gsm8k" too and answered no run."""
from __future__ import annotations

import re

import pytest

from traces import selectors

pytestmark = pytest.mark.django_db


def _page_runs(client, params: dict) -> list[str]:
    return re.findall(r'<li class="search-run" data-run="([0-9a-f]+)"', client.get("/search/", params).content.decode())


def test_the_json_twin_reads_typed_filters_as_the_page_does(client, demo_ingested):
    typed = "benchmark=gsm8k import"
    twin = client.get("/api/search", {"q": typed}).json()
    shown = _page_runs(client, {"q": typed})
    assert shown and [r["run"]["id"] for r in twin["runs"]] == shown
    assert {selectors.get_run(r).benchmark for r in shown} == {"gsm8k"}
    assert twin["q"] == "import" and twin["needles"] == ["import"]
    assert twin["typed"]["filters"] == [{"param": "benchmark", "value": "gsm8k", "text": "Benchmark: GSM8K",
                                         "token": "benchmark=gsm8k"}]
    assert twin["total"] == len(shown)
    # The same as the parameter; the typed word wins over it, as on the page.
    plain = client.get("/api/search", {"q": "import", "benchmark": "gsm8k"}).json()
    assert [r["run"]["id"] for r in plain["runs"]] == shown and plain["typed"] is None
    over = client.get("/api/search", {"q": typed, "benchmark": "humaneval"}).json()
    assert [r["run"]["id"] for r in over["runs"]] == shown == _page_runs(client, {"q": typed, "benchmark": "humaneval"})
    # A quoted agent name and a flag.
    [(key, name)] = [(k, n) for k, n in selectors.filter_options()["agents"] if " " in n][:1]
    both = client.get("/api/search", {"q": f'agent="{name}" flagged=no import'}).json()
    assert {f["param"]: f["value"] for f in both["typed"]["filters"]} == {"agent": key, "flagged": "0"}
    assert [r["run"]["id"] for r in both["runs"]] == _page_runs(client, {"q": f'agent="{name}" flagged=no import'})
    assert all(r["run"]["agent_key"] == key and not r["run"]["flagged"] for r in both["runs"])
    # A value the filter does not take stays a word, and the twin says so.
    nope = client.get("/api/search", {"q": "benchmark=nope import"}).json()
    assert nope["q"] == "benchmark=nope import" and nope["needles"] == ["benchmark=nope", "import"]
    assert nope["typed"]["filters"] == [] and nope["typed"]["refused"][0][0] == "benchmark=nope"
    assert [r["run"]["id"] for r in nope["runs"]] == _page_runs(client, {"q": "benchmark=nope import"}) == []
