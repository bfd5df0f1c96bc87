"""The importer and the aggregation against the published numbers (scores.json, README, paper figure 1)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from leaderboard import selectors
from leaderboard.services import DEFAULT_PUBLISHED_DIR, PublishedDataError, import_published
from ptbsite import warehouse

SCORES = json.loads((DEFAULT_PUBLISHED_DIR / "scores.json").read_text())
# scores.json names the baselines differently from our keys.
KEY = {"human": "instruct", "base-model": "base-zeroshot", "base-model-fewshot": "base-fewshot"}


def _count(path: Path) -> dict[str, int]:
    con = duckdb.connect(str(path))
    try:
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                for t in ("agents", "reported_cells", "reported_scores", "reported_times", "reported_series", "benchmarks")}
    finally:
        con.close()


def test_every_published_cell_equals_scores_json(use_published):
    """Every agent and baseline row, every base model, all 7 benchmarks: equal to the site's scores.json."""
    checked = 0
    for model in ("Qwen3-1.7B-Base", "Qwen3-4B-Base", "SmolLM3-3B-Base", "gemma-3-4b-pt"):
        board = selectors.leaderboard(base_model=model)
        rows = {r.key: r for r in board.rows}
        for site_key, per_model in SCORES["modelBenchmarkData"].items():
            row = rows[KEY.get(site_key, site_key)]
            for benchmark, cell in per_model[model].items():
                assert round(100 * row.cells[benchmark].score, 2) == pytest.approx(cell["value"], abs=1e-9), (site_key, model, benchmark)
                reasons = [r for _, r in row.cells[benchmark].fallbacks]
                # The site marks not_stored and error; we also mark "not avl." (agent never finished).
                expected = [cell["fallbackType"]] if cell["fallbackType"] else []
                assert reasons == expected or (not expected and reasons == ["not_available"]), (site_key, model, benchmark)
                checked += 1
    assert checked == 26 * 4 * 7
    kimi = {r.key: r for r in selectors.leaderboard(base_model="gemma-3-4b-pt").rows}["kimi-k2"]
    assert kimi.cells["aime2025"].fallbacks == [("Gemma-3-4B", "not_available")]
    assert "the agent never finished" in kimi.cells["aime2025"].fallback_note


def test_headline_numbers_match_the_published_leaderboard(use_published):
    rows = {r.key: r for r in selectors.leaderboard().rows}
    assert round(100 * rows["opus-4.6"].average, 1) == 23.2
    assert round(100 * rows["opus-4.6"].std, 1) == 1.8
    assert round(100 * rows["instruct"].average, 1) == 51.1
    assert round(100 * rows["base-zeroshot"].average, 1) == 7.5
    assert round(100 * rows["base-fewshot"].average, 1) == 18.1
    for site_key, published in SCORES["aggregatedScores"].items():
        assert 100 * rows[site_key].average == pytest.approx(published["avg"], abs=0.005)
        assert 100 * rows[site_key].std == pytest.approx(published["std"], abs=0.005)
        assert rows[site_key].runs == published["n"] == 3


def test_paper_figure_1_values_and_order(use_published):
    """fig1_leaderboard.csv: the paper's leaderboard, percent with one decimal."""
    names = {"Official Instruct Models": "instruct", "Base Model": "base-zeroshot", "Opus 4.6": "opus-4.6",
             "Gemini 3.1 Pro": "gemini-3.1-pro", "GPT-5.2": "gpt-5.2", "GPT 5.4 (High)": "gpt-5.4-high",
             "GPT-5.1 Codex Max": "gpt-5.1-codex-max", "Gemini 3 Pro": "gemini-3-pro",
             "GPT 5.3 Codex (High)": "gpt-5.3-codex-high", "GPT-5.2 Codex": "gpt-5.2-codex", "Opus 4.5": "opus-4.5",
             "Sonnet 4.6": "sonnet-4.6", "GLM-5": "glm-5", "Sonnet 4.5": "sonnet-4.5"}
    rows = {r.key: r for r in selectors.leaderboard().rows}
    lines = (DEFAULT_PUBLISHED_DIR / "paper-plots/data/fig1_leaderboard.csv").read_text().splitlines()[1:]
    for line in lines:
        method, avg, std = line.split(",")
        row = rows[names[method]]
        assert f"{100 * row.average:.1f}" == avg, method
        assert (f"{100 * row.std:.1f}" if row.std is not None else "") == std, method


