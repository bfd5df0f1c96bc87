"""The seeded demo results tree (demo/tree.py) covers what the spec describes and is reproducible."""
from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from demo.tree import (
    CLEAN_CONTAMINATION, CLEAN_MODEL, FLAGGED_CONTAMINATION, FLAGGED_MODEL, RUN_STATES, DemoReport, DemoRun,
    make_demo_results,
)
from demo.episode import TEST_SET_MARKERS
from demo.writers import TRACE_FORMATS

PREFIX = re.compile(r"^\[(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})Z\] ")
JSON_FORMATS = {"claude_code", "codex_exec", "codex_protocol", "gemini", "opencode"}
REPO = Path(__file__).resolve().parent.parent


def tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> DemoReport:
    return make_demo_results(root=tmp_path_factory.mktemp("demo12"), runs=12, seed=12, long_run=False)


def solve_lines(report: DemoReport, run: DemoRun) -> list[str]:
    return (report.root / run.run_dir / "solve_out.txt").read_text(encoding="utf-8").split("\n")


def test_same_seed_gives_identical_bytes_and_other_seed_differs(tmp_path: Path) -> None:
    a = make_demo_results(root=tmp_path / "a", runs=12, seed=5, long_run=False)
    b = make_demo_results(root=tmp_path / "b", runs=12, seed=5, long_run=False)
    c = make_demo_results(root=tmp_path / "c", runs=12, seed=6, long_run=False)
    assert tree_digest(a.root) == tree_digest(b.root)
    assert tree_digest(a.root) != tree_digest(c.root)
    assert a.bytes_written == b.bytes_written


def test_twelve_runs_cover_every_format_state_and_flag(small: DemoReport) -> None:
    assert len(small.runs) == 12
    assert {r.trace_format for r in small.runs} == set(TRACE_FORMATS)
    assert {r.state for r in small.runs} == set(RUN_STATES)
    assert any(r.flagged_contamination and r.suspicious_trace for r in small.runs)
    assert any(r.flagged_model and r.suspicious_trace for r in small.runs)
    assert any(not r.flagged_contamination and not r.flagged_model and r.contamination_verdict == "clean"
               for r in small.runs)
    assert {r.verdict_note for r in small.runs} == {"", "manual_flip", "judge_crashed", "malformed", "not_judged"}
    files = {name for r in small.runs for name in r.verdict_files}
    assert files == {"contamination_judgement.txt", "contamination_judgement_rerun.txt", "disallowed_model_judgement.txt",
                     "disallowed_model_judgement_rerun.txt", "judge_result.json", "judgement_api.json",
                     "judgement_gpt5_4.json", "judgement_kimi.json"}
    assert {r.timestamped for r in small.runs} == {True, False}


def test_every_json_line_parses_except_the_deliberately_broken(small: DemoReport) -> None:
    broken_seen = partial_seen = 0
    for run in small.runs:
        lines = solve_lines(small, run)
        last = len(lines)  # split("\n") leaves "" after a final newline, or the partial line
        for no, line in enumerate(lines, 1):
            m = PREFIX.match(line)
            assert bool(m) == run.timestamped or (no == last and line == ""), (run.run_dir, no)
            body = line[m.end():] if m else line
            if run.trace_format not in JSON_FORMATS or not body.startswith("{"):
                continue
            if no in run.broken_lines or (no == last and run.partial_last_line):
                with pytest.raises(json.JSONDecodeError):
                    json.loads(body)
                broken_seen += no in run.broken_lines
                partial_seen += no == last
                continue
            assert isinstance(json.loads(body), dict), (run.run_dir, no)
    assert broken_seen >= 1 and partial_seen >= 1


def test_line_timestamps_never_go_backwards(small: DemoReport) -> None:
    for run in (r for r in small.runs if r.timestamped):
        stamps = [m.group(1) for line in solve_lines(small, run) if (m := PREFIX.match(line))]
        assert stamps == sorted(stamps), run.run_dir


def test_retries_keep_the_higher_cluster_id_as_latest(small: DemoReport) -> None:
    cells: dict[tuple[str, str, str], list[DemoRun]] = {}
    for r in small.runs:
        cells.setdefault((r.method, r.benchmark, r.base_model), []).append(r)
    retried = [rs for rs in cells.values() if len(rs) > 1]
    assert retried
    for rs in retried:
        latest = max(rs, key=lambda r: r.cluster_id)
        assert latest.is_latest and all(not r.is_latest for r in rs if r is not latest)
        assert all((small.root / r.run_dir).is_dir() for r in rs)


