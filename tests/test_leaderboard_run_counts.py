"""A leaderboard row from runs says what its two counts count (issue 17: "Runs = 2" beside "7 ingested runs"):
Runs is the repeated runs of the whole suite, Source the ingested runs behind the row's cells, how many of them
scored, and the cells without one; on the hand-built tree of tests/test_leaderboard_from_runs.py."""
from __future__ import annotations

import re

import pytest

from leaderboard import selectors

from .test_leaderboard_from_runs import hand_tree  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db


def _rows(**kwargs) -> dict:
    return {r.key: r for r in selectors.leaderboard(source="runs", **kwargs).rows if r.source == "runs"}


def test_the_counts_of_a_row_from_runs_add_up(hand_tree):  # noqa: F811
    opus = _rows()["opus-4.6"]
    # Two seeds of 7 benchmarks x 4 base models. Seed 1's latest runs: gsm8k (scored), gpqamain (the retry,
    # scored), aime2025 (no metrics), bfcl (contamination flagged), humaneval (disallowed model flagged),
    # healthbench (never finished); seed 2: gsm8k (scored).
    assert (opus.runs, opus.n_cells, opus.n_runs, opus.n_scored) == (2, 56, 7, 3)
    assert opus.run_cells == {"per_run": 28, "scored": 3, "not_scored": 4, "no_run": 49}
    one_model = _rows(base_model="Qwen3-1.7B-Base")["opus-4.6"]
    assert (one_model.n_cells, one_model.n_runs, one_model.n_scored) == (14, 3, 3)  # 2 x 7: gsm8k x2, gpqamain


def test_the_source_cell_explains_runs_beside_ingested_runs(client, hand_tree):  # noqa: F811
    page = client.get("/?source=runs").content.decode()
    row = page.split('data-agent="opus-4.6" data-source="runs">', 1)[1].split("</tr>", 1)[0]
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    assert re.sub(r"<[^>]+>", "", cells[5]).strip() == "2"  # Runs
    source = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", cells[6])).strip()
    assert source.startswith("7 ingested runs for 56 cells (2 runs × 28): 3 scored, 4 flagged or not scored, "
                             "49 without a run")
    assert 'title="repeated runs (seeds) of the whole suite"' in page
    assert "(28 cells per run here: 7 benchmarks × 4 base models)" in page
    assert client.get("/api/leaderboard?source=runs").json()["rows"][0].keys() >= {"n_runs", "n_scored", "n_cells"}
