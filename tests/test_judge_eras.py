"""Every judge era and every case of issue 26 (tests/judge_eras_tree.py), cell by cell, under each judging rule,
against values worked out by hand; where upstream is followed, the value is upstream's (named below: new_judge_v2's
scripts/aggregate_contamination.py reads judge_result.json only, ERR when missing, IMPORTANT ERR when a key is not
a JSON boolean); where it is not, the test names the difference (README "Judging rules: each case").

Hand computation, view Qwen3-1.7B (one base model): a method's metric is ``ALL_BASE + sum of w_t x (x_t - 10)`` over
its cells that do not fall back (every fallback cell is the tree's 0.10); percent.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests import judge_eras_tree as eras
from traces import services
from tests.results_tree import A, B
from tests.test_upstream_rules import (ALL_BASE, W_AIME, W_ARENA, W_BFCL, W_GPQA, W_GSM8K)

pytestmark = pytest.mark.django_db(transaction=True)

# Per benchmark of the JUDGES method on Qwen3-1.7B: the cell's value (percent) under era, any, majority, ignore.
CELLS = {
    "aime2025": (10, 10, 50, 50),          # era: no judge_result.json = ERR (upstream); any: Kimi; majority: 1 of 2
    "arenahardwriting": (10, 60, 60, 60),  # era: "false" is no boolean = IMPORTANT ERR (upstream); judges: clean
    "bfcl": (70, 10, 70, 70),              # era: judge_result.json over the txt (new_judge_v2); any: the txt flag
    "gpqamain": (40, 10, 40, 40),          # era: v1.1, gpt5_4 alone; any: Kimi; majority: 1 of 2
    "gsm8k": (10, 10, 10, 80),             # both judges flag
    "healthbench": (10, 10, 10, 10),       # NaN is no score: the base model (difference: upstream NaN)
    "humaneval": (10, 10, 10, 10),         # 1.5 is no score: the base model (difference: upstream 150)
}
WEIGHTS = {"aime2025": W_AIME, "arenahardwriting": W_ARENA, "bfcl": W_BFCL, "gpqamain": W_GPQA, "gsm8k": W_GSM8K}
RULES = ("era", "any", "majority", "ignore")
# The same sums written out: era 10 + 60 W_BFCL + 30 W_GPQA; any 10 + 50 W_ARENA; majority 10 + 40 W_AIME +
# 50 W_ARENA + 60 W_BFCL + 30 W_GPQA; ignore that + 70 W_GSM8K.
METRIC_A = {
    "era": ALL_BASE + 60 * W_BFCL + 30 * W_GPQA,
    "any": ALL_BASE + 50 * W_ARENA,
    "majority": ALL_BASE + 40 * W_AIME + 50 * W_ARENA + 60 * W_BFCL + 30 * W_GPQA,
    "ignore": ALL_BASE + 40 * W_AIME + 50 * W_ARENA + 60 * W_BFCL + 30 * W_GPQA + 70 * W_GSM8K,
}
# Qwen3-4B: aime2025 30 under every rule (the later attempt by number, clean); the other two models all fall back.
METRIC_B = ALL_BASE + 20 * W_AIME


@pytest.fixture(scope="module")
def _eras_warehouse(tmp_path_factory) -> Path:
    from django.conf import settings

    from leaderboard.services import import_published
    from ptbsite import warehouse
    from ingest.tree import ingest_tree

    folder = tmp_path_factory.mktemp("judge-eras")
    previous = settings.PTB_WAREHOUSE
    settings.PTB_WAREHOUSE = str(folder / "warehouse.duckdb")
    warehouse.reset_migration_cache()
    try:
        import_published()
        report = ingest_tree(root=eras.write_tree(folder / "results"), synthetic=False)
    finally:
        settings.PTB_WAREHOUSE = previous
    assert report.failed == 0, report.problems
    return folder / "warehouse.duckdb"


@pytest.fixture
def eras_tree(_eras_warehouse, settings):
    from ptbsite import warehouse

    settings.PTB_WAREHOUSE = str(_eras_warehouse)
    warehouse.reset_migration_cache()
    return _eras_warehouse


def _run(benchmark: str, model: str = A, cluster: int | None = None):
    from tests.results_tree import HF
    from traces import layout, selectors

    if cluster is None:
        cluster = 17800000 + list(eras.CASES).index(benchmark)
    return selectors.get_run(layout.run_id(eras.JUDGES, f"{benchmark}_{HF[model].replace('/', '_')}_{cluster}"))


def test_each_case_reads_by_its_eras_rule(eras_tree):
    from traces.verdicts import flags_under

    expected_rule = {"aime2025": "judge_result_missing", "arenahardwriting": "judge_result", "bfcl": "judge_result",
                     "gpqamain": "judgement_json", "gsm8k": "judge_result", "healthbench": "txt", "humaneval": "txt"}
    for benchmark, values in CELLS.items():
        run = _run(benchmark)
        assert run.verdict_rule.id == expected_rule[benchmark], benchmark
        for rule, value in zip(RULES, values, strict=True):
            flags = flags_under(run.verdicts, rule)
            falls_back = any(flags.values()) or run.score is None
            assert falls_back == (value == 10), (benchmark, rule, flags)
    # Each judge's answer is stored per judge, with its own words.
    aime = _run("aime2025")
    said = {(v.judge, v.kind): (v.value, v.text) for v in aime.verdicts}
    assert said[("kimi", "contamination")] == ("flagged", "contamination: looked at train.py")
    assert said[("gpt5_4", "contamination")] == ("clean", "contamination: looked at train.py")
    assert aime.flags == {"contamination": "judge_error", "disallowed_model": "judge_error",
                          "disallowed_api_usage": None}
    arena = _run("arenahardwriting")
    (bad,) = [v for v in arena.verdicts if v.judge == "aggregate" and v.kind == "contamination"]
    assert (bad.value, bad.note) == ("malformed", "contamination is 'false', not a boolean")


def test_cluster_ids_by_number_not_as_strings(eras_tree):
    """Difference (README): new_judge_v2's aggregate_contamination.py compares the ids as strings and reads the
    older attempt's flagged judge_result.json ("9999999" > "10000000"); ours takes the later attempt by number for
    score and verdict alike, as qol_multigpu does."""
    old, new = _run("aime2025", B, 9999999), _run("aime2025", B, 10000000)
    assert (old.is_latest, old.flags["contamination"]) == (False, "flagged")
    assert (new.is_latest, new.flags["contamination"], 100 * new.score) == (True, None, pytest.approx(30.0))


@pytest.mark.parametrize("rule", RULES)
def test_the_leaderboard_rows_match_the_hand_computation(eras_tree, client, rule):
    query = "" if rule == "era" else f"&verdicts={rule}"
    board = client.get(f"/api/leaderboard?source=runs&base_model={A}{query}").json()
    assert board["verdicts"] == rule and board["reviews"] is True
    rows = {r["key"]: r for r in board["rows"] if r["source"] == "runs"}
    judges = rows[eras.JUDGES]
    assert judges["average"] == pytest.approx(METRIC_A[rule], abs=1e-9)
    for benchmark, values in CELLS.items():
        assert judges["scores"][benchmark] == pytest.approx(values[RULES.index(rule)], abs=1e-9), benchmark
    every = {r["key"]: r for r in client.get(f"/api/leaderboard?source=runs{query}").json()["rows"]
             if r["source"] == "runs"}
    assert every[eras.JUDGES]["average"] == pytest.approx((METRIC_A[rule] + METRIC_B + 2 * ALL_BASE) / 4, abs=1e-9)


def test_an_agent_with_one_of_its_two_methods_keeps_its_row(eras_tree, client):
    """Difference (README): qol_multigpu's aggregate.py skips an agent whose methods are not all there; ours shows
    the row with the one method (runs 1, no std): GPT-5.1 Codex Max (Low), aime2025 30 on Qwen3-1.7B."""
    rows = {r["key"]: r for r in client.get("/api/leaderboard?source=runs").json()["rows"] if r["source"] == "runs"}
    low = rows[eras.CODEXLOW_KEY]
    assert (low["runs"], low["std"]) == (1, None)
    assert low["average"] == pytest.approx(ALL_BASE + 20 * W_AIME / 4, abs=1e-9)
    assert low["scores"]["aime2025"] == pytest.approx(10 + 20 / 4, abs=1e-9)


def test_a_score_outside_0_1_or_nan_falls_back(eras_tree):
    """Difference (README): upstream counts metrics.json's accuracy as it is (NaN makes the average NaN, 1.5 adds
    150); ours stores no score and names the problem, so the cell takes the base model's."""
    for benchmark in ("healthbench", "humaneval"):
        run = _run(benchmark)
        assert run.score is None and run.state != "scored", benchmark