def test_run_files_match_each_state(small: DemoReport) -> None:
    for r in small.runs:
        d = small.root / r.run_dir
        assert d.name == f"{r.benchmark}_{r.base_model.replace('/', '_')}_{r.cluster_id}"
        assert (d / "output.log").read_text().split("\n")[0].split(" ")[:4] == [
            r.benchmark, r.agent, r.base_model, str(r.cluster_id)]
        assert (d / "time_taken.txt").exists() == (r.state != "never_finished")
        assert (d / "metrics.json").exists() == (r.accuracy is not None)
        if r.accuracy is not None:
            assert json.loads((d / "metrics.json").read_text())["accuracy"] == r.accuracy
        if r.state == "eval_failed":
            assert (d / "final_model" / "config.json").exists()
            assert sorted(r.final_eval_files) == sorted(f"final_eval_{k}.txt" for k in range(1, 10))
        if r.state == "timed_out":
            assert (d / "error.log").read_text().startswith("Terminated")
            assert (d / "time_taken.txt").read_text().startswith("10:00:")
        if r.state == "never_finished":
            assert "Killed" in (d / "error.log").read_text() and r.partial_last_line
        if r.state == "cuda_failure":
            assert (d / "task" / "cuda_not_available").exists() and r.steps_planned == 0
        if r.state == "api_limit":
            assert "You've hit your limit" in (d / "solve_out.txt").read_text()
        if r.state in ("scored", "eval_failed", "timed_out"):
            assert (d / "final_model" / "config.json").exists()
        assert (d / "system_monitor.log").exists() == r.timestamped


def test_verdict_files_hold_the_exact_strings(small: DemoReport) -> None:
    for r in small.runs:
        d = small.root / r.run_dir
        if "contamination_judgement.txt" in r.verdict_files:
            text = (d / "contamination_judgement.txt").read_text().strip()
            expected = {"clean": CLEAN_CONTAMINATION, "flagged": FLAGGED_CONTAMINATION}.get(r.contamination_verdict)
            assert text == expected or r.contamination_verdict == "malformed"
            model = (d / "disallowed_model_judgement.txt").read_text().strip()
            assert model == (FLAGGED_MODEL if r.flagged_model else CLEAN_MODEL)
        if "judgement_gpt5_4.json" in r.verdict_files:
            for judge, said in r.judge_flags.items():  # each judge's own answers; judge_result.json their OR
                verdict = json.loads((d / f"judgement_{judge}.json").read_text())
                assert {k: verdict[k] for k in said} == said, (r.run_dir, judge)
                assert all(f"justification_{k}" in verdict for k in said)
            result = json.loads((d / "judge_result.json").read_text())
            assert result["contamination"] == r.flagged_contamination == any(
                j["contamination"] for k, j in r.judge_flags.items() if k != "api")
        if r.verdict_note == "judge_crashed":
            assert not (d / "contamination_judgement.txt").exists()


def test_flagged_traces_show_the_flagged_behaviour(small: DemoReport) -> None:
    for r in small.runs:
        text = (small.root / r.run_dir / "solve_out.txt").read_text()
        if r.flagged_contamination:
            assert re.search(TEST_SET_MARKERS[r.benchmark], text), r.run_dir
        if r.flagged_model:
            assert "huggingface-cli download Qwen/Qwen3-4B " in text, r.run_dir


