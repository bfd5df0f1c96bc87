"""The leaderboard computed from ingested runs, checked against hand computations (spec section 4).

Expected values are computed here from the published baselines and weights read straight from the shipped
files (not through the app), plus the few cells each test tree changes.
"""
from __future__ import annotations

import csv
import json
import statistics
from datetime import datetime
from pathlib import Path

import pytest

from leaderboard import selectors
from leaderboard.services import DEFAULT_PUBLISHED_DIR
from ptbsite import warehouse
from ptbsite.suites import load_suite
from traces import layout, services
from ingest.tree import ingest_tree

WEIGHTS = json.loads((DEFAULT_PUBLISHED_DIR / "data/factors.json").read_text())
MODELS = {"Qwen3-1.7B-Base": "Qwen/Qwen3-1.7B-Base", "Qwen3-4B-Base": "Qwen/Qwen3-4B-Base",
          "SmolLM3-3B-Base": "HuggingFaceTB/SmolLM3-3B-Base", "gemma-3-4b-pt": "google/gemma-3-4b-pt"}
with (DEFAULT_PUBLISHED_DIR / "data/aggregated_baseline.csv").open() as _f:
    BASE = {(row["model"], t): float(row[t]) for row in csv.DictReader(_f) for t in WEIGHTS if row["model"] in MODELS}
BASE_METRIC = statistics.mean(sum(WEIGHTS[t] * BASE[(m, t)] for t in WEIGHTS) for m in MODELS)


def method_metric(changed: dict[tuple[str, str], float]) -> float:
    """Percent metric of one method whose cells are all base-model fallbacks except ``changed``."""
    return 100 * (BASE_METRIC + sum(WEIGHTS[t] * (v - BASE[(m, t)]) for (m, t), v in changed.items()) / len(MODELS))


def write_run(root: Path, method: str, benchmark: str, model: str, cluster: int, *, accuracy: float | None = None,
              time_taken: str | None = "05:00:00", final_model: bool = True,
              contamination: str | None = "no contamination detected",
              disallowed: str | None = "only allowed use detected") -> str:
    """One run directory as the harness writes it (spec 1.3); returns the run id."""
    run_dir = root / method / f"{benchmark}_{layout.model_safe(MODELS[model])}_{cluster}"
    run_dir.mkdir(parents=True)
    (run_dir / "solve_out.txt").write_text("[2026-04-05T10:00:00Z] agent started\n")
    if time_taken:
        (run_dir / "time_taken.txt").write_text(time_taken + "\n")
    if final_model:
        (run_dir / "final_model").mkdir()
        (run_dir / "final_model" / "config.json").write_text("{}")
    if accuracy is not None:
        (run_dir / "metrics.json").write_text(json.dumps({"accuracy": accuracy, "stderr": 0.01}))
    if contamination is not None:
        (run_dir / "contamination_judgement.txt").write_text(contamination + "\n")
    if disallowed is not None:
        (run_dir / "disallowed_model_judgement.txt").write_text(disallowed + "\n")
    return layout.run_id(method, run_dir.name)


# Two of Opus 4.6's listed seeds (suite file, as upstream's HARDCODED_AGENT_MAP).
A, B = "claude_claude-opus-4-6_10h_run1_old_container", "claude_claude-opus-4-6_10h_run2"
ODD = "claude_non_api_my-model_v2_5h_2gpu_ablation_x"
ODD_CELLS = {("Qwen3-4B-Base", "humaneval"): 0.8, ("Qwen3-4B-Base", "gsm8k"): 0.9}


