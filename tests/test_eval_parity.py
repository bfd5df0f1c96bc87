"""Parity with the harness: the vLLM model args and inspect_ai.eval settings each benchmark's evaluate.py passes,
per model family, against a table transcribed from aisa-group/PostTrainBench at 9082063
(src/eval/tasks/<task>/evaluate.py, src/run_task.sh). The GPU itself cannot exist here: the vLLM attempt is
captured before its process would start (the runner's _AttemptProcess.run is replaced), everything up to the
attempt's spec file is the real code path.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from evaluator import runner
from evaluator.benchmarks import HARNESS, BENCHMARKS, eval_settings, ladder, spec_for, vllm_model_args
from evaluator.errors import EvaluationFailed

# evaluate.py: --gpu-memory-utilization, --max-tokens (first rung), --max-connections defaults; whether it passes
# log_realtime=False (bfcl's does not); run_task.sh: the second and third rungs.
HARNESS_TABLE = {
    #             gpu_mem  max_tokens ladder            max_conn  log_realtime
    "gsm8k":     (0.3, (4000, 3000, 2000), 2, False),
    "humaneval": (0.3, (4000, 3000, 2000), 1, False),
    "aime2025":  (0.8, (16000, 12000, 8000), 6, False),
    "gpqamain":  (0.8, (16000, 12000, 8000), 6, False),
    "bfcl":      (0.8, (16000, 12000, 8000), 6, None),
}
# template_kwargs(): the templates/ file per model_type(); bfcl's gives gemma the tool-calling one.
TEMPLATE = {"qwen": "qwen3.jinja", "llama": "llama3.jinja", "gemma": "gemma3.jinja", "smollm": "smollm.jinja"}
BFCL_TEMPLATE = {**TEMPLATE, "gemma": "gemma3_tool_calling.jinja"}
# bfcl's tool_call_parser_name(): hermes for gemma, qwen, smollm; llama3_json for llama.
BFCL_PARSER = {"qwen": "hermes", "llama": "llama3_json", "gemma": "hermes", "smollm": "hermes"}

CASES = [(task, family) for task in HARNESS_TABLE for family in TEMPLATE]


def _harness_model_args(task: str, family: str, templates: Path) -> dict:
    gpu, _, _, _ = HARNESS_TABLE[task]
    args: dict = {}
    if task == "bfcl":
        args = {"enable_auto_tool_choice": None, "tool_call_parser": BFCL_PARSER[family]}
    args["gpu_memory_utilization"] = gpu
    args["chat_template"] = os.path.join(str(templates), (BFCL_TEMPLATE if task == "bfcl" else TEMPLATE)[family])
    return args


def _harness_settings(task: str, max_tokens: int) -> dict:
    _, _, connections, realtime = HARNESS_TABLE[task]
    settings = {"max_tokens": max_tokens, "max_connections": connections, "timeout": 18000000,
                "attempt_timeout": 18000000, "score_display": False}
    if realtime is not None:
        settings["log_realtime"] = realtime
    return settings


@pytest.mark.parametrize("task, family", CASES)
def test_vllm_model_args_are_the_harness_values(task: str, family: str, templates_dir: Path) -> None:
    assert vllm_model_args(spec_for(task), family, templates_dir) == _harness_model_args(task, family, templates_dir)


@pytest.mark.parametrize("task", list(HARNESS_TABLE))
def test_eval_settings_and_ladder_are_the_harness_values(task: str) -> None:
    rungs = HARNESS_TABLE[task][1]
    assert ladder(task) == list(zip(rungs, (4, 3, 2)))
    for rung in rungs:
        assert eval_settings(spec_for(task), rung) == _harness_settings(task, rung)


def test_every_benchmark_is_in_the_table_or_judged() -> None:
    assert {t for t, s in BENCHMARKS.items() if s.judge is None} == set(HARNESS_TABLE)
    assert {t for t, s in BENCHMARKS.items() if s.judge} == {"arenahardwriting", "healthbench"}
    assert HARNESS.commit.startswith("9082063") and HARNESS.inspect_evals_commit.startswith("06001a83")


def _checkpoint_named(root: Path, run_dir: str, source: Path) -> Path:
    import shutil

    target = root / "claude_claude-opus-4-6_10h_run1" / run_dir / "final_model"
    shutil.copytree(source, target)
    return target


@pytest.mark.parametrize("task, family, run_dir", [
    ("gsm8k", "qwen", "gsm8k_Qwen_Qwen3-1.7B-Base_1"),
    ("bfcl", "gemma", "bfcl_google_gemma-3-4b-pt_2"),
    ("bfcl", "llama", "bfcl_meta-llama_Llama-3.2-3B_3"),
    ("humaneval", "smollm", "humaneval_HuggingFaceTB_SmolLM3-3B-Base_4"),
])
def test_the_vllm_attempt_is_started_with_the_harness_arguments(
    task: str, family: str, run_dir: str, tiny_checkpoint: Path, templates_dir: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    checkpoint = _checkpoint_named(tmp_path / "results", run_dir, tiny_checkpoint)  # the path names the family
    seen: list[dict] = []

    def capture(self):  # type: ignore[no-untyped-def]
        seen.append(json.loads(self.spec_file.read_text()))
        return "RuntimeError: no GPU on this machine", None

    monkeypatch.setattr(runner._AttemptProcess, "run", capture)
    with pytest.raises(EvaluationFailed):
        runner.evaluate_checkpoint(checkpoint=checkpoint, benchmark=task, limit=None, max_tokens=None,
                                   log_dir=tmp_path / "logs", provider="vllm", templates_dir=templates_dir)
    first = seen[0]
    assert first["model_id"] == f"vllm/{checkpoint}"
    assert first["model_args"] == _harness_model_args(task, family, templates_dir)
    assert first["eval_settings"] == _harness_settings(task, HARNESS_TABLE[task][1][0])
    assert first["limit"] is None  # run_task.sh: --limit -1, the full test set
    # A failure that is not a token limit uses every attempt of every rung (run_task.sh: 4, 3, 2).
    rungs = HARNESS_TABLE[task][1]
    assert [s["eval_settings"]["max_tokens"] for s in seen] == [r for r, n in zip(rungs, (4, 3, 2)) for _ in range(n)]