def test_planted_secrets_and_hostile_strings_are_in_the_traces(small: DemoReport) -> None:
    names = {s.name for s in small.planted_secrets}
    assert names == {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN"}
    for s in small.planted_secrets:
        assert s.value in (small.root / s.run_dir / s.file).read_text()
    openai = next(s for s in small.planted_secrets if s.name == "OPENAI_API_KEY")
    assert f"openai {openai.value}" in (small.root / openai.run_dir / "solve_out.txt").read_text()
    assert small.hostile_run_dirs
    for run_dir in small.hostile_run_dirs:
        text = (small.root / run_dir / "solve_out.txt").read_text()
        # JSON-escaped inside the events: the quotes of the img tag appear as \"
        assert "<script>window.__pwned=1</script>" in text and "onerror=\\\"window.__pwned=1\\\"" in text


def test_baseline_and_ignored_dirs(small: DemoReport) -> None:
    assert len(small.baseline_runs) == 56
    for rel in small.baseline_runs:
        d = small.root / rel
        for name in ("metrics.json", "model.txt", "eval.txt", "final_eval.txt", "time_taken.txt", "timestamp.txt"):
            assert (d / name).exists(), (rel, name)
        assert "accuracy" in json.loads((d / "metrics.json").read_text())
    assert (small.root / "_aggregated").is_dir()
    on_disk = {p.name for p in small.root.iterdir() if p.is_dir()}
    assert on_disk == set(small.methods) | {"baseline", "_aggregated"}


def test_long_run_is_a_big_ten_hour_claude_trace(tmp_path: Path) -> None:
    report = make_demo_results(root=tmp_path, runs=12, seed=1, long_run=True)
    assert report.long_run_dir is not None
    run = report.run(report.long_run_dir)
    path = tmp_path / run.run_dir / "solve_out.txt"
    assert run.trace_format == "claude_code"
    assert 40e6 <= path.stat().st_size <= 60e6
    data = path.read_bytes()
    assert data.count(b'"type":"tool_use"') >= 20_000 and run.steps_planned >= 20_000
    first = PREFIX.match(data[:40].decode())
    last = PREFIX.match(data[data.rstrip(b"\n").rfind(b"\n") + 1:][:40].decode())
    assert first and last
    span = datetime.fromisoformat(last.group(1)) - datetime.fromisoformat(first.group(1))
    assert 9.5 * 3600 <= span.total_seconds() <= 10 * 3600


def test_management_command_prints_a_summary(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "manage.py", "make_demo_results", str(tmp_path / "r"), "--runs", "12",
                          "--seed", "3", "--no-long-run"], cwd=REPO, capture_output=True, text=True, check=True)
    *progress, summary = out.stdout.strip().splitlines()
    assert re.match(r"Wrote 12 runs in 9 methods .* MB to ", summary)
    # one line per run written, so a person watching a fresh clone's `make serve` sees it move (issue 29)
    assert [re.match(r"run (\d+) of 12: ", line)[1] for line in progress] == [str(n) for n in range(1, 13)]


# ---------------------------------------------------------------------------------------------------------------
# The real benchmark's shape: --methods K (issue 24)


def test_methods_mode_writes_one_latest_run_per_cell_of_every_method(tmp_path: Path) -> None:
    from demo.tree import BASE_MODELS, TASKS, method_catalogue

    report = make_demo_results(root=tmp_path / "k10", methods=10, seed=2, long_run=False, trace_scale=0.02)
    names = [m.name for m in method_catalogue(10)]
    assert report.methods == sorted(names)
    assert sorted(p.name for p in report.root.iterdir() if p.is_dir() and p.name in names) == sorted(names)
    latest = [r for r in report.runs if r.is_latest]
    assert len(latest) == 28 * 10
    cells = {(r.method, r.benchmark, r.base_model) for r in latest}
    assert cells == {(m, t, b) for m in names for t in TASKS for b in BASE_MODELS}
    old = [r for r in report.runs if not r.is_latest]
    assert old, "the real tree has superseded retries"
    for r in old:  # a retry of the same cell, started earlier, failed
        newer = next(x for x in latest if (x.method, x.benchmark, x.base_model) == (r.method, r.benchmark,
                                                                                    r.base_model))
        assert newer.cluster_id > r.cluster_id and r.state in ("cuda_failure", "never_finished")
    # the first nine methods keep the classic tree's coverage
    assert {r.trace_format for r in report.runs} == set(TRACE_FORMATS)
    assert {r.state for r in report.runs} == set(RUN_STATES)
    assert report.planted_secrets and report.hostile_run_dirs


def test_methods_mode_is_deterministic_and_trace_scale_shrinks_traces(tmp_path: Path) -> None:
    a = make_demo_results(root=tmp_path / "a", methods=1, seed=9, long_run=False, trace_scale=0.05)
    b = make_demo_results(root=tmp_path / "b", methods=1, seed=9, long_run=False, trace_scale=0.05)
    assert tree_digest(a.root) == tree_digest(b.root)
    full = make_demo_results(root=tmp_path / "full", methods=1, seed=9, long_run=False)
    started = [r.solve_out_bytes for r in full.runs if r.state != "cuda_failure"]
    small = [r.solve_out_bytes for r in a.runs if r.state != "cuda_failure"]
    import statistics

    assert 350_000 <= statistics.median(started) <= 900_000  # the real median, ~0.6 MB (cut runs are smaller)
    assert statistics.median(small) < statistics.median(started) / 5


