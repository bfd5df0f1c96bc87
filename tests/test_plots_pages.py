"""The plot pages as a visitor's browser receives them: links, the local plotly.js, figure JSON, number tables."""
from __future__ import annotations

import json
import re
from html import escape

import pytest

from leaderboard import plots

pytestmark = pytest.mark.django_db

PAGES = ["/plots/time-vs-score/", "/plots/time-spent/", "/plots/per-benchmark/", "/plots/budget-and-effort/"]


def _figures(html: str) -> dict[str, dict]:
    found = re.findall(r'<script id="([\w-]+-figure)" type="application/json">(.*?)</script>', html, re.S)
    return {name: json.loads(text) for name, text in found}


def test_index_links_every_chart(client, use_published):
    html = client.get("/plots/").content.decode()
    for url in PAGES:
        assert f'href="{url}"' in html
    assert 'href="/plots/usage-vs-score/">Score vs tokens and vs cost</a>' in html
    # Without ingested runs the usage chart says how to get some.
    assert "No ingested runs yet" in client.get("/plots/usage-vs-score/").content.decode()
    # The nav links the plots from every page.
    assert '<a href="/plots/">Plots</a>' in client.get("/").content.decode()


@pytest.mark.parametrize("url", PAGES)
def test_each_page_embeds_its_figure_and_the_local_plotly(client, use_published, url):
    response = client.get(url)
    assert response.status_code == 200
    html = response.content.decode()
    assert '<script src="/static/plotly/plotly.min.js" defer></script>' in html
    assert "cdn" not in html.lower()
    figures = _figures(html)
    assert figures and all(f["data"] and "layout" in f for f in figures.values())
    for name in figures:
        assert f'data-download="{name.removesuffix("-figure")}"' in html
    assert html.count("<details>") == len(figures)


def test_time_vs_score_page(client, use_published):
    html = client.get("/plots/time-vs-score/").content.decode()
    figure = _figures(html)["time-vs-score-figure"]
    agents = [cd[0] for trace in figure["data"] for cd in trace.get("customdata") or []]
    assert len(agents) == 23 and "sonnet-4.5" in agents
    frontier = next(t for t in figure["data"] if t["name"] == "Pareto frontier")
    assert frontier["line"]["shape"] == "hv" and frontier["mode"] == "lines"
    # Each agent is a trace named by its display name and labelled with it; the frontier's agents are placed first.
    by_name = {t["name"]: t for t in figure["data"]}
    frontier_names = ["GPT-5.1 Codex Max (OpenCode)", "GPT-5.3 Codex (Medium)", "GPT-5.3 Codex (High)",
                      "GPT-5.4 (High)", "Gemini 3.1 Pro", "Opus 4.6 (1M)"]
    assert [by_name[n]["meta"]["label_rank"] for n in frontier_names] == list(range(6))
    assert [(by_name[n]["x"][0], by_name[n]["y"][0]) for n in frontier_names] == list(zip(frontier["x"], frontier["y"]))
    assert by_name["Opus 4.6"]["text"] == ["Opus 4.6"] and by_name["Opus 4.6"]["legendgroup"] == "Claude Code"
    # The baselines and the budget are traces (the legend names them), not layout shapes.
    assert "shapes" not in figure["layout"]
    assert {"Official Instruct Models (51.1 %)", "Base Models (few-shot) (18.1 %)", "Base Models (zero-shot) (7.5 %)",
            "Time budget (10:00)"} <= set(by_name)
    # h:mm on the time axis.
    assert figure["layout"]["xaxis"]["ticktext"][:3] == ["0:00", "1:00", "2:00"]
    assert 'data-click-url="/runs/"' in html
    assert "Pareto frontier, fastest first" in html
    assert re.search(r'<tr data-agent="opus-4.6"><td>Opus 4.6</td>.*?9:40</td><td class="num">0:22<.*?23\.16', html, re.S)


def test_per_benchmark_base_model_selector(client, use_published):
    html = client.get("/plots/per-benchmark/?base_model=Qwen3-4B-Base").content.decode()
    assert re.search(r'class="chip active"\s+aria-current="true" data-base-model="Qwen3-4B-Base"', html)
    assert re.search(r'<tr class="baseline" data-agent="base-zeroshot">.*?data-benchmark="gsm8k">41\.8<', html, re.S)
    assert client.get("/plots/per-benchmark/?base_model=Llama-3-8B").status_code == 404


def test_untrusted_names_are_escaped_in_the_figure_json(client, use_published, monkeypatch):
    evil = "<script>alert(1)</script>"
    real = plots.time_vs_score()
    point = plots.AgentTime(**{**real.points[0].__dict__, "agent": evil, "label": evil})
    monkeypatch.setattr(plots, "time_vs_score", lambda **_: plots.TimeVsScore(10.0, [point], [point], []))
    html = client.get("/plots/time-vs-score/").content.decode()
    assert evil not in html
    # Escaped for plotly's HTML-ish text too, which shows the entities as the characters they stand for.
    agent = _figures(html)["time-vs-score-figure"]["data"][0]
    assert agent["text"] == [escape(evil)] and agent["name"] == escape(evil) and agent["customdata"][0][1] == escape(evil)


def test_colour_families_come_from_the_suites_scaffolds(client, use_published):
    from ptbsite.suites import get_suite

    assert get_suite("posttrainbench").scaffolds() == ["Claude Code", "Codex CLI", "Gemini CLI", "OpenCode"]
    figure = _figures(client.get("/plots/per-benchmark/").content.decode())["per-benchmark-figure"]
    bars = [t for t in figure["data"] if t["type"] == "bar"]
    # The families side by side, each in leaderboard order; every agent a legend entry under its scaffold.
    assert [t["legendgroup"] for t in bars] == ["Claude Code"] * 6 + ["Codex CLI"] * 6 + ["Gemini CLI"] + ["OpenCode"] * 10
    assert [t["name"] for t in bars][:3] == ["Opus 4.6 (1M)", "Opus 4.6", "Opus 4.5 (Claude Code)"]
    assert all(t["legendgrouptitle"]["text"] == t["legendgroup"] for t in bars)
    assert len({t["marker"]["color"] for t in bars}) == 23
    references = [t for t in figure["data"] if t["type"] == "scatter"]
    assert [t["name"] for t in references] == ["Official Instruct Models", "Base Models (few-shot)",
                                              "Base Models (zero-shot)"]
    assert all(t["legendgroup"] == "reference" and t.get("showlegend", True) for t in references)