def test_the_run_page_shows_each_judge_per_question_and_the_rule(eras_tree, client):
    run = _run("gsm8k")
    page = client.get(f"/runs/{run.id}/").content.decode()
    twin = client.get(f"/api/runs/{run.id}").json()
    assert twin["verdict_rule"]["id"] == "judge_result"
    assert 'data-rule="judge_result"' in page and "aggregate_contamination.py" in page
    contamination = [v for v in twin["judge_panel"] if v["kind"] == "contamination"]
    assert [(v["judge"], v["value"], v["counts"]) for v in contamination] == [
        ("aggregate", "flagged", True), ("gpt5_4", "flagged", False), ("kimi", "flagged", False)]
    assert contamination[0]["combines"] is True  # its justification is the judges' words: printed once
    section = page[page.index('id="question-contamination"'):page.index('id="question-disallowed_model"')]
    assert section.count("contamination: looked at train.py") == 2  # gpt5_4's and kimi's, not the aggregate's
    assert [q["kind"] for q in twin["judge_questions"]][:3] == ["contamination", "disallowed_model",
                                                                "disallowed_api_usage"]


def test_rank_change_against_the_default_view(eras_tree, client):
    """Qwen3-1.7B: the judge-era method leads under the era's rule (21.2 vs Codex Max Low's 10 + 20 W_AIME =
    14.53); under ``any`` it scores 10 + 50 W_ARENA = 14.52 and falls behind: rank change -1 and +1."""
    def ranks(query: str) -> dict[str, tuple[int, int | None]]:
        rows = client.get(f"/api/leaderboard?source=runs&base_model={A}{query}").json()["rows"]
        return {r["key"]: (r["rank"], r["rank_change"]) for r in rows if r["source"] == "runs"}

    assert ranks("") == {eras.JUDGES: (1, None), eras.CODEXLOW_KEY: (2, None)}
    assert ranks("&verdicts=any") == {eras.JUDGES: (2, -1), eras.CODEXLOW_KEY: (1, 1)}
    assert ranks("&verdicts=majority") == {eras.JUDGES: (1, 0), eras.CODEXLOW_KEY: (2, 0)}
    page = client.get(f"/?source=runs&base_model={A}&verdicts=any").content.decode()
    assert 'id="judging-notice"' in page and "flagged when any of the run&#x27;s judges flags" in page
    assert '<td class="num rank-change">-1</td>' in page and 'data-verdicts="any"' in page


