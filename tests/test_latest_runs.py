"""``latest_runs`` (migration 0021): what the pages over a suite's latest runs read, kept at write time (issue 24).

Each write path that changes a row's inputs replaces the row in its own transaction
(``traces.services.refresh_latest_runs``): after each, the table equals its definition, the view
``latest_run_rows``, and holds the new value (a path that forgot would leave the old one). A warehouse stored before
the migration gets the table filled by it. The pages' reads from the table equal what the base tables give when
computed on read (the queries the pages ran before the table, kept here as the reference).
"""
from __future__ import annotations

import importlib
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from ptbsite import warehouse
from traces import services
from traces.selectors import read_latest_cells, read_tree_baselines
from traces.selectors.runs import AGENT_RUN, SCORE_SQL, agent_display, verdict_outcome, verdicts_of
from traces.verdicts import Verdict
from traces.vocabulary import METHOD_FACETS, PHASES, overoptimism

analysis_module = importlib.import_module("traces.selectors.analysis")
SUITE = "posttrainbench"


@pytest.fixture
def lake(export_warehouse: Path) -> Path:
    """A copy of the session's demo warehouse (the demo tree ingested) that the test may write (conftest)."""
    return export_warehouse


def stored() -> list[tuple]:
    """(rows of latest_runs, rows of its definition), each sorted."""
    with warehouse.connect() as con:
        table = con.execute("SELECT * FROM latest_runs").fetchall()
        view = con.execute("SELECT * FROM latest_run_rows").fetchall()
    return sorted(table, key=repr), sorted(view, key=repr)


def row_of(run_id: str) -> dict | None:
    with warehouse.connect() as con:
        cur = con.execute("SELECT * FROM latest_runs WHERE run_id = ?", [run_id])
        found = cur.fetchall()
        names = [d[0] for d in cur.description]
    assert len(found) <= 1
    return dict(zip(names, found[0])) if found else None


def a_latest_run() -> str:
    with warehouse.connect() as con:
        return con.execute(f"SELECT r.id FROM runs r WHERE r.suite = ? AND r.is_latest AND {AGENT_RUN} "
                           "AND r.state = 'scored' ORDER BY r.id LIMIT 1", [SUITE]).fetchone()[0]


def test_the_ingest_fills_one_row_per_latest_run(lake):
    table, view = stored()
    assert table == view
    with warehouse.connect() as con:
        latest = con.execute("SELECT count(*) FROM runs WHERE is_latest").fetchone()[0]
        superseded = con.execute("SELECT count(*) FROM runs WHERE NOT is_latest").fetchone()[0]
    assert len(table) == latest > 0 and superseded > 0  # the demo tree has retries: only their latest has a row


def test_a_newer_retry_replaces_its_cells_row(tmp_path: Path, fresh_warehouse, demo_tree):
    """An ingest batch holding a later attempt of a stored cell: the cell's row becomes the new run's."""
    from ingest.tree import ingest_tree

    root = tmp_path / "results"
    shutil.copytree(demo_tree.root, root, symlinks=True)
    ingest_tree(root=root)
    with warehouse.connect() as con:
        method, run_dir, old_id, benchmark, model = con.execute(
            f"SELECT r.method, r.run_dir, r.id, r.benchmark, r.base_model FROM runs r WHERE r.is_latest AND "
            f"{AGENT_RUN} ORDER BY r.id LIMIT 1").fetchone()
    prefix, cluster = run_dir.rsplit("_", 1)
    shutil.copytree(root / method / run_dir, root / method / f"{prefix}_{int(cluster) + 1}", symlinks=True)
    ingest_tree(root=root)
    table, view = stored()
    assert table == view
    assert row_of(old_id) is None
    cell = [r for r in table if (r[2], r[3], r[4]) == (method, benchmark, model)]
    assert len(cell) == 1 and cell[0][1] != old_id
    with warehouse.connect() as con:  # the stored method's row replaced, once (the writer deletes stored ones only)
        assert con.execute("SELECT count(*) = count(DISTINCT id) FROM methods").fetchone()[0]


def test_a_reruns_evaluation_updates_the_score(lake):
    run_id = a_latest_run()
    services.add_evaluation(run_id=run_id, accuracy=0.875, metrics={"accuracy": 0.875}, provenance={"by": "test"},
                            evaluation_id="rerun-latest-runs")
    assert row_of(run_id)["score"] == 0.875
    table, view = stored()
    assert table == view


