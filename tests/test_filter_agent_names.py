"""The Agent filter of the runs list and of the search names each agent as its runs do (a new user's pass, branch
nuz2): an unlisted sweep read "gpt-5.1-codex-max (codexhigh)" in the filter while every row, the leaderboard and the
analysis call it "GPT-5.1 Codex Max (High) (unlisted sweep)"; and the list was sorted with capitals first
("GPT-5.4 (High)" before "Gemini 3 Pro", the sweep last)."""
from __future__ import annotations

import html
import re

import pytest

from traces import selectors

pytestmark = pytest.mark.django_db

SWEEP = "GPT-5.1 Codex Max (High) (unlisted sweep)"
STORED = "gpt-5.1-codex-max (codexhigh)"


def _options(body: str) -> list[tuple[str, str]]:
    """(value, text) of the page's ``<select name="agent">`` options, "any" left out."""
    select = re.search(r'<select name="agent">(.*?)</select>', body, re.S)
    assert select, "no Agent filter on the page"
    return [(html.unescape(v), html.unescape(t).strip())
            for v, t in re.findall(r'<option value="([^"]*)"[^>]*>([^<]*)</option>', select[1]) if v]


def test_the_agent_filter_names_each_agent_as_its_runs_do(client, demo_ingested):
    agents = selectors.filter_options()["agents"]
    runs = client.get("/api/runs", {"limit": 200}).json()["runs"]
    shown: dict[str, set[str]] = {}
    for run in runs:
        shown.setdefault(run["agent_key"], set()).add(run["agent_display"])
    assert {k: {n} for k, n in agents} == shown  # one name a key, the one its runs show
    names = [n for _, n in agents]
    assert SWEEP in names and STORED not in names
    assert names == sorted(names, key=str.lower)
    for path in ("/runs/", "/search/"):
        assert _options(client.get(path).content.decode()) == agents, path


def test_the_sweep_typed_by_its_shown_name_is_read_as_the_filter(client, demo_ingested):
    [key] = [k for k, n in selectors.filter_options()["agents"] if n == SWEEP]
    body = " ".join(client.get("/search/", {"q": f'agent="{SWEEP}" import'}).content.decode().split())
    assert f'<code>agent="{SWEEP}"</code>' in html.unescape(body)
    assert f'<option value="{key}" selected>{SWEEP}</option>' in body
    assert 'name="q" value="import"' in body
