"""The inspect-ai evaluation core: a tiny Qwen2 checkpoint evaluated on CPU through the hf provider.

Run offline: HF_HUB_OFFLINE=1 python -m pytest tests/test_eval_runner.py -q -p no:django
"""

from __future__ import annotations

import json
import sys
import types
from contextlib import nullcontext
from pathlib import Path

import pytest
import torch
from inspect_ai.log import read_eval_log

from evaluator import runner
from evaluator.benchmarks import chat_template_file, ladder, spec_for
from evaluator.errors import (
    CheckpointLoadError,
    CheckpointMissing,
    DatasetUnavailable,
    EvaluationCancelled,
    EvaluationFailed,
)
from evaluator.runner import evaluate_checkpoint, select_provider
from evaluator.tiny_model import build_tiny_checkpoint

GSM8K_FORMAT = [
    {"input": "What is 2 + 3?", "target": "5"},
    {"input": "What is 10 - 4?", "target": "6"},
    {"input": "Natalia sold 48 clips in April and half as many in May. How many in all?", "target": "72"},
]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("ckpt") / "final_model")


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "gsm8k_local.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in GSM8K_FORMAT))
    return path


def test_ladder_per_task() -> None:
    long, short, judged = [(16000, 4), (12000, 3), (8000, 2)], [(4000, 4), (3000, 3), (2000, 2)], [
        (16384, 4), (12288, 3), (8192, 2)]
    assert {task: ladder(task) for task in ["aime2025", "arenahardwriting", "bfcl", "gpqamain", "gsm8k",
                                            "healthbench", "humaneval"]} == {
        "aime2025": long, "bfcl": long, "gpqamain": long, "gsm8k": short, "humaneval": short,
        "arenahardwriting": judged, "healthbench": judged,
    }


def test_it_rejects_an_unknown_benchmark() -> None:
    with pytest.raises(KeyError, match="known: aime2025"):
        spec_for("mmlu")


def test_chat_template_per_family() -> None:
    assert chat_template_file("gsm8k", "qwen") is None
    assert chat_template_file("gsm8k", "smollm") == "smollm.jinja"
    assert chat_template_file("gsm8k", "gemma") == "gemma3.jinja"
    assert chat_template_file("bfcl", "gemma") == "gemma3_tool_calling.jinja"
    assert chat_template_file("aime2025", "llama") == "llama3.jinja"


def test_auto_picks_hf_without_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setitem(sys.modules, "vllm", types.ModuleType("vllm"))
    assert select_provider("auto") == "hf"


def test_auto_picks_vllm_with_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    # A fake CUDA and a fake vllm module stand in for a GPU worker, which these machines are not.
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setitem(sys.modules, "vllm", types.ModuleType("vllm"))
    assert select_provider("auto") == "vllm"


def test_auto_picks_hf_with_cuda_but_no_vllm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setitem(sys.modules, "vllm", None)  # makes `import vllm` raise ImportError
    assert select_provider("auto") == "hf"


def test_missing_checkpoint_names_the_path(tmp_path: Path, dataset: Path) -> None:
    missing = tmp_path / "no_such_model"
    with pytest.raises(CheckpointMissing, match=str(missing)):
        evaluate_checkpoint(checkpoint=missing, benchmark="gsm8k", limit=None, max_tokens=8,
                            log_dir=tmp_path / "logs", dataset_path=dataset)


def test_checkpoint_without_config_is_missing(tmp_path: Path, dataset: Path) -> None:
    with pytest.raises(CheckpointMissing, match="no config.json"):
        evaluate_checkpoint(checkpoint=tmp_path, benchmark="gsm8k", limit=None, max_tokens=8,
                            log_dir=tmp_path / "logs", dataset_path=dataset)