def test_an_exploratory_rerun_is_no_score_but_the_newest_accuracy(lake):
    run_id = a_latest_run()
    before = row_of(run_id)["score"]
    services.add_evaluation(run_id=run_id, accuracy=0.125, metrics={}, provenance={}, evaluation_id="rerun-x",
                            exploratory="2 samples")
    row = row_of(run_id)
    assert (row["score"], row["newest_accuracy"]) == (before, 0.125)
    with warehouse.connect() as con:  # the run's score as every other page reads it
        assert con.execute(f"SELECT {SCORE_SQL} FROM runs r WHERE r.id = ?", [run_id]).fetchone()[0] == before


def test_a_reviewers_override_updates_the_overrides(lake):
    run_id = a_latest_run()
    services.override_verdict(run_id=run_id, kind="contamination", flagged=True, reason="seen", reviewer="alice")
    services.override_verdict(run_id=run_id, kind="contamination", flagged=False, reason="no", reviewer="bob")
    assert json.loads(row_of(run_id)["overrides"]) == [{"kind": "contamination", "flagged": True},
                                                       {"kind": "contamination", "flagged": False}]
    with warehouse.connect() as con:
        cell = next(c for c in read_latest_cells(con, SUITE) if c.run_id == run_id)
    assert cell.overridden and cell.overrides == {"contamination": False}
    table, view = stored()
    assert table == view


def test_a_rerun_judge_updates_the_verdicts(lake):
    run_id = a_latest_run()
    services.store_judge_rerun(run_id=run_id, verdicts=[
        Verdict("gpt5_4", "rerun", "judgement_json", "contamination", "flagged", True, "copied", None, None)])
    verdicts = json.loads(row_of(run_id)["verdicts"])
    assert {"judge": "gpt5_4", "attempt": "rerun", "era": "judgement_json", "kind": "contamination",
            "value": "flagged", "flagged": True} in verdicts
    table, view = stored()
    assert table == view


def test_a_reindex_of_facets_updates_them(lake):
    from ingest.reindex import reindex

    run_id = a_latest_run()
    with warehouse.connect() as con:  # stale facets, as a rule change leaves them
        con.execute("INSERT INTO facets VALUES (?, 'ppo', 'stale', NULL, '0')", [run_id])
        services.refresh_latest_runs(con, run_ids=[run_id])
    assert ",ppo," in row_of(run_id)["facets"]
    reindex(families=["facets"], force=True, run_ids=[run_id])
    assert ",ppo," not in (row_of(run_id)["facets"] or "")
    table, view = stored()
    assert table == view


def test_the_migration_fills_a_warehouse_stored_before_it(lake):
    expected, _ = stored()
    with warehouse.connect() as con:
        con.execute("DROP TABLE latest_runs")
        con.execute("DROP VIEW latest_run_rows")
        con.execute("DELETE FROM schema_migrations WHERE version = 21")
    warehouse.reset_migration_cache()
    table, view = stored()  # connecting migrates
    assert table == view == expected and table


def test_the_phase_columns_are_the_vocabularys_phases(lake):
    with warehouse.connect() as con:
        columns = {c[0] for c in con.execute("DESCRIBE latest_runs").fetchall()}
    assert {f"{p}_s" for p in PHASES} <= columns and "idle" in PHASES


def test_the_latest_cells_equal_those_computed_on_read(lake):
    """After writes of every kind, the leaderboard's cells equal what the base tables give (the three queries it
    read before latest_runs)."""
    run_id = a_latest_run()
    services.override_verdict(run_id=run_id, kind="disallowed_model", flagged=True, reason="r", reviewer="a")
    services.add_evaluation(run_id=run_id, accuracy=0.5, metrics={}, provenance={}, evaluation_id="rerun-c")
    with warehouse.connect() as con:
        got = [vars(c) for c in read_latest_cells(con, SUITE)]
        want = [vars(c) for c in _cells_on_read(con, SUITE)]
        trees = read_tree_baselines(con, SUITE)
        trees_on_read = con.execute(
            f"SELECT m.results_root, r.base_model, r.benchmark, r.id, {SCORE_SQL} FROM runs r JOIN methods m ON "
            "m.id = r.method JOIN base_models b ON b.suite = r.suite AND b.id = r.base_model WHERE r.suite = ? AND "
            "r.method = 'baseline_zeroshot' AND r.is_latest ORDER BY r.id", [SUITE]).fetchall()
    assert got == want and len(got) > 10 and any(c["overridden"] for c in got)
    assert sorted((t.results_root, m, b, t.run_ids[(m, b)], s) for t in trees.values()
                  for (m, b), s in t.scores.items()) == sorted(trees_on_read)


