"""What the benchmark's own `src/eval/tasks/<task>/evaluate.py` runs for each PostTrainBench task.

Sources: the retry ladder is spec section 1.3 (`final_eval_K.txt`); the score is the `accuracy` metric,
a fraction 0..1 (spec section 4.1). The inspect task, dataset, `max_connections`, `gpu_memory_utilization`
and the chat template per model family are read from the upstream evaluate.py scripts
(aisa-group/PostTrainBench, `src/eval/tasks/<task>/evaluate.py`); the spec does not cover them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from evaluator.errors import CheckpointLoadError, DatasetUnavailable

if TYPE_CHECKING:
    from inspect_ai import Task

Family = Literal["qwen", "llama", "gemma", "smollm", "other"]


@dataclass(frozen=True)
class BenchmarkSpec:
    """How one benchmark is evaluated.

    `inspect_task` is the registry name evaluate.py passes to inspect-ai (`inspect_evals/...`), or None where
    evaluate.py builds the task itself (gpqamain) or does not use inspect-ai at all (arenahardwriting and
    healthbench: a `vllm serve` plus a gpt-5-mini judge; `judge` names it). `dataset`/`dataset_name`/
    `dataset_split` identify the Hugging Face dataset. `max_tokens` lists the retry ladder's rungs (new
    tokens) and `attempts` how many tries each rung gets. `local_scorer` is the scorer used when a local
    JSONL replaces the dataset: "match" (the last number in the answer equals the target) for tasks whose
    answer is a number, "includes" (the target occurs in the answer) otherwise.
    """

    task_id: str
    inspect_task: str | None
    inspect_module: str | None
    dataset: str
    dataset_name: str | None
    dataset_split: str
    max_tokens: tuple[int, int, int]
    max_connections: int
    gpu_memory_utilization: float
    local_scorer: Literal["match", "includes"]
    judge: str | None = None
    attempts: tuple[int, int, int] = (4, 3, 2)

    def describe_dataset(self) -> str:
        """The dataset as a human reads it, e.g. "openai/gsm8k (config main, split test)"."""
        config = f"config {self.dataset_name}, " if self.dataset_name else ""
        return f"{self.dataset} ({config}split {self.dataset_split})"


_LONG = (16000, 12000, 8000)
_SHORT = (4000, 3000, 2000)
_JUDGED = (16384, 12288, 8192)

BENCHMARKS: dict[str, BenchmarkSpec] = {
    spec.task_id: spec
    for spec in [
        BenchmarkSpec(
            task_id="aime2025", inspect_task="inspect_evals/aime2025", inspect_module="inspect_evals.aime2025",
            dataset="math-ai/aime25", dataset_name=None, dataset_split="test",
            max_tokens=_LONG, max_connections=6, gpu_memory_utilization=0.8, local_scorer="match",
        ),
        BenchmarkSpec(
            task_id="arenahardwriting", inspect_task=None, inspect_module=None,
            dataset="arena-hard-v2.0 (harness evaluation_code/data)", dataset_name=None,
            dataset_split="question.jsonl",
            max_tokens=_JUDGED, max_connections=1, gpu_memory_utilization=0.8, local_scorer="includes",
            judge="gpt-5-mini",
        ),
        BenchmarkSpec(
            task_id="bfcl", inspect_task="inspect_evals/bfcl", inspect_module="inspect_evals.bfcl",
            dataset="gorilla-llm/Berkeley-Function-Calling-Leaderboard", dataset_name=None, dataset_split="test",
            max_tokens=_LONG, max_connections=6, gpu_memory_utilization=0.8, local_scorer="includes",
        ),
        BenchmarkSpec(
            task_id="gpqamain", inspect_task=None, inspect_module=None,
            dataset="Idavidrein/gpqa", dataset_name="gpqa_main", dataset_split="train",
            max_tokens=_LONG, max_connections=6, gpu_memory_utilization=0.8, local_scorer="includes",
        ),
        BenchmarkSpec(
            task_id="gsm8k", inspect_task="inspect_evals/gsm8k", inspect_module="inspect_evals.gsm8k",
            dataset="openai/gsm8k", dataset_name="main", dataset_split="test",
            max_tokens=_SHORT, max_connections=2, gpu_memory_utilization=0.3, local_scorer="match",
        ),
        BenchmarkSpec(
            task_id="healthbench", inspect_task=None, inspect_module=None,
            dataset="healthbench (harness evaluation_code/data_loader.py)", dataset_name=None,
            dataset_split="easy",
            max_tokens=_JUDGED, max_connections=1, gpu_memory_utilization=0.8, local_scorer="includes",
            judge="gpt-5-mini",
        ),
        BenchmarkSpec(
            task_id="humaneval", inspect_task="inspect_evals/humaneval", inspect_module="inspect_evals.humaneval",
            dataset="openai/openai_humaneval", dataset_name=None, dataset_split="test",
            max_tokens=_SHORT, max_connections=1, gpu_memory_utilization=0.3, local_scorer="includes",
        ),
    ]
}


def spec_for(task_id: str) -> BenchmarkSpec:
    """The BenchmarkSpec of a PostTrainBench task id (e.g. "gsm8k"); raises KeyError naming the known ids."""
    try:
        return BENCHMARKS[task_id]
    except KeyError:
        raise KeyError(f"unknown benchmark {task_id!r}; known: {', '.join(sorted(BENCHMARKS))}") from None


def ladder(task_id: str) -> list[tuple[int, int]]:
    """The max-token retry ladder as [(max_tokens, attempts), ...], first rung first (spec section 1.3).

    E.g. gsm8k -> [(4000, 4), (3000, 3), (2000, 2)]. Raises KeyError for an unknown task id.
    """
    spec = spec_for(task_id)
    return list(zip(spec.max_tokens, spec.attempts))


def model_family(checkpoint: Path) -> Family:
    """The model family evaluate.py assigns, from `config.json`'s `architectures[0]`.

    evaluate.py first looks for the family name in the model path, but at final evaluation that path is
    `final_model`, so the architecture decides; we use only the architecture, because our paths contain run
    directory names. Where evaluate.py raises for an unknown architecture we return "other" (the
    tokenizer's own template is used). Raises CheckpointLoadError if config.json is unreadable.
    """
    try:
        config = json.loads((checkpoint / "config.json").read_text())
        architecture = str(config["architectures"][0]).lower()
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise CheckpointLoadError(f"cannot read architectures from {checkpoint / 'config.json'}: {exc}") from exc
    for family in ("gemma", "llama", "qwen", "smollm"):
        if family in architecture:
            return family  # type: ignore[return-value]
    return "other"


def chat_template_file(task_id: str, family: Family) -> str | None:
    """The file in the harness's `templates/` directory that evaluate.py passes as `chat_template`.

    None means the checkpoint's own tokenizer template (qwen, and "other"). llama -> llama3.jinja,
    smollm -> smollm.jinja, gemma -> gemma3.jinja, except bfcl, which gives gemma gemma3_tool_calling.jinja.
    """
    if family == "gemma":
        return "gemma3_tool_calling.jinja" if task_id == "bfcl" else "gemma3.jinja"
    return {"llama": "llama3.jinja", "smollm": "smollm.jinja"}.get(family)


def vllm_tool_args(task_id: str, family: Family) -> dict[str, object]:
    """Extra vLLM server arguments for tool calling: bfcl only (hermes parser; llama3_json for llama)."""
    if task_id != "bfcl":
        return {}
    return {"enable_auto_tool_choice": None, "tool_call_parser": "llama3_json" if family == "llama" else "hermes"}


def load_task(spec: BenchmarkSpec, *, dataset_path: Path | None = None) -> Task:
    """The inspect-ai Task for a benchmark.

    With `dataset_path`: a local JSONL file, one `{"input": ..., "target": ...}` object a line, answered by
    plain generation and scored with `spec.local_scorer` (metrics accuracy and stderr), so any benchmark's
    format can be evaluated without its real dataset. Without it: the task evaluate.py runs, which needs
    inspect_evals and the dataset in the local Hugging Face cache (workers are offline).
    Raises DatasetUnavailable naming the dataset (or the local path) when it cannot be loaded, and for the
    judged benchmarks (arenahardwriting, healthbench), whose answers need an API judge this runner lacks.
    """
    if dataset_path is not None:
        return _local_task(spec, dataset_path)
    unavailable = f"{spec.task_id} needs dataset {spec.describe_dataset()}, not available on this worker"
    if spec.judge is not None:
        raise DatasetUnavailable(f"{unavailable}: it is judged by {spec.judge} outside inspect-ai; "
                                 "pass dataset_path to evaluate a local copy with a local scorer")
    try:
        if spec.task_id == "gpqamain":
            return _gpqa_main(spec)
        import importlib

        module = importlib.import_module(spec.inspect_module or "")
        task_fn = getattr(module, spec.task_id)
        # humaneval runs its tests in a local sandbox, as in evaluate.py.
        return task_fn(sandbox="local") if spec.task_id == "humaneval" else task_fn()
    except ImportError as exc:
        raise DatasetUnavailable(f"{unavailable}: {spec.inspect_task} cannot be imported ({exc})") from exc
    except Exception as exc:  # datasets/huggingface_hub raise many types when offline
        raise DatasetUnavailable(f"{unavailable}: {type(exc).__name__}: {exc}") from exc


def _local_task(spec: BenchmarkSpec, dataset_path: Path) -> Task:
    from inspect_ai import Task
    from inspect_ai.dataset import FieldSpec, json_dataset
    from inspect_ai.scorer import includes, match
    from inspect_ai.solver import generate

    if not dataset_path.is_file():
        raise DatasetUnavailable(f"{spec.task_id} local dataset {dataset_path} does not exist")
    try:
        dataset = json_dataset(str(dataset_path), FieldSpec(input="input", target="target"))
    except Exception as exc:
        raise DatasetUnavailable(f"{spec.task_id} local dataset {dataset_path} is not valid JSONL "
                                 f"with input/target fields: {exc}") from exc
    scorer = match(numeric=True) if spec.local_scorer == "match" else includes()
    return Task(name=spec.task_id, dataset=dataset, solver=generate(), scorer=scorer)


def _gpqa_main(spec: BenchmarkSpec) -> Task:
    # evaluate.py defines this task itself (inspect_evals' GPQA is diamond only): shuffled choices, CoT.
    from inspect_ai import Task
    from inspect_ai.dataset import Sample, hf_dataset
    from inspect_ai.scorer import choice
    from inspect_ai.solver import multiple_choice

    def record_to_sample(record: dict[str, str]) -> Sample:
        return Sample(
            input=record["Question"],
            choices=[record["Correct Answer"], record["Incorrect Answer 1"],
                     record["Incorrect Answer 2"], record["Incorrect Answer 3"]],
            target="A",
            id=record["Record ID"],
        )

    dataset = hf_dataset(path=spec.dataset, name=spec.dataset_name, split=spec.dataset_split,
                         sample_fields=record_to_sample, shuffle_choices=True)
    return Task(name=spec.task_id, dataset=dataset, solver=multiple_choice(cot=True), scorer=choice())
