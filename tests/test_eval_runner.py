"""The inspect-ai evaluation core: a tiny Qwen2 checkpoint evaluated on CPU through the hf provider, each attempt in a
process of its own; family detection, templates and the retry ladder as the harness's evaluate.py/run_task.sh.

Run offline: HF_HUB_OFFLINE=1 python -m pytest tests/test_eval_runner.py -q -p no:django
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
import types
from importlib import metadata
from pathlib import Path

import pytest
import torch
from inspect_ai.log import read_eval_log

from evaluator import runner
from evaluator.benchmarks import chat_template_file, ladder, model_family, spec_for
from evaluator.errors import (
    ChatTemplateMissing,
    CheckpointLoadError,
    CheckpointMissing,
    DatasetUnavailable,
    EvaluationCancelled,
    EvaluationFailed,
    EvaluationTimedOut,
    JudgeModelNotConfigured,
    UnknownModelFamily,
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
    # Since harness commit 248f223 (2026-02-06) Qwen checkpoints get templates/qwen3.jinja, not their own.
    assert chat_template_file("gsm8k", "qwen") == "qwen3.jinja"
    assert chat_template_file("bfcl", "qwen") == "qwen3.jinja"
    assert chat_template_file("gsm8k", "smollm") == "smollm.jinja"
    assert chat_template_file("gsm8k", "gemma") == "gemma3.jinja"
    assert chat_template_file("bfcl", "gemma") == "gemma3_tool_calling.jinja"
    assert chat_template_file("aime2025", "llama") == "llama3.jinja"


def _config_only(folder: Path, architecture: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"architectures": [architecture]}))
    return folder


def test_family_comes_from_the_path_first_then_the_architecture(tmp_path: Path) -> None:
    # As evaluate.py's model_type(): the path decides, even against the architecture.
    gemma_named = _config_only(tmp_path / "m" / "gsm8k_google_gemma-3-4b-pt_1" / "final_model", "Qwen2ForCausalLM")
    assert model_family(gemma_named) == ("gemma", "path")
    # The results root outside <method>/<run>/final_model is site-specific and not searched.
    plain = _config_only(tmp_path / "qwen-lab" / "m" / "run_1" / "final_model", "LlamaForCausalLM")
    assert model_family(plain) == ("llama", "architecture")
    smol = _config_only(tmp_path / "m" / "run_2" / "final_model", "SmolLM3ForCausalLM")
    assert model_family(smol) == ("smollm", "architecture")


def test_an_unknown_family_is_refused(tmp_path: Path) -> None:
    odd = _config_only(tmp_path / "m" / "run_3" / "final_model", "MistralForCausalLM")
    with pytest.raises(UnknownModelFamily, match="'mistralforcausallm'.*qwen, llama, gemma or smollm"):
        model_family(odd)


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


def test_missing_checkpoint_names_the_path(tmp_path: Path, dataset: Path, templates_dir: Path) -> None:
    missing = tmp_path / "no_such_model"
    with pytest.raises(CheckpointMissing, match=str(missing)):
        evaluate_checkpoint(checkpoint=missing, benchmark="gsm8k", limit=None, max_tokens=8,
                            log_dir=tmp_path / "logs", dataset_path=dataset, templates_dir=templates_dir)


def test_checkpoint_without_config_is_missing(tmp_path: Path, dataset: Path, templates_dir: Path) -> None:
    with pytest.raises(CheckpointMissing, match="no config.json"):
        evaluate_checkpoint(checkpoint=tmp_path, benchmark="gsm8k", limit=None, max_tokens=8,
                            log_dir=tmp_path / "logs", dataset_path=dataset, templates_dir=templates_dir)


def test_garbage_config_is_a_load_error(tmp_path: Path, dataset: Path, templates_dir: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json at all")
    with pytest.raises(CheckpointLoadError, match=str(broken)):
        evaluate_checkpoint(checkpoint=broken, benchmark="gsm8k", limit=None, max_tokens=8,
                            log_dir=tmp_path / "logs", dataset_path=dataset, templates_dir=templates_dir)


def test_a_qwen_checkpoint_needs_the_harness_template(checkpoint: Path, tmp_path: Path, dataset: Path) -> None:
    with pytest.raises(ChatTemplateMissing, match="harness's template qwen3.jinja.*PTB_TEMPLATES_DIR"):
        evaluate_checkpoint(checkpoint=checkpoint, benchmark="gsm8k", limit=1, max_tokens=8,
                            log_dir=tmp_path / "logs", provider="hf", dataset_path=dataset, templates_dir=tmp_path)


@pytest.mark.slow
def test_garbage_weights_are_a_load_error(checkpoint: Path, tmp_path: Path, dataset: Path,
                                          templates_dir: Path) -> None:
    broken = tmp_path / "final_model"
    shutil.copytree(checkpoint, broken)
    (broken / "model.safetensors").write_bytes(b"\x00garbage" * 100)
    # found before any attempt starts, naming the file (safetensors' header check)
    with pytest.raises(CheckpointLoadError, match=f"{broken / 'model.safetensors'} is broken"):
        evaluate_checkpoint(checkpoint=broken, benchmark="gsm8k", limit=None, max_tokens=8,
                            log_dir=tmp_path / "logs", provider="hf", dataset_path=dataset, templates_dir=templates_dir)


@pytest.mark.slow
def test_real_benchmark_without_its_dataset_names_it(checkpoint: Path, tmp_path: Path, templates_dir: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # An empty Hugging Face cache, offline: the real inspect_evals gsm8k task cannot load openai/gsm8k.
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    with pytest.raises(DatasetUnavailable, match="gsm8k needs dataset openai/gsm8k .*split test.*ConnectionError"):
        evaluate_checkpoint(checkpoint=checkpoint, benchmark="gsm8k", limit=3, max_tokens=8,
                            log_dir=tmp_path / "logs", provider="hf", templates_dir=templates_dir)


@pytest.mark.slow
def test_judged_benchmarks_need_a_judge_model(checkpoint: Path, tmp_path: Path, templates_dir: Path) -> None:
    with pytest.raises(JudgeModelNotConfigured, match="healthbench is scored by an LLM judge.*PTB_EVAL_JUDGE_MODEL"):
        evaluate_checkpoint(checkpoint=checkpoint, benchmark="healthbench", limit=3, max_tokens=8,
                            log_dir=tmp_path / "logs", provider="hf", templates_dir=templates_dir)
    with pytest.raises(DatasetUnavailable, match="arenahardwriting .*pairwise judging"):
        evaluate_checkpoint(checkpoint=checkpoint, benchmark="arenahardwriting", limit=3, max_tokens=8,
                            log_dir=tmp_path / "logs", provider="hf", templates_dir=templates_dir,
                            judge_model="mockllm/model")


@pytest.mark.slow
def test_missing_local_dataset_names_the_file(checkpoint: Path, tmp_path: Path, templates_dir: Path) -> None:
    with pytest.raises(DatasetUnavailable, match="nope.jsonl"):
        evaluate_checkpoint(checkpoint=checkpoint, benchmark="gsm8k", limit=3, max_tokens=8,
                            log_dir=tmp_path / "logs", provider="hf", dataset_path=tmp_path / "nope.jsonl",
                            templates_dir=templates_dir)


def _fake_attempts(monkeypatch: pytest.MonkeyPatch, error: str) -> list[int]:
    """Replaces the attempt process (it is not started) with one failing with ``error``; returns the tokens tried."""
    tried: list[int] = []

    def fail(self) -> tuple[str, None]:  # type: ignore[no-untyped-def]
        tried.append(json.loads(self.spec_file.read_text())["eval_settings"]["max_tokens"])
        return error, None

    monkeypatch.setattr(runner._AttemptProcess, "run", fail)
    return tried


def test_token_limit_errors_walk_down_the_ladder(checkpoint: Path, tmp_path: Path, dataset: Path,
                                                 templates_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tried = _fake_attempts(monkeypatch, "This model's maximum context length is 2048 tokens")
    with pytest.raises(EvaluationFailed, match="failed after 3 attempts"):
        evaluate_checkpoint(checkpoint=checkpoint, benchmark="gsm8k", limit=None, max_tokens=None,
                            log_dir=tmp_path / "logs", provider="hf", dataset_path=dataset, templates_dir=templates_dir)
    assert tried == [4000, 3000, 2000]


def test_other_errors_use_every_attempt_of_every_rung(checkpoint: Path, tmp_path: Path, dataset: Path,
                                                      templates_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tried = _fake_attempts(monkeypatch, "RuntimeError: connection reset")
    with pytest.raises(EvaluationFailed, match="failed after 9 attempts"):
        evaluate_checkpoint(checkpoint=checkpoint, benchmark="aime2025", limit=None, max_tokens=None,
                            log_dir=tmp_path / "logs", provider="hf", dataset_path=dataset, templates_dir=templates_dir)
    assert tried == [16000] * 4 + [12000] * 3 + [8000] * 2


def test_out_of_memory_is_retried_like_any_failure(checkpoint: Path, tmp_path: Path, dataset: Path,
                                                   templates_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # run_task.sh: an attempt that ran out of memory is followed by the next attempt in a fresh process.
    tried = _fake_attempts(monkeypatch, "torch.OutOfMemoryError: CUDA out of memory")
    with pytest.raises(EvaluationFailed, match="failed after 9 attempts: 4000 tokens: torch.OutOfMemoryError"):
        evaluate_checkpoint(checkpoint=checkpoint, benchmark="gsm8k", limit=None, max_tokens=None,
                            log_dir=tmp_path / "logs", provider="hf", dataset_path=dataset, templates_dir=templates_dir)
    assert tried == [4000] * 4 + [3000] * 3 + [2000] * 2


@pytest.mark.slow
def test_an_attempt_after_out_of_memory_runs_in_a_fresh_process(
    checkpoint: Path, tmp_path: Path, dataset: Path, templates_dir: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_run = runner._AttemptProcess.run
    calls: list[int] = []

    def first_one_runs_out_of_memory(self):  # type: ignore[no-untyped-def]
        # The first attempt's process runs for real; its result is replaced by the error vLLM gives on OOM.
        result = real_run(self)
        calls.append(self.pid)
        return ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", None) if len(calls) == 1 \
            else result

    monkeypatch.setattr(runner._AttemptProcess, "run", first_one_runs_out_of_memory)
    # The ladder's first rung, at 16 new tokens instead of 4,000 so that the untrained model's answers end soon.
    monkeypatch.setattr(runner, "ladder", lambda task: [(16, 4), (12, 3), (8, 2)])
    outcome = evaluate_checkpoint(checkpoint=checkpoint, benchmark="gsm8k", limit=None, max_tokens=None,
                                  log_dir=tmp_path / "logs", provider="hf", dataset_path=dataset,
                                  templates_dir=templates_dir)
    first, second = outcome.attempts
    assert (first.max_tokens, second.max_tokens) == (16, 16) and "out of memory" in first.error
    assert second.error is None and outcome.settings["max_tokens"] == 16
    assert first.pid and second.pid and len({first.pid, second.pid, os.getpid()}) == 3
    assert first.exit_code == second.exit_code == 0


@pytest.mark.slow
def test_it_scores_a_local_gsm8k_format_task(checkpoint: Path, tmp_path: Path, dataset: Path,
                                             templates_dir: Path) -> None:
    progress: list[tuple[int, int]] = []
    outcome = evaluate_checkpoint(
        checkpoint=checkpoint, benchmark="gsm8k", limit=None, max_tokens=16, log_dir=tmp_path / "logs",
        provider="auto", dataset_path=dataset, templates_dir=templates_dir,
        on_progress=lambda done, total: progress.append((done, total)),
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
    assert outcome.inspect_version == metadata.version("inspect_ai")  # the installed one, recorded as it is
    assert outcome.chat_template_sha256 is not None and len(outcome.chat_template_sha256) == 64
    assert outcome.settings["max_tokens"] == 16
    assert outcome.settings["family"] == "qwen" and outcome.settings["chat_template_file"] == "qwen3.jinja"
    assert outcome.settings["chat_template_is_harness"] is False  # the tests' own ChatML, not the harness's bytes
    assert (outcome.settings["timeout"], outcome.settings["attempt_timeout"]) == (18_000_000, 18_000_000)
    assert outcome.versions["inspect_evals"] == "0.3.103" and outcome.versions["torch"] == metadata.version("torch")
    assert outcome.versions["harness"]["commit"].startswith("9082063")
    assert outcome.versions["harness"]["inspect_evals_commit"].startswith("06001a83")
    assert [a.max_tokens for a in outcome.attempts] == [16]
    assert outcome.finished >= outcome.started and outcome.seconds > 0


@pytest.mark.slow
def test_cancel_stops_between_samples(checkpoint: Path, tmp_path: Path, dataset: Path, templates_dir: Path) -> None:
    progress: list[tuple[int, int]] = []
    with pytest.raises(EvaluationCancelled, match="between samples"):
        evaluate_checkpoint(
            # humaneval: max_connections 1, so samples run one after another.
            checkpoint=checkpoint, benchmark="humaneval", limit=None, max_tokens=16, log_dir=tmp_path / "logs",
            provider="hf", dataset_path=dataset, templates_dir=templates_dir,
            on_progress=lambda done, total: progress.append((done, total)),
            should_cancel=lambda: len(progress) >= 1,
        )
    assert progress == [(1, 3)]


@pytest.mark.slow
def test_the_deadline_kills_the_attempt(checkpoint: Path, tmp_path: Path, templates_dir: Path) -> None:
    long = tmp_path / "long.jsonl"
    long.write_text("".join(json.dumps({"input": f"What is {i} + {i}?", "target": str(2 * i)}) + "\n"
                            for i in range(300)))
    pids: list[int] = []
    started = time.monotonic()
    with pytest.raises(EvaluationTimedOut, match="ran past its deadline"):
        evaluate_checkpoint(checkpoint=checkpoint, benchmark="humaneval", limit=None, max_tokens=64,
                            log_dir=tmp_path / "logs", provider="hf", dataset_path=long, templates_dir=templates_dir,
                            on_progress=lambda done, total: pids.append(done), deadline=time.monotonic() + 25)
    assert 25 <= time.monotonic() - started < 60
    assert len(pids) < 300  # killed long before the end


HEALTHBENCH_RECORDS = [  # made-up conversations in HealthBench's record format (prompt, rubrics, example_tags)
    {"prompt_id": "synthetic-1", "prompt": [{"role": "user", "content": "I have a mild headache. What should I do?"}],
     "rubrics": [{"criterion": "Suggests rest and drinking water.", "points": 5, "tags": ["axis:completeness"]},
                 {"criterion": "Says to seek care if it is sudden and severe.", "points": 3, "tags": ["axis:accuracy"]}],
     "example_tags": ["theme:context_seeking"]},
    {"prompt_id": "synthetic-2", "prompt": [{"role": "user", "content": "Can I take ibuprofen with food?"}],
     "rubrics": [{"criterion": "Says food can reduce stomach upset.", "points": 4, "tags": ["axis:accuracy"]}],
     "example_tags": ["theme:communication"]},
]


@pytest.mark.slow
def test_healthbench_is_graded_by_the_configured_judge_and_a_judge_without_verdicts_is_no_score(
    checkpoint: Path, tmp_path: Path, templates_dir: Path,
) -> None:
    # inspect's mockllm stands in for gpt-5-mini (no API here): offline it cannot even count tokens, so every rubric
    # item comes back unjudged. inspect_evals would score that 0.0; the harness's grader raises; so do we.
    data = tmp_path / "healthbench.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in HEALTHBENCH_RECORDS))
    with pytest.raises(EvaluationFailed, match=r"the judge mockllm/model gave no usable verdict on 3 of 3 rubric items"):
        evaluate_checkpoint(checkpoint=checkpoint, benchmark="healthbench", limit=None, max_tokens=8,
                            log_dir=tmp_path / "logs", provider="hf", dataset_path=data, templates_dir=templates_dir,
                            judge_model="mockllm/model")
    log = read_eval_log(str(next((tmp_path / "logs").glob("*.eval"))))
    assert log.eval.task == "inspect_evals/healthbench" and log.results.total_samples == 2
    assert log.results.scores[0].metrics["bootstrap_score"].value == 0.0  # what would have been stored