def test_the_analysis_equals_the_one_computed_on_read(lake):
    """The analysis' facts and per-agent tables equal those of the per-run reading it replaced (the facts
    aggregated from facets and phases, the tables summed run by run)."""
    with warehouse.connect() as con:
        facts = analysis_module.read_run_facts(con, SUITE)
        assert [_fact_tuple(f) for f in facts] == _facts_on_read(con, SUITE)
        got = analysis_module.read_analysis(con, SUITE)
    mix, calibration, time_use, by_method = _tables(facts)
    for tables, model, want in ((got.method_mix, analysis_module.MethodMix, mix),
                                (got.calibration, analysis_module.AgentCalibration, calibration),
                                (got.time_use, analysis_module.AgentTimeUse, time_use),
                                (got.score_by_method, analysis_module.MethodScore, by_method)):
        assert [t.model_dump() for t in tables] == [model(**d).model_dump() for d in want]
    assert got.run_count == len(facts) and got.synthetic_runs == sum(f.run.synthetic for f in facts)
    assert got.points == [analysis_module.CalibrationPoint(
        f.run.id, f.run.agent_key, f.run.agent, f.run.benchmark, f.run.base_model, f.self_score, f.verified, f.ratio,
        f.base_score) for f in facts if f.ratio is not None]
    assert got.points and any(t["runs_traced"] for t in time_use)


# --- the reads computed on read, as the pages made them before latest_runs ---

def _cells_on_read(con, suite: str) -> list:
    from traces.selectors import CellRun
    from ptbsite.suites import display_suite

    rows = con.execute(
        "SELECT r.id, r.method, m.agent_key, m.agent_name, m.scaffold, m.reasoning_effort, m.results_root, "
        f"r.benchmark, r.base_model, r.state, {SCORE_SQL}, r.time_taken_s, r.synthetic FROM runs r "
        f"JOIN methods m ON m.id = r.method WHERE r.suite = ? AND r.is_latest AND {AGENT_RUN} "
        "ORDER BY r.method, r.benchmark, r.base_model", [suite]).fetchall()
    patterns: dict[str, list[tuple]] = {}
    for row in con.execute("SELECT v.run_id, v.judge, v.attempt, v.era, v.kind, v.value, v.flagged FROM verdicts v "
                           "ORDER BY v.run_id, v.era, v.judge, v.attempt, v.kind").fetchall():
        patterns.setdefault(row[0], []).append(row[1:])
    overrides: dict[str, dict[str, bool]] = {}
    for run_id, kind, flagged in con.execute(
            "SELECT o.run_id, o.kind, o.flagged FROM verdict_overrides o ORDER BY o.created_at").fetchall():
        overrides.setdefault(run_id, {})[kind] = flagged
    shown = display_suite(suite)
    cells = []
    for run_id, method, key, agent, scaffold, effort, root, benchmark, model, state, score, taken, synthetic in rows:
        pattern = tuple(patterns.get(run_id, ()))
        chosen = overrides.get(run_id) or {}
        flags, _, _ = verdict_outcome(pattern, tuple(chosen.items()))
        cells.append(CellRun(
            run_id=run_id, method=method, agent_key=key,
            agent_name=(agent_display(shown, method, agent) if shown else agent) or agent or method,
            scaffold=scaffold, reasoning_effort=effort, benchmark=benchmark, base_model=model, state=state,
            accuracy=score, time_taken_s=taken, synthetic=synthetic, flags=dict(flags), overridden=bool(chosen),
            results_root=root or "", verdicts=verdicts_of(pattern), overrides=chosen))
    return cells


def _fact_tuple(f) -> tuple:
    return (f.run.id, f.run.agent_key, f.run.agent, f.run.benchmark, f.run.base_model, f.run.synthetic, f.run.score,
            f.run.budget_fraction, sorted(f.methods), f.self_score, f.verified, f.ratio, f.base_score, f.split,
            f.idle_gaps, f.timed)