def test_ranks_and_reference_rows(use_published):
    board = selectors.leaderboard()
    ranked = [r for r in board.rows if r.rank]
    assert [r.key for r in ranked[:3]] == ["opus-4.6-1m", "opus-4.6", "gemini-3.1-pro"]
    assert [r.rank for r in ranked] == list(range(1, 24))
    assert {r.key for r in board.rows if r.rank is None} == {"instruct", "base-zeroshot", "base-fewshot"}


def test_weights_are_stored_and_rederive_from_the_baselines(use_published):
    board = selectors.leaderboard()
    factors = json.loads((DEFAULT_PUBLISHED_DIR / "data/factors.json").read_text())
    assert {b.id: b.weight for b in board.benchmarks} == factors
    for benchmark, weight in factors.items():
        assert board.derived_weights[benchmark] == pytest.approx(weight, abs=1e-12)


def test_one_model_view_uses_that_models_cells(use_published):
    rows = {r.key: r for r in selectors.leaderboard(base_model="Qwen3-4B-Base").rows}
    # Qwen3-4B-Base zero-shot: weighted sum of its row in aggregated_baseline.csv.
    assert 100 * rows["base-zeroshot"].cells["gsm8k"].score == pytest.approx(41.85, abs=0.005)
    assert 100 * rows["glm-4.7"].cells["gsm8k"].score == pytest.approx(45.72, abs=0.005)
    with pytest.raises(selectors.UnknownBaseModel):
        selectors.leaderboard(base_model="Llama-3-8B")


def test_import_twice_changes_nothing(fresh_warehouse):
    import_published()
    first = _count(fresh_warehouse)
    call_command("import_published")
    assert _count(fresh_warehouse) == first == {
        # 22 times from the website's data + Sonnet 4.5's from the paper's figure 2; 12 + 3 + 3 ablation points.
        "agents": 26, "reported_cells": 26 * 28, "reported_scores": 11, "reported_times": 23, "reported_series": 18,
        "benchmarks": 7}


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "published"
    shutil.copytree(DEFAULT_PUBLISHED_DIR, target)
    return target


def test_malformed_value_is_rejected_with_file_and_line_and_stored_data_kept(fresh_warehouse, tmp_path):
    import_published()
    before = _count(fresh_warehouse)
    bad = _copy(tmp_path)
    path = bad / "data" / "aggregated_avg_Opus-4.6.csv"
    lines = path.read_text().splitlines()
    lines[2] = lines[2].replace(lines[2].split(",")[3], "0.2x", 1)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(PublishedDataError, match=r"aggregated_avg_Opus-4\.6\.csv:3: column 'bfcl': '0\.2x' is not a number"):
        import_published(directory=bad)
    assert _count(fresh_warehouse) == before
    with pytest.raises(CommandError, match=r"aggregated_avg_Opus-4\.6\.csv:3"):
        call_command("import_published", str(bad))


def test_value_out_of_range_and_missing_file(fresh_warehouse, tmp_path):
    bad = _copy(tmp_path)
    path = bad / "data" / "aggregated_baseline.csv"
    lines = path.read_text().splitlines()
    lines[5] = lines[5].replace(lines[5].split(",")[5], "51.3")
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(PublishedDataError, match=r"aggregated_baseline\.csv:6: column 'gsm8k': 51\.3 is not a fraction"):
        import_published(directory=bad)
    (bad / "data" / "time_aggregated.csv").unlink()
    shutil.copy(DEFAULT_PUBLISHED_DIR / "data" / "aggregated_baseline.csv", path)
    with pytest.raises(PublishedDataError, match=r"time_aggregated\.csv: file not found"):
        import_published(directory=bad)
    with warehouse.connect() as con:
        assert con.execute("SELECT count(*) FROM reported_cells").fetchone()[0] == 0
