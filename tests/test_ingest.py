"""Ingest of a generated results tree: counts, states, latest runs, verdicts, problems, evidence and redaction."""
from __future__ import annotations

import duckdb
import pytest

from traces import layout, selectors
from ingest.tree import ingest_tree


def _run_id(demo_run) -> str:
    method, run_dir = demo_run.run_dir.split("/")
    return layout.run_id(method, run_dir)


def test_every_run_is_stored_once_and_reingest_adds_nothing(demo_ingested):
    report, ingest, path = demo_ingested
    assert ingest.stored == len(report.runs) + len(report.baseline_runs)
    assert ingest.failed == 0
    con = duckdb.connect(str(path))
    try:
        before = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("runs", "steps", "verdicts")}
    finally:
        con.close()
    again = ingest_tree(root=report.root)
    assert (again.stored, again.unchanged, again.failed) == (0, ingest.stored, 0)
    con = duckdb.connect(str(path))
    try:
        after = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("runs", "steps", "verdicts")}
        assert con.execute("SELECT count(DISTINCT id) FROM runs").fetchone()[0] == before["runs"]
    finally:
        con.close()
    assert after == before
    assert "_aggregated" in report.ignored_dirs


def test_states_latest_flags_and_labels_match_the_generator(demo_ingested):
    report, _, _ = demo_ingested
    for demo in report.runs:
        run = selectors.get_run(_run_id(demo))
        assert run is not None, demo.run_dir
        assert run.state == demo.state, demo.run_dir
        assert run.is_latest == demo.is_latest, demo.run_dir
        assert run.synthetic is True
        assert run.benchmark == demo.benchmark
        assert run.base_model_hf == demo.base_model
        if demo.steps_planned:  # a trace with no agent events (CUDA failure) has no format to detect
            assert run.trace_format == demo.trace_format, demo.run_dir
        if demo.accuracy is not None:
            assert 100 * run.score == pytest.approx(100 * demo.accuracy)
        else:
            assert run.score is None
        if demo.hours is not None:
            assert run.time_taken_s == pytest.approx(demo.hours * 3600, abs=1)
        contamination = {v.value for v in run.verdicts if v.kind == "contamination" and v.attempt == "original"
                         and v.era != "judge_result" or (v.kind == "contamination" and v.era == "judge_result"
                                                          and demo.contamination_verdict != "missing")}
        assert demo.contamination_verdict in contamination, (demo.run_dir, contamination)
        flags = run.flags
        # Both ways: a clean run must not come out flagged ("no contamination detected" contains the flag text).
        assert (flags["contamination"] == "flagged") == demo.flagged_contamination, demo.run_dir
        assert (flags["disallowed_model"] == "flagged") == demo.flagged_model, demo.run_dir
        if demo.verdict_note == "manual_flip":
            assert flags["contamination"] is None  # the human's "no " counts as clean
        if demo.verdict_note in ("judge_crashed", "malformed"):
            assert "judge_error" in flags.values(), demo.run_dir


def test_the_judge_that_never_ran_says_so(demo_ingested):
    report, _, _ = demo_ingested
    crashed = next(r for r in report.runs if r.verdict_note == "judge_crashed")
    run = selectors.get_run(_run_id(crashed))
    missing = [v for v in run.verdicts if v.value == "missing"]
    assert {v.kind for v in missing} == {"contamination", "disallowed_model"}
    assert "produced no verdict" in missing[0].text


def test_broken_lines_are_reported_with_file_and_line(demo_ingested):
    report, _, _ = demo_ingested
    broken = [r for r in report.runs if r.broken_lines]
    assert broken
    for demo in broken:
        problems = selectors.run_texts(_run_id(demo)).problems
        for line in demo.broken_lines:
            assert any(f"solve_out.txt:{line}: broken JSON line" in p for p in problems), (demo.run_dir, problems)
        assert selectors.get_run(_run_id(demo)).step_count > 10  # the rest of the run still ingested


def test_claude_runs_carry_usage_and_tool_calls(demo_ingested):
    report, _, _ = demo_ingested
    for demo in report.runs:
        if demo.trace_format != "claude_code" or demo.steps_planned == 0:
            continue
        run = selectors.get_run(_run_id(demo))
        assert run.tokens_in and run.tokens_out, demo.run_dir
        calls = selectors.steps_page(run.id, kind="tool_call", limit=5000)
        assert calls.total == demo.steps_planned, demo.run_dir