def test_reviewers_overrides_on_top_unless_reviews_0(eras_tree, client):
    """A reviewer clears gsm8k's contamination (both judges flagged it): with reviews the cell counts its 80
    under era, any and majority; with ``reviews=0`` it falls back again. ``flags=ignore`` is the raw view:
    ``verdicts=ignore&reviews=0``."""
    from datetime import datetime

    from ptbsite import warehouse

    run = _run("gsm8k")
    with warehouse.connect() as con:
        con.execute("INSERT INTO verdict_overrides (run_id, kind, flagged, reason, reviewer, created_at) "
                    "VALUES (?, 'contamination', false, 'the flagged file was the train split', 'reviewer', ?)",
                    [run.id, datetime(2026, 11, 1)])
        services.refresh_latest_runs(con, run_ids=[run.id])  # as traces.services.override_verdict does
    try:
        for rule in ("era", "any", "majority", "ignore"):
            for reviews, gsm8k in (("1", 80), ("0", CELLS["gsm8k"][RULES.index(rule)])):
                board = client.get(f"/api/leaderboard?source=runs&base_model={A}&verdicts={rule}"
                                   f"&reviews={reviews}").json()
                row = next(r for r in board["rows"] if r["key"] == eras.JUDGES)
                assert row["scores"]["gsm8k"] == pytest.approx(gsm8k, abs=1e-9), (rule, reviews)
                expected = METRIC_A[rule] + (70 * W_GSM8K if (gsm8k == 80) != (CELLS["gsm8k"][RULES.index(rule)] == 80)
                                             else 0)
                assert row["average"] == pytest.approx(expected, abs=1e-9), (rule, reviews)
        alias = client.get(f"/api/leaderboard?source=runs&base_model={A}&flags=ignore").json()
        raw = client.get(f"/api/leaderboard?source=runs&base_model={A}&verdicts=ignore&reviews=0").json()
        assert alias["rows"] == raw["rows"] and (alias["verdicts"], alias["reviews"]) == ("ignore", False)
        usage = client.get("/api/plots/usage-vs-score?verdicts=ignore&reviews=0").json()
        every = {r["key"]: r for r in raw["rows"]}
        assert every  # the twin of the plot scores the same rows (average view)
        runs_avg = {r["key"]: r["average"] for r in client.get(
            "/api/leaderboard?source=runs&verdicts=ignore&reviews=0").json()["rows"] if r["source"] == "runs"}
        assert {p["key"]: p["score"] for p in usage["points"]} == pytest.approx(runs_avg, abs=1e-9)
    finally:
        with warehouse.connect() as con:
            con.execute("DELETE FROM verdict_overrides WHERE run_id = ?", [run.id])
            services.refresh_latest_runs(con, run_ids=[run.id])


