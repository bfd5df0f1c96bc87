"""What a visitor sees on / and what the JSON twin returns."""
from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.django_db


def _row(html: str, agent_key: str) -> str:
    match = re.search(rf'<tr class="[^"]*" data-agent="{re.escape(agent_key)}"[^>]*>(.*?)</tr>', html, re.S)
    assert match, agent_key
    return match.group(1)


def test_the_leaderboard_shows_published_numbers(client, use_published):
    response = client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    for name in ("AIME 2025", "Arena-Hard Writing", "BFCL", "GPQA", "GSM8K", "HealthBench", "HumanEval"):
        assert name in html
    opus = _row(html, "opus-4.6")
    assert "Opus 4.6" in opus and "Claude Code" in opus
    assert re.search(r"23\.2<span class=\"pm\"> ± 1\.8</span>", opus)
    assert re.search(r">\s*2\s*<", opus)  # rank 2 behind Opus 4.6 (1M)
    assert "51.1" in _row(html, "instruct")
    assert "7.5" in _row(html, "base-zeroshot")
    assert "18.1" in _row(html, "base-fewshot")
    assert "high" in _row(html, "gpt-5.4-high")
    assert "Official Instruct Models" in html and "Base Models (zero-shot)" in html
    # Weights and how they were derived.
    assert "0.22654" in html and "headroom" in html


def test_base_model_filter_and_fallback_marks(client, use_published):
    html = client.get("/?base_model=Qwen3-1.7B-Base").content.decode()
    glm = _row(html, "glm-4.7")
    # Qwen3-1.7B-Base: humaneval scored, gpqamain fell back after a failed evaluation.
    assert "12.2" in glm
    assert 'title="Qwen3-1.7B: base-model score used, the evaluation of the final model failed">*' in glm
    assert 'aria-current="true" data-base-model="Qwen3-1.7B-Base"' in html
    assert client.get("/?base_model=nope").status_code == 404


def test_sorting_by_a_benchmark_column(client, use_published):
    html = client.get("/?sort=gsm8k&dir=desc").content.decode()
    order = re.findall(r'<tr class="agent[^"]*" data-agent="([^"]+)"', html)
    assert order[0] == "gpt-5.2"  # GSM8K 55.9, the highest agent cell
    html_asc = client.get("/?sort=gsm8k&dir=asc").content.decode()
    assert re.findall(r'<tr class="agent[^"]*" data-agent="([^"]+)"', html_asc)[0] == "kimi-k2"  # 14.8


def test_htmx_partial_is_only_the_board(client, use_published):
    html = client.get("/leaderboard/table?base_model=Qwen3-4B-Base", HTTP_HX_REQUEST="true").content.decode()
    assert html.lstrip().startswith('<section id="board"')
    assert "<html" not in html
    assert 'hx-push-url="/?base_model=Qwen3-4B-Base&amp;sort=gsm8k&amp;dir=desc"' in html


def test_api_leaderboard_schema_and_values(client, use_published):
    data = client.get("/api/leaderboard").json()
    assert [b["id"] for b in data["benchmarks"]] == [
        "aime2025", "arenahardwriting", "bfcl", "gpqamain", "gsm8k", "healthbench", "humaneval"]
    assert data["benchmarks"][0] == {"id": "aime2025", "name": "AIME 2025", "weight": 0.226536549919078,
                                  "metric": "accuracy"}
    rows = {r["key"]: r for r in data["rows"]}
    assert len(data["rows"]) == 26
    opus = rows["opus-4.6"]
    assert opus["agent"] == "Opus 4.6" and opus["scaffold"] == "Claude Code" and opus["kind"] == "agent"
    assert round(opus["average"], 2) == 23.16 and round(opus["std"], 2) == 1.80 and opus["runs"] == 3
    assert set(opus["scores"]) == {b["id"] for b in data["benchmarks"]}
    assert rows["instruct"]["kind"] == "baseline" and rows["instruct"]["std"] is None
    assert round(rows["instruct"]["average"], 1) == 51.1
    assert rows["sonnet-4.6"]["runs"] == 1 and rows["sonnet-4.6"]["std"] is None


def test_api_filter_matches_page_and_rejects_unknown_model(client, use_published):
    data = client.get("/api/leaderboard?base_model=Qwen3-1.7B-Base").json()
    glm = {r["key"]: r for r in data["rows"]}["glm-4.7"]
    assert round(glm["scores"]["humaneval"], 2) == 12.20
    assert glm["fallbacks"]["gpqamain"] == [{"base_model": "Qwen3-1.7B", "reason": "error"}]
    assert client.get("/api/leaderboard?base_model=nope").status_code == 404


def test_openapi_docs(client):
    assert client.get("/api/docs").status_code == 200
    schema = client.get("/api/openapi.json").json()
    assert "/api/leaderboard" in schema["paths"]


def test_a_judging_rule_on_published_rows_alone_says_it_applies_to_rows_from_runs(client, demo_ingested):
    """``/?verdicts=any`` on the default Published rows: no row can have a Rank Δ (published rows have no per-run
    verdicts), so no blank column; a notice says why and links to the rows from runs under the rule. With both
    sources, a published row's Rank Δ is "—" with a title saying why, a row from runs its number."""
    for query in ("verdicts=any", "verdicts=majority", "flags=ignore", "reviews=0"):
        html = client.get(f"/?{query}").content.decode()
        assert "Rank Δ</th>" not in html and 'class="num rank-change"' not in html, query
        notice = re.search(r'<p class="notice" id="judging-published">(.*?)</p>', html, re.S)
        assert notice and "applies only to rows computed from runs" in notice.group(1), query
        assert 'href="/?source=runs&amp;' in notice.group(1), query
        assert 'id="judging-notice"' not in html
    # The default view: neither.
    html = client.get("/").content.decode()
    assert 'id="judging-published"' not in html and "Rank Δ" not in html
    # Both sources: published rows say "—" and why; rows from runs carry a number.
    html = client.get("/?source=all&verdicts=any").content.decode()
    assert "Rank Δ</th>" in html and 'id="judging-notice"' in html and 'id="judging-published"' not in html
    published = re.search(r'<tr class="agent source-published" data-agent="opus-4.6".*?<td class="num rank-change">'
                          r'(.*?)</td>', html, re.S)
    cell = published.group(1)
    assert cell == ('<span class="muted" title="Published rows have no per-run verdicts: the judging rules apply '
                    'only to rows computed from runs">—</span>')
    cells = re.findall(r'<tr class="agent source-runs"[^>]*>.*?<td class="num rank-change">(.*?)</td>', html, re.S)
    assert cells and all(re.fullmatch(r"[+-]?\d+", c) for c in cells), cells