def test_trace_sizes_follow_the_real_distribution() -> None:
    import random
    import statistics

    from demo.tree import trace_size

    rng = random.Random(0)
    sizes = [trace_size(rng) for _ in range(20_000)]
    giants = [s for s in sizes if s >= 50e6]
    body = [s for s in sizes if s < 50e6]
    assert 0.56e6 <= statistics.median(sizes) <= 0.64e6
    assert sum(0.27e6 <= s <= 1.35e6 for s in body) / len(body) >= 0.93
    assert 10 <= len(giants) <= 80 and max(giants) <= 200e6  # ~0.2 %, 50-200 MB
    rng = random.Random(0)
    scaled = [trace_size(rng, 0.1) for _ in range(50)]
    assert all(abs(x - s * 0.1) <= 1 for x, s in zip(scaled, sizes[:50]))  # same draws, scaled


def test_catalogue_uses_the_real_method_naming() -> None:
    import json as _json

    from demo.tree import method_catalogue
    from traces.layout import parse_method_name

    suite = _json.loads((REPO / "suites" / "posttrainbench.json").read_text())
    published = {m for a in suite["published"]["agents"] + suite["agent_groups"] for m in a["methods"]}
    catalogue = method_catalogue(90)
    names = [m.name for m in catalogue]
    assert len(set(names)) == 90
    assert published <= set(names)  # every published method dir, then more of the newest sweeps' naming
    for m in catalogue:
        parsed = parse_method_name(m.name)
        assert parsed.harness_agent == m.agent, m.name
        assert re.search(r"_10h(_|$)", m.name)
    assert sum(bool(re.search(r"_run[123]$", n)) for n in names) >= 55


def test_invented_configurations_are_grouped_as_a_suite_would_list_them() -> None:
    """``invented_agent_groups``: every method dir of the K=90 catalogue that the real suite file names no agent for
    is in exactly one group, a group holds one configuration's ``_runN`` repeats, and the suite file with the groups
    added is still valid (each method listed once; ``ptbsite.suites``)."""
    import json as _json

    from demo.tree import invented_agent_groups, method_catalogue
    from ptbsite.suites import Agent, Suite, _check_method_lists
    from traces.layout import parse_method_name

    suite = _json.loads((REPO / "suites" / "posttrainbench.json").read_text())
    listed = {m for a in suite["published"]["agents"] + suite["agent_groups"] for m in a["methods"]}
    groups = invented_agent_groups(90)
    grouped = [m for g in groups for m in g["methods"]]
    names = [m.name for m in method_catalogue(90)]
    assert len(grouped) == len(set(grouped)) == 35 and len(groups) == 12
    assert set(grouped) == set(names[len(names) - 35:]) and not set(grouped) & listed
    for g in groups:
        Agent.model_validate(g)
        configs = {(parse_method_name(m).harness_agent, parse_method_name(m).config) for m in g["methods"]}
        assert len(configs) == 1 and [re.sub(r".*_run", "", m) for m in g["methods"]] == ["1", "2", "3"][:len(g["methods"])]
    suite["agent_groups"] = [*suite["agent_groups"], *groups]
    Suite.model_validate(suite)
    _check_method_lists(suite, REPO / "suites" / "posttrainbench.json")
    assert invented_agent_groups(55) == [] and invented_agent_groups(9) == []


def test_management_command_methods_mode(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "manage.py", "make_demo_results", str(tmp_path / "r"), "--methods", "2",
                          "--seed", "3", "--no-long-run", "--trace-scale", "0.02"],
                         cwd=REPO, capture_output=True, text=True, check=True)
    m = re.match(r"Wrote (\d+) runs in 2 methods .* MB to ", out.stdout.strip().splitlines()[-1])
    assert m and 56 <= int(m.group(1)) <= 70  # 2 x 28 latest runs and a few superseded retries
    bad = subprocess.run([sys.executable, "manage.py", "make_demo_results", str(tmp_path / "s"), "--methods", "2",
                          "--runs", "3"], cwd=REPO, capture_output=True, text=True)
    assert bad.returncode != 0 and "not both" in bad.stderr
