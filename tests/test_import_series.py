"""The importer's paper-figure data: Sonnet 4.5's time from figure 2 and the ablations of figures 3-5."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from leaderboard.services import DEFAULT_PUBLISHED_DIR, PublishedDataError, import_published
from ptbsite import warehouse


def _series(series: str) -> list[tuple]:
    with warehouse.connect() as con:
        return con.execute(
            "SELECT label, agent, budget_hours, reasoning_effort, score, score_std, hours, hours_std, tokens, "
            "source_file FROM reported_series WHERE suite = 'posttrainbench' AND series = ? ORDER BY position",
            [series],
        ).fetchall()


def test_sonnet_45_time_comes_from_figure_2_with_its_source(use_published):
    with warehouse.connect() as con:
        rows = dict(
            (r[0], r[1:]) for r in con.execute("SELECT agent, hours, hours_std, runs, source_file FROM reported_times").fetchall()
        )
    assert rows["sonnet-4.5"] == (pytest.approx(4 + 11 / 60 + 11 / 3600), None, 1,
                                  "paper-plots/data/fig2_time_vs_performance.csv")
    # Agents the website's data has keep its numbers (fig2 rounds GPT-5.3 Codex (High) to 1:39:07).
    assert rows["gpt-5.3-codex-high"][0] == pytest.approx(1 + 39 / 60 + 9 / 3600)
    assert rows["gpt-5.3-codex-high"][3] == "data/time_aggregated.csv"
    assert rows["glm-5"][3] == "data/aggregated_time_overview.csv"
    assert len(rows) == 23


def test_time_budget_ablation_is_stored_as_fractions_with_agent_keys(use_published):
    rows = _series("time_budget")
    assert len(rows) == 12
    assert [(r[0], r[1], r[2]) for r in rows[:4]] == [("Claude Opus 4.5", "opus-4.5", b) for b in (1, 2, 5, 10)]
    assert {r[1] for r in rows} == {"opus-4.5", "gpt-5.1-codex-max", "gemini-3-pro"}
    assert rows[0][4] == pytest.approx(0.11841255902550873)
    assert rows[7][4] == pytest.approx(0.2016)  # GPT-5.1 Codex Max, 10 h
    assert all(r[9] == "paper-plots/data/fig3_time_budget_ablation.csv" for r in rows)


def test_reasoning_effort_and_model_size(use_published):
    effort = _series("reasoning_effort")
    assert [(r[0], r[1], r[3]) for r in effort] == [
        ("GPT-5.1 Codex Max", None, "low"), ("GPT-5.1 Codex Max", "gpt-5.1-codex-max", "medium"),
        ("GPT-5.1 Codex Max", None, "high")]
    medium = effort[1]
    assert medium[4:9] == (pytest.approx(0.202), pytest.approx(0.034), pytest.approx(4.053), pytest.approx(0.333), 964379)
    size = _series("model_size")
    assert [(r[0], r[1], round(r[4], 3)) for r in size] == [
        ("Haiku 4.5", None, 0.062), ("Sonnet 4.5", "sonnet-4.5", 0.099), ("Opus 4.5", "opus-4.5", 0.171)]


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "published"
    shutil.copytree(DEFAULT_PUBLISHED_DIR, target)
    return target


def _edit(path: Path, line: int, old: str, new: str) -> None:
    lines = path.read_text().splitlines()
    assert old in lines[line - 1]
    lines[line - 1] = lines[line - 1].replace(old, new, 1)
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(
    ("file", "line", "old", "new", "message"),
    [
        # fig3's Score is a fraction: a percent there is an error, not a silent x100.
        ("fig3_time_budget_ablation.csv", 3, "0.12356130425448703", "12.36",
         r"fig3_time_budget_ablation\.csv:3: column 'Score': 12\.36 is not a fraction"),
        ("fig3_time_budget_ablation.csv", 6, "GPT-5.1 Codex Max", "GPT-9", r"fig3_time_budget_ablation\.csv:6: unknown agent 'GPT-9'"),
        ("fig5_reasoning_effort.csv", 4, "High", "Extreme", r"fig5_reasoning_effort\.csv:4: unknown reasoning effort 'Extreme'"),
        ("fig5_reasoning_effort.csv", 2, "15.6", "156", r"fig5_reasoning_effort\.csv:2: column 'score': 156\.0 is not in"),
        ("fig4_perf_vs_size.csv", 3, "9.9", "n/a", r"fig4_perf_vs_size\.csv:3: column 'score': 'n/a' is not a number"),
        ("fig2_time_vs_performance.csv", 12, "4:11:11", "4h11", r"fig2_time_vs_performance\.csv:12: '4h11' is not a H:MM:SS"),
    ],
)
def test_malformed_figure_file_is_rejected_and_nothing_changes(fresh_warehouse, tmp_path, file, line, old, new, message):
    import_published()
    before = _series("time_budget")
    bad = _copy(tmp_path)
    _edit(bad / "paper-plots" / "data" / file, line, old, new)
    with pytest.raises(PublishedDataError, match=message):
        import_published(directory=bad)
    assert _series("time_budget") == before
