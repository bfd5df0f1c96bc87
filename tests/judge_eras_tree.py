"""A results tree of every judge era and every case of issue 26 where the site and upstream's aggregation could
part, with the cells worked out by hand under each judging rule (``tests/test_judge_eras.py``).

One unlisted method (``JUDGES``, its own row) holds one run per benchmark on Qwen3-1.7B-Base (view ``A``), each a
case; a second base model carries the attempt whose cluster id is later as a number but earlier as a string; a
listed two-method agent (GPT-5.1 Codex Max (Low)) has only one of its methods. Every other cell falls back to the
tree's own baseline_zeroshot/ score of 0.10, as in tests/results_tree.py, whose writer and baseline this reuses.
Per-judge files are named and shaped as new_judge_v2's src/run_task.sh writes them (``judgement_<id>.json``,
``judge_result.json`` from aggregate_judgement.py: the judges' OR, justifications as ``[<judge>] <text>``).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from tests import results_tree as base
from tests.results_tree import A, B, Run

JUDGES = "claude_claude-haiku-4-5_10h_judges"          # in no list: its own row
CODEXLOW = "codexlow_gpt-5.1-codex-max_10h_v7"         # one of GPT-5.1 Codex Max (Low)'s two methods
CODEXLOW_KEY = "gpt-5.1-codex-max-low"
NO_TXT = {"contamination": None, "disallowed": None}


def judgement(contamination: object, model: object = False, why: str = "looked at train.py") -> str:
    """A contamination judge's judgement.json (new_judge_v2's schema)."""
    return json.dumps({"contamination": contamination, "disallowed_model": model,
                       "justification_contamination": f"contamination: {why}",
                       "justification_disallowed_model": "model: only the base model was trained"})


def api(flag: bool = False) -> str:
    """The API judge's judgement.json."""
    return json.dumps({"disallowed_api_usage": flag, "justification_disallowed_api_usage": "no external API"})


def result(contamination: object, model: object = False, api_flag: object = False, **judges: str) -> str:
    """judge_result.json as aggregate_judgement.py writes it from ``judges`` (id -> judgement.json text); the
    booleans given as they are (a string ``"false"`` stays a string)."""
    said = {k: json.loads(v) for k, v in judges.items()}
    return json.dumps({
        "contamination": contamination, "disallowed_model": model,
        "justification_contamination": "\n\n".join(f"[{k}] {v['justification_contamination']}" for k, v in said.items()),
        "justification_disallowed_model": "\n\n".join(f"[{k}] {v['justification_disallowed_model']}"
                                                      for k, v in said.items()),
        "disallowed_api_usage": api_flag, "justification_disallowed_api_usage": "no external API"})


# benchmark -> (case, accuracy, files, extra Run fields)
CASES = {
    # May 2026 per-judge files, no judge_result.json (aggregate_judgement.py failed): Kimi flags contamination.
    "aime2025": ("no judge_result.json, per-judge files; Kimi flags", 0.50, {
        "judgement_gpt5_4.json": judgement(False), "judgement_kimi.json": judgement(True),
        "judgement_api.json": api()}, NO_TXT),
    # judge_result.json with "contamination": "false" as a string (the judges' own files are booleans, clean).
    "arenahardwriting": ('"contamination": "false" as a string', 0.60, {
        "judgement_gpt5_4.json": judgement(False), "judgement_kimi.json": judgement(False),
        "judgement_api.json": api(),
        "judge_result.json": result("false", False, gpt5_4=judgement(False), kimi=judgement(False))}, NO_TXT),
    # txt verdicts (contamination detected) and a new_judge_v2 judge_result.json (clean) in one run dir.
    "bfcl": ("txt verdicts and judge_result.json", 0.70, {
        "judge_result.json": result(False, False, gpt5_4=judgement(False))},
        {"contamination": "contamination detected"}),
    # v1.1: gpt5_4 canonical (clean), a Kimi file (flagged) not read, a ptb_lookup judge.
    "gpqamain": ("v1.1: gpt5_4 clean, Kimi flags", 0.40, {
        "judgement_gpt5_4.json": judgement(False), "judgement_kimi.json": judgement(True),
        "judgement_api.json": api(), "judgement_ptb_lookup.json": json.dumps(
            {"disallowed_ptb_lookup": False, "justification_disallowed_ptb_lookup": "none"})}, NO_TXT),
    # May 2026, both judges flag contamination; judge_result.json holds their OR.
    "gsm8k": ("both judges flag", 0.80, {
        "judgement_gpt5_4.json": judgement(True), "judgement_kimi.json": judgement(True),
        "judgement_api.json": api(),
        "judge_result.json": result(True, False, gpt5_4=judgement(True), kimi=judgement(True))}, NO_TXT),
    # accuracy NaN, clean txt verdicts; the agent's trace loads the test split into training data at step 1 (the
    # site's evidence rules find it, the judge said clean: the report card lists it).
    "healthbench": ("accuracy NaN", math.nan, {"solve_out.txt": "\n".join(json.dumps(e) for e in [
        {"type": "system", "subtype": "init", "session_id": "s1", "cwd": "/task", "model": "claude-opus-4-6"},
        {"type": "assistant", "message": {"id": "m1", "role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_data01", "name": "Bash", "input": {"command": (
                "python -c \"from datasets import load_dataset; ds = load_dataset('openai/healthbench', "
                "split='test'); ds.to_json('data/extra_train.json')\"")}}]}},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_data01", "content": "ok", "is_error": False}]}},
        {"type": "result", "subtype": "success", "is_error": False, "result": "Done.", "total_cost_usd": 1.0},
    ]) + "\n"}, {}),
    # accuracy 1.5, clean txt verdicts.
    "humaneval": ("accuracy outside 0-1", 1.5, {}, {}),
}


def runs() -> list[Run]:
    """The tree's agent runs."""
    out = [Run(JUDGES, benchmark, A, 17800000 + i, accuracy=accuracy, files=files, **extra)
           for i, (benchmark, (_, accuracy, files, extra)) in enumerate(CASES.items())]
    # aime2025 on Qwen3-4B, new_judge_v2's era: attempt 10000000 (clean, 0.30) is later as a number; as strings
    # "9999999" > "10000000", so aggregate_contamination.py reads the older attempt's flagged judge_result.json.
    out.append(Run(JUDGES, "aime2025", B, 9999999, accuracy=0.90, **NO_TXT,
                   files={"judge_result.json": result(True, False, gpt5_4=judgement(True))}))
    out.append(Run(JUDGES, "aime2025", B, 10000000, accuracy=0.30, **NO_TXT,
                   files={"judge_result.json": result(False, False, gpt5_4=judgement(False))}))
    # GPT-5.1 Codex Max (Low): one of its two methods, one scored run.
    out.append(Run(CODEXLOW, "aime2025", A, 17900000, accuracy=0.30))
    return out


def write_tree(root: Path) -> Path:
    """Write the tree (with tests/results_tree.py's baseline_zeroshot/) under ``root``; returns root."""
    return base.write_tree(root, agent_runs=runs())
