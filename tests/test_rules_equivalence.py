"""The facts the trace rules derive do not change when the way they are computed does (issue 15).

The fixtures under tests/fixtures/ were written by ``tests/analysis_snapshot.py`` with the rules as they were
*before* the single-pass scan (one regular expression per rule, calls classified twice): every facet, phase,
evidence mark and call phase of the demo tree (``make_demo_results --runs 12 --seed 12``), of the ~50 MB
10-hour Claude Code run (``--runs 12 --seed 1``), and of 2,000 seeded random episodes of rule trigger phrases.
Each test recomputes them with the current code and asserts equality, run by run and episode by episode.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.analysis_snapshot import fuzz_analysis, read, tree_analysis
from demo.tree import make_demo_results

FIXTURES = Path(__file__).parent / "fixtures"


def _assert_same(expected: dict, got: dict) -> None:
    assert sorted(got) == sorted(expected)
    for key in sorted(expected):
        for part in ("error", "facets", "phases", "evidence", "call_phases"):
            assert got[key].get(part) == expected[key].get(part), (key, part)


def test_demo_tree_facts_are_the_frozen_ones(demo_tree):
    expected = read(FIXTURES / "rules_demo_12_12.json.gz")
    got = tree_analysis(demo_tree.root)
    assert len(got) == 68
    assert sum(len(run["facets"]) for run in got.values()) == 121
    _assert_same(expected, got)


@pytest.mark.slow
def test_long_run_facts_are_the_frozen_ones(tmp_path: Path):
    report = make_demo_results(root=tmp_path / "results", runs=12, seed=1, long_run=True)
    expected = read(FIXTURES / "rules_long_run.json.gz")
    got = tree_analysis(report.root, only={report.long_run_dir})
    (run,) = got.values()
    assert len(run["call_phases"]) == 20777 and len(run["phases"]) == 3811
    _assert_same(expected, got)


def test_fuzz_corpus_facts_are_the_frozen_ones():
    frozen = read(FIXTURES / "rules_fuzz.json.gz")
    got = fuzz_analysis(frozen["episodes"], frozen["seed"])
    assert len(got) == 2000
    for i, (old, new) in enumerate(zip(frozen["analysis"], got)):
        for part in ("facets", "phases", "evidence", "call_phases"):
            assert new[part] == old[part], (i, part)