UPSTREAM_MIRROR = Path(os.environ.get("PTB_UPSTREAM_MIRROR", "/work/.mirror/aisa-group+PostTrainBench/repo"))
# new_judge_v2's scripts/aggregate_contamination.py on the judge-era method, by hand from its code: judge_result.json
# missing -> "C:ERR M:ERR"; a key that is no JSON boolean -> "IMPORTANT ERR"; flags as "C"/"M"/"MC"; clean "".
UPSTREAM_CELLS = {
    ("aime2025", "Qwen_Qwen3-1.7B-Base"): "C:ERR M:ERR",
    ("arenahardwriting", "Qwen_Qwen3-1.7B-Base"): "C:IMPORTANT ERR",
    ("bfcl", "Qwen_Qwen3-1.7B-Base"): "",
    ("gsm8k", "Qwen_Qwen3-1.7B-Base"): "C",
    ("aime2025", "Qwen_Qwen3-4B-Base"): "C",  # "9999999" > "10000000": the older attempt's verdict
}


@pytest.mark.skipif(not (UPSTREAM_MIRROR / "HEAD").is_file(), reason="no local mirror of aisa-group/PostTrainBench "
                    "(PTB_UPSTREAM_MIRROR, a bare git mirror; scripts/compare_with_upstream.py)")
def test_new_judge_v2s_own_aggregation_on_the_same_tree(eras_tree, tmp_path):
    """Upstream's own code on this tree: new_judge_v2's aggregate_contamination.py (taken with ``git archive`` from
    a local mirror into a temporary folder) gives the hand-computed cells above, and each cell of the new_judge_v2
    era (rules judge_result, judge_result_missing) falls back here exactly when it does there, but the one kept
    difference (README: cluster ids compared as strings)."""
    import csv
    import shutil
    import subprocess
    import sys

    from tests.results_tree import HF
    from traces import selectors

    archive = subprocess.run(["git", "-C", str(UPSTREAM_MIRROR), "archive", "new_judge_v2",
                              "scripts/aggregate_contamination.py"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tmp_path)], input=archive, check=True)
    tree = eras.write_tree(tmp_path / "tree")
    only = tmp_path / "method"
    shutil.copytree(tree / eras.JUDGES, only / eras.JUDGES)
    subprocess.run([sys.executable, "aggregate_contamination.py"], cwd=tmp_path / "scripts", check=True,
                   capture_output=True, env={**os.environ, "POST_TRAIN_BENCH_RESULTS_DIR": str(only)})
    with open(only / f"contamination_{eras.JUDGES}.csv") as f:
        theirs = {(bench, row["model"]): cell for row in csv.DictReader(f) for bench, cell in row.items()
                  if bench != "model"}
    nj2 = {}
    for run in selectors.list_runs(limit=None, agent=eras.JUDGES, latest_only=True)[0]:
        if run.verdict_rule and run.verdict_rule.id in ("judge_result", "judge_result_missing"):
            nj2[(run.benchmark, HF[run.base_model].replace("/", "_"))] = run
    assert {key: theirs[key] for key in nj2} == UPSTREAM_CELLS
    for key, run in nj2.items():
        falls_back = any(run.flags.values())
        if key == ("aime2025", "Qwen_Qwen3-4B-Base"):
            assert not falls_back  # the kept difference: the later attempt by number, clean
        else:
            assert falls_back == (theirs[key] != ""), key
