"""Score vs tokens and vs cost, from ingested runs: coverage, the frontiers, the page and the API."""
from __future__ import annotations

import pytest

from leaderboard import plots, selectors
from leaderboard.frontier import pareto_frontier

pytestmark = pytest.mark.django_db


def latest_usage(suite: str) -> list[dict]:
    """The oracle: every latest agent run's usage read run by run ({agent_key, tokens, cost_usd}, by run id), to
    check the plot's usage aggregated per agent in SQL (``traces.selectors.read_usage_by_agent``)."""
    from ptbsite import warehouse
    from traces.selectors.runs import AGENT_RUN

    with warehouse.connect() as con:
        rows = con.execute(
            "SELECT m.agent_key, r.tokens_in + r.tokens_out, r.cost_usd FROM runs r JOIN methods m ON m.id = r.method "
            f"WHERE r.suite = ? AND r.is_latest AND {AGENT_RUN} ORDER BY r.id", [suite]).fetchall()
    return [{"agent_key": a, "tokens": t, "cost_usd": c} for a, t, c in rows]


def test_usage_points_are_means_over_runs_with_usage(demo_ingested):
    data = plots.usage_vs_score()
    usages = latest_usage("posttrainbench")
    rows = {r.key: r for r in selectors.leaderboard(source="runs").rows if r.source == "runs"}
    assert {p.key for p in data.points} == set(rows)
    for point in data.points:
        mine = [u for u in usages if u["agent_key"] == point.key]
        tokens = [u["tokens"] for u in mine if u["tokens"] is not None]
        costs = [u["cost_usd"] for u in mine if u["cost_usd"] is not None]
        assert point.runs == len(mine) and point.tokens_runs == len(tokens) and point.cost_runs == len(costs)
        assert point.tokens == (pytest.approx(sum(tokens) / len(tokens)) if tokens else None)
        assert point.cost_usd == (pytest.approx(sum(costs) / len(costs)) if costs else None)
        assert point.score == pytest.approx(rows[point.key].average)
    assert sum(data.missing.values()) == sum(1 for u in usages if u["tokens"] is None or u["cost_usd"] is None)
    assert any("carry tokens but no cost" in reason for reason in data.missing)


def test_frontiers_are_the_non_dominated_agents(demo_ingested):
    data = plots.usage_vs_score()
    with_cost = [p for p in data.points if p.cost_usd is not None]
    for p in data.cost_frontier:
        assert not any(q.cost_usd <= p.cost_usd and q.score > p.score for q in with_cost)
    for p in with_cost:
        if p not in data.cost_frontier:
            assert any(q.cost_usd <= p.cost_usd and q.score >= p.score for q in data.cost_frontier)
    assert data.token_frontier == pareto_frontier([p for p in data.points if p.tokens is not None],
                                                  x=lambda p: p.tokens, y=lambda p: p.score)


def test_page_and_api(client, demo_ingested):
    html = client.get("/plots/usage-vs-score/").content.decode()
    assert 'id="tokens-vs-score"' in html and 'id="cost-vs-score"' in html
    assert "Runs without usage" in html and "synthetic" in html
    api = client.get("/api/plots/usage-vs-score").json()
    data = plots.usage_vs_score()
    assert api["cost_frontier"] == [p.key for p in data.cost_frontier]
    assert {p["key"] for p in api["points"]} == {p.key for p in data.points}


@pytest.mark.parametrize("rule,reviews", [("any", "1"), ("ignore", "0"), ("majority", "0")])
def test_the_page_and_its_twin_under_each_judging_rule(client, demo_ingested, rule, reviews):
    """Issue 26: the scores are the leaderboard's from runs under the same judging rule; the page says which rule
    and its chips lead to each rule (the active one marked), its leaderboard link to the same view."""
    query = f"verdicts={rule}&reviews={reviews}"
    api = client.get(f"/api/plots/usage-vs-score?{query}").json()
    board = client.get(f"/api/leaderboard?source=runs&{query}").json()
    averages = {r["key"]: r["average"] for r in board["rows"] if r["source"] == "runs"}
    assert {p["key"]: p["score"] for p in api["points"]} == pytest.approx(averages, abs=1e-9)
    assert (api["verdicts"], api["reviews"], api["verdicts_text"]) == (rule, reviews == "1", board["verdicts_text"])
    default = client.get("/api/plots/usage-vs-score").json()
    assert (default["verdicts"], default["reviews"]) == ("era", True)
    html = client.get(f"/plots/usage-vs-score/?{query}").content.decode()
    assert f'id="judging-notice" data-verdicts="{rule}"' in html
    assert f'class="chip active" aria-current="true" data-verdicts="{rule}"' in html
    kept = "&amp;reviews=0" if reviews == "0" else ""  # a chip changes the rule and keeps the reviews
    assert f'href="?verdicts=any{kept}"' in html and f'href="?{kept.removeprefix("&amp;")}"' in html
    board_link = "flags=ignore" if (rule, reviews) == ("ignore", "0") else f"verdicts={rule}{kept}"
    assert f'href="/?source=runs&amp;{board_link}"' in html


def test_runs_of_agents_not_on_the_board_are_left_out(tmp_path, fresh_warehouse):
    # A bare `manage.py ingest` into a warehouse without the suite's published rows: the runs leaderboard has no
    # rows, so no agent has a score; the plot is empty instead of failing (it answered 500 while the page cache
    # was warmed at the end of such an ingest).
    from tests.conftest import write_run
    from ingest.tree import ingest_tree

    write_run(tmp_path / "results", checkpoint=None)
    assert ingest_tree(root=tmp_path / "results").stored == 1
    assert [u["agent_key"] for u in latest_usage("posttrainbench")] == ["claude_claude-opus-4-6_10h_run1"]
    data = plots.usage_vs_score()
    assert data.points == [] and data.missing == {} and data.cost_frontier == []
