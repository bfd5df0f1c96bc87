"""A stand-in judge for the demo: a mock of the benchmark's hosted LLM judge, so that ``make serve`` + ``make worker``
can re-judge a run out of the box (``PTB_JUDGE_COMMAND``, set by the Makefile for the demo). It is NOT the hosted
judge: it asks no model, it applies two text rules, and every justification it writes says so.

    python demo/mock_hosted_judge.py RUN_DIR [OUT_DIR]

Reads the run directory's agent trace (top-level ``solve*`` files and ``*.jsonl``) and the agent's scripts under
``task/`` (``*.py``, ``*.sh``), at most MAX_BYTES in all, and writes ``judgement_mock_hosted.json`` into OUT_DIR
(default: the environment variable PTB_JUDGE_OUTPUT_DIR, the worker's fresh output folder) in new_judge_v2's
per-judge schema (``contamination``, ``disallowed_model``, ``justification_contamination``,
``justification_disallowed_model``; spec 3.4):

* contamination: a line that loads a benchmark's test split (``split="test"``) and, on the same line, writes or
  names training data (``train``): the demo agents' way of training on the evaluation questions;
* disallowed model: a line that downloads or loads (``huggingface-cli download``, ``from_pretrained``,
  ``snapshot_download``) an instruct or chat model (``-Instruct``, ``-it``, ``-Chat``, or one of the suite's
  official instruct models) instead of the base model.

Each justification names the file and line it found, so the run page can cite the step. Standard library only:
the worker runs it as a plain script, without the project on its path.
"""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

MAX_BYTES = 50 << 20
JUDGE_ID = "mock_hosted"
LABEL = "Stand-in judge (a mock of the hosted LLM judge, demo only; no model was asked)"
INSTRUCT = ("Qwen/Qwen3-1.7B", "Qwen/Qwen3-4B", "HuggingFaceTB/SmolLM3-3B", "google/gemma-3-4b-it")
_TEST_SPLIT = re.compile(r"split\s*=\s*\\?[\"']test\\?[\"']")
_LOAD = re.compile(r"(huggingface-cli download|from_pretrained\(|snapshot_download\()\s*\\?[\"']?([\w.-]+/[\w.-]+)")
_FILE = re.compile(r"[\w./-]*train[\w.-]*\.(?:json|jsonl|csv|parquet)")


def _instruct(model_id: str) -> bool:
    return model_id in INSTRUCT or bool(re.search(r"-(Instruct|it|Chat)$", model_id, re.I))


def _sources(run_dir: Path) -> list[Path]:
    top = sorted(p for p in run_dir.iterdir() if p.is_file() and (p.name.startswith("solve") or p.suffix == ".jsonl"))
    task = run_dir / "task"
    scripts = sorted(p for p in task.rglob("*") if p.is_file() and p.suffix in (".py", ".sh")) if task.is_dir() else []
    return top + scripts


def judge(run_dir: Path) -> dict[str, object]:
    """The verdict (new_judge_v2's per-judge judgement.json) of the two rules on ``run_dir``."""
    contamination: list[str] = []
    models: list[str] = []
    budget = MAX_BYTES
    for path in _sources(run_dir):
        if budget <= 0:
            break
        text = path.read_text(errors="replace")[:budget]
        budget -= len(text)
        name = path.relative_to(run_dir).as_posix()
        for number, line in enumerate(text.splitlines(), 1):
            if _TEST_SPLIT.search(line) and "train" in line:
                files = sorted(set(_FILE.findall(line)))
                contamination.append(f"{name} line {number} loads the test split into training data"
                                     + (f" ({', '.join(files)})" if files else ""))
            for _, model_id in _LOAD.findall(line):
                if _instruct(model_id):
                    models.append(f"{name} line {number} fetches the instruct model {model_id}")
    return {
        "contamination": bool(contamination),
        "disallowed_model": bool(models),
        "justification_contamination": f"{LABEL}: " + ("; ".join(contamination[:5]) if contamination else
                                                        "no line loads a test split into training data."),
        "justification_disallowed_model": f"{LABEL}: " + ("; ".join(models[:5]) if models else
                                                           "no line fetches an instruct or chat model."),
    }


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__.splitlines()[3].strip(), file=sys.stderr)
        return 2
    run_dir = Path(argv[1])
    out = Path(argv[2] if len(argv) == 3 else os.environ.get("PTB_JUDGE_OUTPUT_DIR", "."))
    if not run_dir.is_dir():
        print(f"{run_dir}: not a run directory", file=sys.stderr)
        return 2
    (out / f"judgement_{JUDGE_ID}.json").write_text(json.dumps(judge(run_dir), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