def test_suspicious_traces_have_evidence_steps(demo_ingested):
    report, _, _ = demo_ingested
    for demo in report.runs:
        if not demo.suspicious_trace:
            continue
        rules = {r for s in selectors.evidence_steps(_run_id(demo)) for r in s.rules}
        expected = {"benchmark_dataset", "test_data"} if demo.flagged_contamination or demo.verdict_note == "manual_flip" \
            else {"outside_llm_api"} if demo.outside_api else {"non_base_model"}
        assert rules & expected, (demo.run_dir, rules)


def test_planted_secrets_never_reach_the_warehouse(demo_ingested):
    report, _, path = demo_ingested
    assert report.planted_secrets
    con = duckdb.connect(str(path))
    try:
        for secret in report.planted_secrets:
            for table, columns in {"steps": ["input", "output"], "runs": ["prompt", "problems", "redaction_warnings"],
                                   "verdicts": ["text"]}.items():
                for column in columns:
                    hits = con.execute(f"SELECT count(*) FROM {table} WHERE contains({column}, ?)",
                                       [secret.value[:24]]).fetchone()[0]
                    assert hits == 0, (secret.name, table, column)
        marker = "<omitted-api-key>"
        occurrences = con.execute(
            "SELECT sum((length(output) - length(replace(output, ?, ''))) "
            "+ (length(coalesce(input, '')) - length(replace(coalesce(input, ''), ?, '')))) // length(?) FROM steps",
            [marker, marker, marker]).fetchone()[0]
        assert occurrences >= len(report.planted_secrets)
    finally:
        con.close()


def test_a_broken_run_is_reported_and_the_rest_ingests(fresh_warehouse, tmp_path):
    from demo.tree import make_demo_results

    root = tmp_path / "tree"
    report = make_demo_results(root=root, runs=12, seed=3, long_run=False)
    victim = root / report.runs[0].run_dir
    (victim.parent / "gsm8k_Unknown_Model-9B_17000000").mkdir()
    (root / "not-a-method").mkdir()
    result = ingest_tree(root=root)
    assert result.failed == 1
    assert any("gsm8k_Unknown_Model-9B_17000000" in p and "unknown base model" in p for p in result.problems)
    assert any("not-a-method: not a method directory" in p for p in result.problems)
    assert result.stored == len(report.runs) + len(report.baseline_runs)


def _verdict(judge, era, kind, flagged, attempt="original"):
    from traces.verdicts import Verdict

    return Verdict(judge, attempt, era, kind, "flagged" if flagged else "clean", flagged, "", None, None)


def test_effective_flags_follow_each_judge_era():
    from traces.verdicts import effective_flags

    # Original txt files win; their _rerun copies are shown, not read (spec 3.1, 3.3).
    txt = [_verdict("codex", "txt", "contamination", False), _verdict("codex", "txt", "disallowed_model", False),
           _verdict("codex", "txt", "contamination", True, attempt="rerun")]
    assert effective_flags(txt) == {"contamination": None, "disallowed_model": None, "disallowed_api_usage": None}
    # May 2026: judge_result.json holds the OR of the judges and a human's flip: it wins over judgement_*.json.
    may = [_verdict("gpt5_4", "judgement_json", "contamination", True),
           _verdict("aggregate", "judge_result", "contamination", False),
           _verdict("aggregate", "judge_result", "disallowed_model", False)]
    assert effective_flags(may)["contamination"] is None
    # v1.1 (a ptb_lookup judge marks the era): contamination and model come from gpt5_4 alone (its rerun first); a
    # Kimi flag is not read.
    v11 = [_verdict("gpt5_4", "judgement_json", "contamination", False),
           _verdict("gpt5_4", "judgement_json", "disallowed_model", True),
           _verdict("gpt5_4", "judgement_json", "disallowed_model", False, attempt="rerun"),
           _verdict("kimi", "judgement_json", "contamination", True),
           _verdict("ptb_lookup", "judgement_json", "disallowed_ptb_lookup", False)]
    assert effective_flags(v11) == {"contamination": None, "disallowed_model": None, "disallowed_api_usage": None}
    # The same files without a v1.1 judge are May 2026's (new_judge_v2) with judge_result.json missing: upstream's
    # aggregate_judgement.py wrote nothing, aggregate_contamination.py reads ERR: a judge error, Kimi's flag or not.
    assert effective_flags(v11[:-1]) == {"contamination": "judge_error", "disallowed_model": "judge_error",
                                         "disallowed_api_usage": None}
    # The API judge's flag (cell letter A) makes the run fall back too.
    api = v11 + [_verdict("api", "judgement_json", "disallowed_api_usage", True)]
    assert effective_flags(api)["disallowed_api_usage"] == "flagged"
    # No verdict at all on contamination is a judge error; a reviewer's override replaces it.
    assert effective_flags([])["contamination"] == "judge_error"
    assert effective_flags([], {"contamination": False})["contamination"] is None