def _facts_on_read(con, suite: str) -> list[tuple]:
    from ptbsite.suites import display_suite

    phase_sums = ", ".join(f"sum(p.end_s - p.start_s) FILTER (WHERE p.phase = '{p}')" for p in PHASES)
    methods_in = ", ".join(f"'{m}'" for m in METHOD_FACETS)
    rows = con.execute(f"""
        WITH latest AS (SELECT r.id, r.method, r.benchmark, r.base_model, r.synthetic, r.time_taken_s,
                               r.budget_hours, {SCORE_SQL} AS score
                        FROM runs r WHERE r.suite = ? AND r.is_latest AND {AGENT_RUN}),
        own AS (SELECT f.run_id, list(DISTINCT f.facet) FILTER (WHERE f.facet IN ({methods_in})) AS methods,
                       max(f.value_num) FILTER (WHERE f.facet = 'self_score') AS self_score
                FROM facets f JOIN latest l ON l.id = f.run_id GROUP BY f.run_id),
        timed AS (SELECT p.run_id, {phase_sums}, count(*) FILTER (WHERE p.phase = 'idle') AS idle
                  FROM phases p JOIN latest l ON l.id = p.run_id GROUP BY p.run_id)
        SELECT l.id, l.method, m.agent_key, m.agent_name, l.benchmark, l.base_model, l.synthetic, l.score,
               l.time_taken_s, l.budget_hours, o.methods, o.self_score, t.run_id IS NOT NULL, t.idle,
               t.* EXCLUDE (run_id, idle)
        FROM latest l JOIN methods m ON m.id = l.method LEFT JOIN own o ON o.run_id = l.id
        LEFT JOIN timed t ON t.run_id = l.id""", [suite]).fetchall()
    base = {(m, t): v for m, t, v in con.execute(
        "SELECT base_model, benchmark, value FROM reported_cells WHERE suite = ? AND agent = 'base-zeroshot'",
        [suite]).fetchall()}
    for m, t, v in con.execute(
            "SELECT r.base_model, r.benchmark, (SELECT e.accuracy FROM evaluations e WHERE e.run_id = r.id "
            f"ORDER BY e.created_at DESC LIMIT 1) FROM runs r WHERE r.suite = ? AND NOT ({AGENT_RUN}) "
            "AND r.is_latest", [suite]).fetchall():
        if v is not None:
            base.setdefault((m, t), v)
    shown = display_suite(suite)
    out = []
    for (run_id, method, key, stored_name, benchmark, model, synthetic, score, taken, budget, methods, own, timed,
         idle, *seconds) in sorted(rows, key=lambda row: ((row[3] or "").lower(), row[0])):
        name = (agent_display(shown, method, stored_name) if shown else stored_name) or method
        out.append((run_id, key, name, benchmark, model, synthetic, score,
                    None if taken is None or not budget else taken / (budget * 3600), sorted(set(methods or ())),
                    own, score, overoptimism(own, score), base.get((model, benchmark)),
                    dict(zip(PHASES, (s or 0.0 for s in seconds))), idle or 0, timed))
    return out


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _tables(facts) -> tuple[list, list, list, list]:
    """The analysis' tables summed run by run over the facts (as ``read_analysis`` computed them before)."""
    agents: dict[str, list] = {}
    for f in facts:
        agents.setdefault(f.run.agent_key, []).append(f)
    mix, calibration, time_use = [], [], []
    for key, items in agents.items():
        name = items[0].run.agent
        counts: Counter[str] = Counter()
        for f in items:
            counts.update(f.methods)
        mix.append({"key": key, "agent": name, "runs": len(items), "counts": {m: counts[m] for m in METHOD_FACETS}})
        rated = [f for f in items if f.ratio is not None]
        best = max(rated, key=lambda f: f.verified) if rated else None
        calibration.append({"key": key, "agent": name, "runs": len(rated),
                            "mean_ratio": _mean([f.ratio for f in rated]), "mean_self": _mean([f.self_score for f in rated]),
                            "mean_verified": _mean([f.verified for f in rated]),
                            "best_run": best.run.id if best else None, "best_ratio": best.ratio if best else None})
        timed = [f.run.budget_fraction for f in items if f.run.budget_fraction is not None]
        traced = [f for f in items if f.timed]
        time_use.append({"key": key, "agent": name, "runs": len(items), "runs_timed": len(timed),
                         "budget_fraction": _mean(timed), "runs_traced": len(traced),
                         "hours": {p: (_mean([f.split[p] / 3600 for f in traced]) or 0.0) for p in PHASES},
                         "idle_gaps": _mean([float(f.idle_gaps) for f in traced])})
    by_method = []
    for m in METHOD_FACETS:
        with_m = [f.verified for f in facts if f.verified is not None and m in f.methods]
        without_m = [f.verified for f in facts if f.verified is not None and m not in f.methods]
        by_method.append({"facet": m, "runs": len(with_m), "mean_score": _mean(with_m), "runs_without": len(without_m),
                          "mean_without": _mean(without_m)})
    return mix, calibration, time_use, by_method