@pytest.fixture
def hand_tree(tmp_path: Path, fresh_warehouse):
    from leaderboard.services import import_published

    import_published()
    root = tmp_path / "results"
    ids = {
        "scored": write_run(root, A, "gsm8k", "Qwen3-1.7B-Base", 100, accuracy=0.5),
        "failed": write_run(root, A, "aime2025", "Qwen3-4B-Base", 101),  # model stored, no metrics: ERR
        "flagged": write_run(root, A, "bfcl", "SmolLM3-3B-Base", 102, accuracy=0.9,
                             contamination="contamination detected"),
        "overridden": write_run(root, A, "humaneval", "gemma-3-4b-pt", 103, accuracy=0.6,
                                disallowed="disallowed use detected"),
        "old": write_run(root, A, "gpqamain", "Qwen3-1.7B-Base", 104, accuracy=0.1),
        "retry": write_run(root, A, "gpqamain", "Qwen3-1.7B-Base", 204, accuracy=0.3),
        "unfinished": write_run(root, A, "healthbench", "Qwen3-4B-Base", 105, time_taken=None, accuracy=None),
        "seed2": write_run(root, B, "gsm8k", "Qwen3-1.7B-Base", 106, accuracy=0.7),
        "odd": write_run(root, ODD, "humaneval", "Qwen3-4B-Base", 107, accuracy=0.8),
        "odd2": write_run(root, ODD, "gsm8k", "Qwen3-4B-Base", 108, accuracy=0.9),
    }
    report = ingest_tree(root=root, synthetic=False)
    assert report.failed == 0 and report.stored == 10
    return ids


def _rows(**kwargs) -> dict[str, selectors.Row]:
    return {r.key: r for r in selectors.leaderboard(source="runs", **kwargs).rows if r.source == "runs"}


def test_hand_built_tree_matches_the_hand_computation(hand_tree):
    run_a = method_metric({("Qwen3-1.7B-Base", "gsm8k"): 0.5, ("Qwen3-1.7B-Base", "gpqamain"): 0.3})
    run_b = method_metric({("Qwen3-1.7B-Base", "gsm8k"): 0.7})
    rows = _rows()
    opus = rows["opus-4.6"]
    assert opus.runs == 2 and opus.n_runs == 7  # two seeds; the older gpqamain attempt does not count
    assert 100 * opus.average == pytest.approx(statistics.mean([run_a, run_b]), abs=1e-9)
    assert 100 * opus.std == pytest.approx(statistics.stdev([run_a, run_b]), abs=1e-9)
    assert opus.agent == "Opus 4.6" and opus.scaffold == "Claude Code"
    gsm8k = opus.cells["gsm8k"]
    expected_gsm8k = statistics.mean([(0.5 + sum(BASE[(m, "gsm8k")] for m in MODELS if m != "Qwen3-1.7B-Base")) / 4,
                                      (0.7 + sum(BASE[(m, "gsm8k")] for m in MODELS if m != "Qwen3-1.7B-Base")) / 4])
    assert 100 * gsm8k.score == pytest.approx(100 * expected_gsm8k, abs=1e-9)
    reasons = {(model, reason) for model, reason in opus.cells["aime2025"].fallbacks}
    assert ("Qwen3-4B (claude_claude-opus-4-6_10h_run1_old_container)", "error") in reasons
    assert ("SmolLM3-3B (claude_claude-opus-4-6_10h_run1_old_container)", "flagged") in opus.cells["bfcl"].fallbacks
    assert ("Gemma-3-4B (claude_claude-opus-4-6_10h_run1_old_container)", "flagged") in opus.cells["humaneval"].fallbacks
    assert ("Qwen3-4B (claude_claude-opus-4-6_10h_run1_old_container)", "not_available") in opus.cells["healthbench"].fallbacks
    assert ("Qwen3-1.7B (claude_claude-opus-4-6_10h_run2)", "missing") in opus.cells["aime2025"].fallbacks
    # The difference to the published Opus 4.6 row (23.16).
    assert 100 * opus.delta == pytest.approx(100 * opus.average - 23.162899943863483, abs=1e-6)
    # A method in no agent's list: its own agent, keyed by the method name, named after its model config and harness
    # agent.
    odd = rows[ODD]
    assert odd.agent == "my-model_v2 (claude_non_api)" and odd.runs == 1 and odd.std is None
    assert 100 * odd.average == pytest.approx(method_metric(ODD_CELLS), abs=1e-9)


