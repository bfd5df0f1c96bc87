"""``manage.py reindex``: facets, phases and evidence marks re-derived from stored steps are those of a fresh
ingest, per family, only for runs whose stored rules version is not the code's (ingest.reindex)."""
from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from ptbsite import warehouse
from traces import layout
from ingest.reindex import current_versions, reindex
from ingest.tree import ingest_tree
from traces.vocabulary import STEP_TEXT_CAP


def _facts() -> dict[str, list[tuple]]:
    with warehouse.connect() as con:
        return {
            "facets": con.execute("SELECT * FROM facets ORDER BY ALL").fetchall(),
            "phases": con.execute("SELECT * FROM phases ORDER BY ALL").fetchall(),
            "marks": con.execute("SELECT run_id, trace, idx, suspicious FROM steps WHERE suspicious IS NOT NULL "
                                 "ORDER BY ALL").fetchall(),
        }


def _execute(sql: str, params: list | None = None) -> None:
    warehouse.run_in_transaction(lambda con: con.execute(sql, params or []))


def _forget_everything() -> None:
    """What an old rule set would have left: other facets, no phases, wrong marks, no version."""
    _execute("DELETE FROM facets")
    _execute("DELETE FROM phases")
    _execute("UPDATE steps SET suspicious = NULL")
    _execute("UPDATE steps SET suspicious = 'test_data' WHERE kind = 'tool_result'")
    _execute("INSERT INTO facets SELECT id, 'sft', 'stale', NULL, '0' FROM runs")
    _execute("UPDATE runs SET rules_version = NULL")


@pytest.fixture
def ingested(demo_tree, fresh_warehouse):
    report = ingest_tree(root=demo_tree.root)
    assert report.failed == 0 and report.stored > 12
    return report


def test_a_fresh_ingest_records_the_codes_rules_version(ingested):
    with warehouse.connect() as con:
        versions = {row[0] for row in con.execute("SELECT rules_version FROM runs").fetchall()}
    assert versions == {json.dumps(current_versions(), sort_keys=True)}
    assert set(current_versions()) == {"evidence", "facets", "search"}
    assert all(len(v) == 16 for v in current_versions().values())


def test_reindex_of_every_family_gives_the_facts_of_a_fresh_ingest(ingested):
    fresh = _facts()
    assert len(fresh["facets"]) > 20 and len(fresh["phases"]) > 20 and len(fresh["marks"]) >= 3
    _forget_everything()
    assert _facts() != fresh
    report = reindex()
    assert (report.reindexed, report.up_to_date, report.failed) == (ingested.stored, 0, 0)
    assert report.facets == len(fresh["facets"]) and report.marked_steps == len(fresh["marks"])
    assert _facts() == fresh
    again = reindex()  # every run is now at the code's version
    assert (again.reindexed, again.up_to_date) == (0, ingested.stored)
    assert _facts() == fresh


def test_only_the_stale_family_is_rederived(ingested):
    fresh = _facts()
    current = current_versions()
    _forget_everything()
    _execute("UPDATE runs SET rules_version = ?", [json.dumps({"evidence": current["evidence"], "facets": "old"})])
    report = reindex()
    assert report.reindexed == ingested.stored and report.marked_steps == 0
    after = _facts()
    assert after["facets"] == fresh["facets"] and after["phases"] == fresh["phases"]
    assert after["marks"] != fresh["marks"]  # evidence was up to date: its (planted) marks are left alone
    assert reindex(families=["evidence"]).reindexed == 0
    forced = reindex(families=["evidence"], force=True)
    assert forced.reindexed == ingested.stored and _facts() == fresh


def test_the_command(ingested):
    _execute("UPDATE runs SET rules_version = NULL")
    out = StringIO()
    call_command("reindex", "--rules", "facets", "--quiet", stdout=out)
    assert out.getvalue().startswith(f"{ingested.stored} runs re-derived, 0 up to date, 0 failed, ")
    out = StringIO()
    call_command("reindex", "--rules", "facets", "--quiet", stdout=out)
    assert out.getvalue().startswith(f"0 runs re-derived, {ingested.stored} up to date, 0 failed, ")
    with pytest.raises(CommandError, match="unknown rule families verdicts"):
        call_command("reindex", "--rules", "facets,verdicts")


def test_a_cut_call_text_is_read_whole(tmp_path: Path, fresh_warehouse):
    """A Write call longer than the steps table keeps: the trainer beyond the cut is still GRPO on reindex."""
    method, run = "claude_claude-opus-4-6_10h_run2", "gsm8k_Qwen_Qwen3-4B-Base_17000001"
    run_dir = tmp_path / "results" / method / run
    run_dir.mkdir(parents=True)
    code = "# padding\n" * (STEP_TEXT_CAP // 10 + 100) + "from trl import GRPOTrainer\ntrainer = GRPOTrainer(model)\n"
    events = [
        {"type": "system", "subtype": "init", "session_id": "s", "model": "claude-opus-4-6"},
        {"type": "assistant", "message": {"id": "m1", "role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "Write",
             "input": {"file_path": "/home/ben/task/train_grpo.py", "content": code}}]}},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "File created"}]}},
        {"type": "result", "subtype": "success", "is_error": False, "result": "done"},
    ]
    (run_dir / "solve_out.txt").write_text("".join(json.dumps(e) + "\n" for e in events))
    assert ingest_tree(root=tmp_path / "results").stored == 1
    fresh = _facts()
    rid = layout.run_id(method, run)
    assert ("grpo" in {f[1] for f in fresh["facets"] if f[0] == rid})
    _forget_everything()
    assert reindex().reindexed == 1
    assert _facts() == fresh