def test_garbage_config_is_a_load_error(tmp_path: Path, dataset: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json at all")
    with pytest.raises(CheckpointLoadError, match=str(broken)):
        evaluate_checkpoint(checkpoint=broken, benchmark="gsm8k", limit=None, max_tokens=8,
                            log_dir=tmp_path / "logs", dataset_path=dataset)


@pytest.mark.slow
def test_garbage_weights_are_a_load_error(checkpoint: Path, tmp_path: Path, dataset: Path) -> None:
    broken = tmp_path / "final_model"
    broken.mkdir()
    for item in checkpoint.iterdir():
        (broken / item.name).write_bytes(item.read_bytes())
    (broken / "model.safetensors").write_bytes(b"\x00garbage" * 100)
    with pytest.raises(CheckpointLoadError, match="cannot load hf/"):
        evaluate_checkpoint(checkpoint=broken, benchmark="gsm8k", limit=None, max_tokens=8,
                            log_dir=tmp_path / "logs", provider="hf", dataset_path=dataset)


def test_real_benchmark_names_its_dataset(checkpoint: Path, tmp_path: Path) -> None:
    with pytest.raises(DatasetUnavailable, match="gsm8k needs dataset openai/gsm8k .*split test"):
        evaluate_checkpoint(checkpoint=checkpoint, benchmark="gsm8k", limit=3, max_tokens=8,
                            log_dir=tmp_path / "logs", provider="hf")


def test_judged_benchmark_names_its_dataset(checkpoint: Path, tmp_path: Path) -> None:
    with pytest.raises(DatasetUnavailable, match="arenahardwriting needs dataset arena-hard-v2.0"):
        evaluate_checkpoint(checkpoint=checkpoint, benchmark="arenahardwriting", limit=3, max_tokens=8,
                            log_dir=tmp_path / "logs", provider="hf")


def test_missing_local_dataset_names_the_file(checkpoint: Path, tmp_path: Path) -> None:
    with pytest.raises(DatasetUnavailable, match="nope.jsonl"):
        evaluate_checkpoint(checkpoint=checkpoint, benchmark="gsm8k", limit=3, max_tokens=8,
                            log_dir=tmp_path / "logs", provider="hf", dataset_path=tmp_path / "nope.jsonl")


def test_token_limit_errors_walk_down_the_ladder(
    checkpoint: Path, tmp_path: Path, dataset: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tried: list[int] = []

    def too_long(task, model, max_tokens, *args):  # type: ignore[no-untyped-def]
        tried.append(max_tokens)
        return "This model's maximum context length is 2048 tokens", None

    monkeypatch.setattr(runner, "_load_model", lambda *args: nullcontext())
    monkeypatch.setattr(runner, "_run_once", too_long)
    with pytest.raises(EvaluationFailed, match="failed after 3 attempts"):
        evaluate_checkpoint(checkpoint=checkpoint, benchmark="gsm8k", limit=None, max_tokens=None,
                            log_dir=tmp_path / "logs", provider="hf", dataset_path=dataset)
    assert tried == [4000, 3000, 2000]


def test_other_errors_use_every_attempt_of_every_rung(
    checkpoint: Path, tmp_path: Path, dataset: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tried: list[int] = []

    def flaky(task, model, max_tokens, *args):  # type: ignore[no-untyped-def]
        tried.append(max_tokens)
        return "RuntimeError: connection reset", None

    monkeypatch.setattr(runner, "_load_model", lambda *args: nullcontext())
    monkeypatch.setattr(runner, "_run_once", flaky)
    with pytest.raises(EvaluationFailed, match="failed after 9 attempts"):
        evaluate_checkpoint(checkpoint=checkpoint, benchmark="aime2025", limit=None, max_tokens=None,
                            log_dir=tmp_path / "logs", provider="hf", dataset_path=dataset)
    assert tried == [16000] * 4 + [12000] * 3 + [8000] * 2


def test_out_of_memory_stops_at_once(
    checkpoint: Path, tmp_path: Path, dataset: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "_load_model", lambda *args: nullcontext())
    monkeypatch.setattr(runner, "_run_once", lambda *args: ("torch.OutOfMemoryError: CUDA out of memory", None))
    with pytest.raises(EvaluationFailed, match="^out of memory"):
        evaluate_checkpoint(checkpoint=checkpoint, benchmark="gsm8k", limit=None, max_tokens=None,
                            log_dir=tmp_path / "logs", provider="hf", dataset_path=dataset)


@pytest.mark.slow
def test_it_scores_a_local_gsm8k_format_task(checkpoint: Path, tmp_path: Path, dataset: Path) -> None:
    progress: list[tuple[int, int]] = []
    outcome = evaluate_checkpoint(
        checkpoint=checkpoint, benchmark="gsm8k", limit=None, max_tokens=16, log_dir=tmp_path / "logs",
        provider="auto", dataset_path=dataset, on_progress=lambda done, total: progress.append((done, total)),
    )

    log = read_eval_log(str(outcome.log_path))
    assert log.status == "success"
    assert log.results is not None
    assert outcome.score == log.results.scores[0].metrics["accuracy"].value
    assert 0.0 <= outcome.score <= 1.0
    assert outcome.samples_done == outcome.samples_total == 3
    assert progress == [(1, 3), (2, 3), (3, 3)]
    assert outcome.provider == "hf"
    assert outcome.model_id == f"hf/{checkpoint}"
    assert outcome.log_path.parent == tmp_path / "logs"
    assert outcome.inspect_version == "0.3.285"
    assert outcome.chat_template_sha256 is not None and len(outcome.chat_template_sha256) == 64
    assert outcome.settings["max_tokens"] == 16
    assert outcome.settings["family"] == "qwen"
    assert [a.max_tokens for a in outcome.attempts] == [16]
    assert outcome.finished >= outcome.started and outcome.seconds > 0


@pytest.mark.slow
def test_cancel_stops_between_samples(checkpoint: Path, tmp_path: Path, dataset: Path) -> None:
    progress: list[tuple[int, int]] = []
    with pytest.raises(EvaluationCancelled, match="between samples"):
        evaluate_checkpoint(
            # humaneval: max_connections 1, so samples run one after another.
            checkpoint=checkpoint, benchmark="humaneval", limit=None, max_tokens=16, log_dir=tmp_path / "logs",
            provider="hf", dataset_path=dataset, on_progress=lambda done, total: progress.append((done, total)),
            should_cancel=lambda: len(progress) >= 1,
        )
    assert progress == [(1, 3)]