def test_flag_blind_view_and_rank_change(hand_tree):
    raw_a = method_metric({("Qwen3-1.7B-Base", "gsm8k"): 0.5, ("Qwen3-1.7B-Base", "gpqamain"): 0.3,
                           ("SmolLM3-3B-Base", "bfcl"): 0.9, ("gemma-3-4b-pt", "humaneval"): 0.6})
    run_b = method_metric({("Qwen3-1.7B-Base", "gsm8k"): 0.7})
    odd = method_metric(ODD_CELLS)
    rows = _rows(apply_flags=False)
    assert 100 * rows["opus-4.6"].average == pytest.approx(statistics.mean([raw_a, run_b]), abs=1e-9)
    with_flags = _rows()
    # flags: odd first
    assert 100 * with_flags["opus-4.6"].average < 100 * with_flags[ODD].average == pytest.approx(odd, abs=1e-9)
    assert 100 * rows["opus-4.6"].average > odd  # flags ignored: Opus passes it
    assert rows["opus-4.6"].rank_change == 1 and rows[ODD].rank_change == -1


def test_an_override_changes_the_leaderboard(hand_tree):
    with warehouse.connect() as con:
        con.execute("INSERT INTO verdict_overrides (run_id, kind, flagged, reason, reviewer, created_at) "
                    "VALUES (?, 'disallowed_model', false, 'the downloaded model was the base model', 'reviewer', ?)",
                    [hand_tree["overridden"], datetime(2026, 11, 1)])
        services.refresh_latest_runs(con, run_ids=[hand_tree["overridden"]])  # as services.override_verdict does
    run_a = method_metric({("Qwen3-1.7B-Base", "gsm8k"): 0.5, ("Qwen3-1.7B-Base", "gpqamain"): 0.3,
                           ("gemma-3-4b-pt", "humaneval"): 0.6})
    run_b = method_metric({("Qwen3-1.7B-Base", "gsm8k"): 0.7})
    opus = _rows()["opus-4.6"]
    assert 100 * opus.average == pytest.approx(statistics.mean([run_a, run_b]), abs=1e-9)
    assert opus.overridden is True


def test_one_base_model_view(hand_tree):
    rows = _rows(base_model="Qwen3-1.7B-Base")
    per_method = [100 * (sum(WEIGHTS[t] * BASE[("Qwen3-1.7B-Base", t)] for t in WEIGHTS)
                         + WEIGHTS["gsm8k"] * (v - BASE[("Qwen3-1.7B-Base", "gsm8k")])
                         + (WEIGHTS["gpqamain"] * (0.3 - BASE[("Qwen3-1.7B-Base", "gpqamain")]) if seed == 1 else 0))
                  for seed, v in ((1, 0.5), (2, 0.7))]
    assert 100 * rows["opus-4.6"].average == pytest.approx(statistics.mean(per_method), abs=1e-9)


def test_api_source_toggle(client, hand_tree, db):
    published = client.get("/api/leaderboard").json()
    assert {r["source"] for r in published["rows"]} == {"published"}
    runs = client.get("/api/leaderboard?source=runs").json()
    agents = [r for r in runs["rows"] if r["kind"] == "agent"]
    assert {r["source"] for r in agents} == {"runs"} and {r["key"] for r in agents} == {"opus-4.6", ODD}
    both = client.get("/api/leaderboard?source=all&flags=ignore").json()
    assert {r["source"] for r in both["rows"] if r["kind"] == "agent"} == {"runs", "published"}
    assert client.get("/api/leaderboard?source=bogus").status_code == 422
    html = client.get("/?source=all").content.decode()
    assert "7 ingested runs" in html and "vs published" in html


def test_demo_tree_numbers_recomputed_from_the_generator(demo_ingested):
    """Independent recomputation from the generator's ground truth (states, scores, verdicts as files say)."""
    report, _, _ = demo_ingested
    suite = load_suite("posttrainbench")
    known = suite["published"]["agents"] + suite["agent_groups"]

    def agent_of(method: str) -> str:
        """The agent whose exact method list names the method, else the method itself (its own row)."""
        for agent in known:
            if method in agent["methods"]:
                return agent["key"]
        return method

    short = {hf: short for short, hf in MODELS.items()}
    methods: dict[str, dict] = {}
    for run in report.runs:
        if not run.is_latest:
            continue
        clean = run.contamination_verdict == "clean" and run.model_verdict == "clean"
        value = run.accuracy if (run.accuracy is not None and clean) else None
        if value is not None:
            methods.setdefault(run.method, {})[(short[run.base_model], run.benchmark)] = value
        else:
            methods.setdefault(run.method, {})
    by_agent: dict[str, list[float]] = {}
    for method, changed in methods.items():
        by_agent.setdefault(agent_of(method), []).append(method_metric(changed))
    rows = _rows()
    assert set(rows) == set(by_agent)
    for key, metrics in by_agent.items():
        assert 100 * rows[key].average == pytest.approx(statistics.mean(metrics), abs=1e-9), key
        assert rows[key].runs == len(metrics)
        assert rows[key].synthetic is True


def test_reingesting_an_unchanged_tree_regroups_its_methods(hand_tree, tmp_path):
    """A warehouse filled before the suite's method lists changed (here: Opus 4.6's seed stored under a glob-era
    key) gets the suite's current agent on the next ingest, though no run changed."""
    with warehouse.connect() as con:
        con.execute("UPDATE methods SET agent_key = 'claude_claude-opus-4-6_10h', agent_name = 'old' WHERE id = ?", [A])
    assert "claude_claude-opus-4-6_10h" in _rows()
    report = ingest_tree(root=tmp_path / "results", synthetic=False)
    assert (report.stored, report.unchanged) == (0, 10)
    rows = _rows()
    assert "claude_claude-opus-4-6_10h" not in rows and rows["opus-4.6"].runs == 2


def test_reingesting_an_unchanged_tree_writes_only_what_changed(hand_tree, tmp_path, monkeypatch):
    """The walk reads what is stored of the tree's methods at once: an unchanged tree whose suite did not change
    is re-ingested without a transaction (before: one per method, to refresh its agent), and one whose agents
    did writes them in one."""
    units = []
    real = warehouse.run_in_transaction
    monkeypatch.setattr(warehouse, "run_in_transaction", lambda work: units.append(work) or real(work))
    report = ingest_tree(root=tmp_path / "results", synthetic=False)
    assert (report.stored, report.unchanged, units) == (0, 10, [])
    with warehouse.connect() as con:
        for method in (A, B):
            con.execute("UPDATE methods SET agent_name = 'old' WHERE id = ?", [method])
    report = ingest_tree(root=tmp_path / "results", synthetic=False)
    assert (report.stored, report.unchanged, len(units)) == (0, 10, 1)
    with warehouse.connect() as con:
        assert con.execute("SELECT count(*) FROM methods WHERE agent_name = 'old'").fetchone()[0] == 0


@pytest.mark.parametrize("kind", ["file", "ducklake-sqlite"])
def test_the_latest_run_of_a_cell_follows_later_ingests(tmp_path, warehouse_factory, settings, kind):
    # A cell's latest run is its highest cluster id, whichever ingest stored it and in whatever order: the
    # writer recomputes the flags of every cell a batch touches (traces.services.write_runs).
    from ptbsite import warehouse
    from ingest.tree import ingest_tree

    settings.PTB_WAREHOUSE = warehouse_factory.make(kind)
    warehouse.reset_migration_cache()
    root = tmp_path / "results"

    def latest() -> dict[str, bool]:
        with warehouse.connect() as con:
            return dict(con.execute("SELECT id, is_latest FROM runs").fetchall())

    write_run(root, A, "gsm8k", "Qwen3-1.7B-Base", 100, accuracy=0.5)
    write_run(root, A, "aime2025", "Qwen3-1.7B-Base", 100, accuracy=0.1)
    assert ingest_tree(root=root).stored == 2
    assert set(latest().values()) == {True}
    newer = write_run(root, A, "gsm8k", "Qwen3-1.7B-Base", 200, accuracy=0.6)
    older = write_run(root, A, "gsm8k", "Qwen3-1.7B-Base", 50, accuracy=0.4)
    assert ingest_tree(root=root).stored == 2
    flags = latest()
    assert len(flags) == 4 and sum(flags.values()) == 2 and flags[newer] and not flags[older]
