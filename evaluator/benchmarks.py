"""What the benchmark's own `src/eval/tasks/<task>/evaluate.py` runs for each PostTrainBench task.

We follow one harness revision (``HARNESS``): aisa-group/PostTrainBench ``main`` at 9082063 (2026-04-07). Every
value is read from that revision; the per-benchmark ones live in the suite file (``suites/posttrainbench.json``,
``benchmarks[].evaluation``, read through ``ptbsite.suites``): the inspect task and its dataset, `max_connections`,
`gpu_memory_utilization`, `max_tokens`, the vLLM `model_args` (chat template per model family, the bfcl tool
parser) and the generation settings passed to `inspect_ai.eval` (evaluate.py of each task); the retry ladder and
`--limit -1` at final evaluation (`src/run_task.sh`, spec section 1.3); the pins of the evaluation container
(`containers/vllm_debug.def`, `containers/requirements-direct.txt`). The score is the task's accuracy metric, a
fraction 0..1 (spec section 4.1). Nothing here imports inspect-ai at module level: the web server reads these specs too.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ptbsite.suites import Benchmark, get_suite, suite_ids

from evaluator.errors import (
    ChatTemplateMissing,
    CheckpointLoadError,
    DatasetUnavailable,
    JudgeModelNotConfigured,
    UnknownModelFamily,
)

if TYPE_CHECKING:
    from inspect_ai import Task

Family = Literal["qwen", "llama", "gemma", "smollm"]
FAMILIES: tuple[Family, ...] = ("qwen", "llama", "gemma", "smollm")


@dataclass(frozen=True)
class HarnessRevision:
    """The harness revision this evaluator follows, recorded in every evaluation's provenance."""

    repository: str
    commit: str
    date: str
    inspect_evals_commit: str
    inspect_evals_release: str
    vllm: str
    transformers: str
    inspect_ai: str
    template_commit: str

    def as_dict(self) -> dict[str, str]:
        return dict(self.__dict__)


HARNESS = HarnessRevision(
    repository="aisa-group/PostTrainBench",
    commit="9082063a62e10e040f1acacdec2ccfc1467e0c00",
    date="2026-04-07",
    # containers/vllm_debug.def: `git checkout 06001a83...` of UKGovernmentBEIS/inspect_evals, which builds as
    # 0.3.103.dev83 (83 commits after the 0.3.102 tag); the PyPI release closest to it is 0.3.103.
    inspect_evals_commit="06001a83e6d7c709c2ede0570dce7f1031a0bad8",
    inspect_evals_release="0.3.103",
    vllm="0.11.0",
    transformers="4.57.3",
    # requirements-direct.txt pins inspect-ai 0.3.150; the container then installs the
    # rank-and-file/inspect_ai_vllm_stdout fork over it (vLLM's stdout in the log, same scoring).
    inspect_ai="0.3.150",
    # src/eval/templates/qwen3.jinja: added in 248f223 (2026-02-06), fixed in 8b70632 (2026-02-10).
    template_commit="8b70632",
)

# sha256 of the harness's src/eval/templates/* at HARNESS.commit: provenance says whether the template a worker
# used is the harness's own. (llama3.jinja is named by evaluate.py but absent from the harness's folder.)
HARNESS_TEMPLATE_SHA256 = {
    "qwen3.jinja": "ddd80c7700049450b953ae6acffa1731d696c5df5b1fbfb2de7e4ead17d708c6",
    "gemma3.jinja": "7de1c58e208eda46e9c7f86397df37ec49883aeece39fb961e0a6b24088dd3c4",
    "gemma3_tool_calling.jinja": "ce729a8a0045b4efb594616f0490707a13a5ced4d10ab5b471adb556c994a297",
    "smollm.jinja": "b81bcca37cade6b21c04fec447f33e86bd07981b92d46718d078f56bf6026f82",
}

# evaluate.py passes these to inspect_ai.eval for every task ("timeout=18000000, attempt_timeout=18000000").
HARNESS_TIMEOUT_S = 18_000_000


@dataclass(frozen=True)
class HfDataset:
    """A Hugging Face dataset as the task loads it: ``repo`` with ``name`` (config), ``data_dir``, ``revision``,
    and the ``splits`` the task reads (the first one is scored; gsm8k reads 10 few-shot examples from train)."""

    repo: str
    splits: tuple[str, ...]
    name: str | None = None
    data_dir: str | None = None
    revision: str | None = None

    def describe(self) -> str:
        """E.g. "openai/gsm8k (data_dir main, split test)"."""
        parts = [f"config {self.name}" if self.name else "", f"data_dir {self.data_dir}" if self.data_dir else "",
                 f"revision {self.revision[:8]}" if self.revision else "", f"split {self.splits[0]}"]
        return f"{self.repo} ({', '.join(p for p in parts if p)})"


@dataclass(frozen=True)
class BenchmarkSpec:
    """How one benchmark is evaluated (values from the harness's evaluate.py of the task, HARNESS.commit).

    `inspect_task` names the task evaluate.py runs (`inspect_evals/<name>`, or `gpqa_main` which evaluate.py
    defines itself, or for the LLM-judged tasks the inspect_evals task we score them with); `dataset` is what it
    loads. `max_tokens` lists the retry ladder's rungs (new tokens) and `attempts` how many tries each rung gets
    (run_task.sh). `metric`/`stderr_metric` name the score in the task's results (the first scorer's metrics).
    `log_realtime` is what evaluate.py passes (None: not passed; bfcl's omits it). `judge` names the LLM judge of
    the judged tasks (harness: gpt-5-mini via the OpenAI API), whose model a worker must be configured with.
    `local_scorer` scores a local JSONL stand-in for the dataset: "match" (the last number equals the target)
    for numeric answers, "includes" (the target occurs in the answer) otherwise. `harness_limit` is evaluate.py's
    default `--limit` for agents' own test runs (final evaluation passes `--limit -1`: the full set).
    """

    task_id: str
    inspect_task: str | None
    dataset: HfDataset | None
    dataset_note: str
    max_tokens: tuple[int, int, int]
    max_connections: int
    gpu_memory_utilization: float
    local_scorer: Literal["match", "includes"]
    metric: str = "accuracy"
    stderr_metric: str | None = "stderr"
    log_realtime: bool | None = False
    judge: str | None = None
    attempts: tuple[int, int, int] = (4, 3, 2)
    harness_limit: int | None = None
    notes: tuple[str, ...] = field(default=())

    def describe_dataset(self) -> str:
        """The dataset as a human reads it, e.g. "openai/gsm8k (data_dir main, split test)"."""
        return self.dataset.describe() if self.dataset else self.dataset_note


def _spec(benchmark: Benchmark) -> BenchmarkSpec:
    """The BenchmarkSpec of a suite benchmark's ``evaluation`` (suites/<suite>.json, typed by ptbsite.suites)."""
    ev = benchmark.evaluation
    assert ev is not None
    data = ev.dataset
    return BenchmarkSpec(
        task_id=benchmark.id, inspect_task=ev.inspect_task,
        dataset=HfDataset(data.repo, tuple(data.splits), name=data.name, data_dir=data.data_dir,
                          revision=data.revision) if data else None,
        dataset_note=ev.dataset_note, max_tokens=(ev.max_tokens[0], ev.max_tokens[1], ev.max_tokens[2]),
        max_connections=ev.max_connections, gpu_memory_utilization=ev.gpu_memory_utilization,
        local_scorer=ev.local_scorer, metric=ev.metric, stderr_metric=ev.stderr_metric, log_realtime=ev.log_realtime,
        judge=ev.judge, attempts=(ev.attempts[0], ev.attempts[1], ev.attempts[2]), harness_limit=ev.harness_limit,
        notes=tuple(ev.notes),
    )


# Every benchmark of every suite that says how it is evaluated (``benchmarks[].evaluation``): PostTrainBench's seven.
BENCHMARKS: dict[str, BenchmarkSpec] = {
    benchmark.id: _spec(benchmark)
    for suite_id in suite_ids() for benchmark in get_suite(suite_id).benchmarks if benchmark.evaluation
}

HEALTHBENCH_DATA = Path("src/eval/tasks/healthbench/evaluation_code/data/healthbench.jsonl")  # in the harness


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


def model_family(checkpoint: Path) -> tuple[Family, str]:
    """The model family evaluate.py's `model_type()` assigns, and why: ``(family, "path" | "architecture")``.

    As evaluate.py: first the model path, lower-cased, is searched for "qwen", "llama", "gemma", "smollm" in that
    order; then `config.json`'s `architectures[0]` for "gemma", "llama", "qwen", "smollm". The harness evaluates
    `<results dir>/<method>/<run>/final_model`; its results-dir prefix is site-specific (as ours is), so the path
    searched is the part both share: the checkpoint's last three components, `<method>/<run>/final_model` (the
    run directory names the base model, e.g. `gsm8k_Qwen_Qwen3-1.7B-Base_17000001`).

    Raises UnknownModelFamily where evaluate.py raises ValueError (no family in path or architecture), and
    CheckpointLoadError if config.json is unreadable when the path named no family.
    """
    tail = "/".join(checkpoint.parts[-3:]).lower()
    for family in FAMILIES:
        if family in tail:
            return family, "path"
    try:
        config = json.loads((checkpoint / "config.json").read_text())
        architecture = str(config["architectures"][0]).lower()
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise CheckpointLoadError(f"cannot read architectures from {checkpoint / 'config.json'}: {exc}") from exc
    for family in ("gemma", "llama", "qwen", "smollm"):
        if family in architecture:
            return family, "architecture"  # type: ignore[return-value]
    raise UnknownModelFamily(
        f"cannot tell the model family of {checkpoint}: neither its path ({tail}) nor architectures[0] "
        f"({architecture!r}) names qwen, llama, gemma or smollm (the harness's evaluate.py raises ValueError too)")


def chat_template_file(task_id: str, family: Family) -> str:
    """The file in the harness's `templates/` directory that evaluate.py passes as `chat_template`.

    qwen -> qwen3.jinja (since harness commit 248f223), llama -> llama3.jinja, smollm -> smollm.jinja, gemma ->
    gemma3.jinja, except bfcl, which gives gemma gemma3_tool_calling.jinja.
    """
    if family == "gemma":
        return "gemma3_tool_calling.jinja" if task_id == "bfcl" else "gemma3.jinja"
    return {"qwen": "qwen3.jinja", "llama": "llama3.jinja", "smollm": "smollm.jinja"}[family]


def chat_template_path(task_id: str, family: Family, templates_dir: Path | None) -> Path:
    """`templates_dir / chat_template_file(...)`; raises ChatTemplateMissing when the folder or file is absent."""
    name = chat_template_file(task_id, family)
    if templates_dir is None or not (templates_dir / name).is_file():
        raise ChatTemplateMissing(
            f"the {family} family is evaluated with the harness's template {name} (as evaluate.py does); set "
            f"PTB_TEMPLATES_DIR (or PTB_HARNESS_DIR) on the worker to the harness's src/eval/templates "
            f"(got {templates_dir or 'none'})")
    return templates_dir / name


def tool_call_parser(task_id: str, family: Family) -> str | None:
    """bfcl's vLLM `tool_call_parser`: hermes for gemma, qwen and smollm, llama3_json for llama; None elsewhere."""
    if task_id != "bfcl":
        return None
    return "llama3_json" if family == "llama" else "hermes"


def vllm_model_args(spec: BenchmarkSpec, family: Family, templates_dir: Path | None) -> dict[str, Any]:
    """The `model_args` evaluate.py passes with `model="vllm/<path>"`: `gpu_memory_utilization`, the family's
    `chat_template` (a path: `os.path.join(templates_dir, file)`), and for bfcl `enable_auto_tool_choice: None`
    and its `tool_call_parser`. Raises ChatTemplateMissing when the template file is absent."""
    args: dict[str, Any] = {}
    if parser := tool_call_parser(spec.task_id, family):
        args["enable_auto_tool_choice"] = None
        args["tool_call_parser"] = parser
    args["gpu_memory_utilization"] = spec.gpu_memory_utilization
    args["chat_template"] = os.path.join(str(templates_dir), chat_template_file(spec.task_id, family))
    chat_template_path(spec.task_id, family, templates_dir)  # raises when absent
    return args


def eval_settings(spec: BenchmarkSpec, max_tokens: int) -> dict[str, Any]:
    """The generation and run settings evaluate.py passes to `inspect_ai.eval` besides task, model and limit:
    `max_tokens`, `max_connections`, `timeout`/`attempt_timeout` (18,000,000 s), `score_display=False` and, where
    evaluate.py passes it, `log_realtime=False`. (evaluate.py's `log_format='json'` is replaced by "eval", the
    format the server stores; it does not change what is scored.)"""
    settings: dict[str, Any] = {
        "max_tokens": max_tokens, "max_connections": spec.max_connections, "timeout": HARNESS_TIMEOUT_S,
        "attempt_timeout": HARNESS_TIMEOUT_S, "score_display": False,
    }
    if spec.log_realtime is not None:
        settings["log_realtime"] = spec.log_realtime
    return settings


def load_task(spec: BenchmarkSpec, *, dataset_path: Path | None = None, judge_model: str = "",
              healthbench_data: Path | None = None) -> Task:
    """The inspect-ai Task for a benchmark, as evaluate.py builds it.

    Without `dataset_path` (or with a folder, which the caller has made the `datasets` cache, see
    evaluator.hf_cache): the real task (inspect_evals' gsm8k, aime2025, bfcl, humaneval with `sandbox="local"`;
    gpqa_main as evaluate.py defines it), reading its Hugging Face dataset from the worker's cache (workers are
    offline). With a `.jsonl` file: for healthbench, the task's own dataset argument (`local_path`, HealthBench
    records); for the others a local stand-in, one `{"input": ..., "target": ...}` object a line, answered by
    plain generation and scored with `spec.local_scorer` (metrics accuracy and stderr).

    The LLM-judged benchmarks need `judge_model` (an inspect model name): healthbench is scored by inspect_evals'
    healthbench task with that judge on `healthbench_data` (the harness's data file) or the JSONL given;
    arenahardwriting is refused (no inspect task implements its pairwise judging).

    Raises DatasetUnavailable naming the dataset (or the local path) when it cannot be loaded, and
    JudgeModelNotConfigured for a judged benchmark without a judge model.
    """
    if spec.judge is not None:
        return _judged_task(spec, dataset_path=dataset_path, judge_model=judge_model, data=healthbench_data)
    if dataset_path is not None and dataset_path.suffix == ".jsonl":
        return _local_task(spec, dataset_path)
    source = f"the Hugging Face cache {dataset_path}" if dataset_path else "this worker's Hugging Face cache"
    unavailable = f"{spec.task_id} needs dataset {spec.describe_dataset()}, not available in {source}"
    try:
        if spec.task_id == "gpqamain":
            return _gpqa_main(spec)
        import importlib

        module = importlib.import_module(f"inspect_evals.{spec.task_id}")
        task_fn = getattr(module, spec.task_id)
        # humaneval runs its tests in a local sandbox, as in evaluate.py.
        return task_fn(sandbox="local") if spec.task_id == "humaneval" else task_fn()
    except ImportError as exc:
        raise DatasetUnavailable(f"{unavailable}: {spec.inspect_task} cannot be imported ({exc})") from exc
    except Exception as exc:  # datasets/huggingface_hub raise many types when offline
        raise DatasetUnavailable(f"{unavailable}: {type(exc).__name__}: {exc}") from exc


def check_inputs(spec: BenchmarkSpec, *, dataset_path: Path | None, judge_model: str = "",
                 healthbench_data: Path | None = None) -> None:
    """What load_task would refuse before loading anything: a local dataset that does not exist, a judged
    benchmark without a judge model or data, arenahardwriting. Raises DatasetUnavailable or
    JudgeModelNotConfigured; cheap (no inspect import), so a runner checks before it starts a process."""
    if spec.judge is not None:
        _judged_inputs(spec, dataset_path=dataset_path, judge_model=judge_model, data=healthbench_data)
    elif dataset_path is not None and not dataset_path.exists():
        raise DatasetUnavailable(f"{spec.task_id} local dataset {dataset_path} does not exist")


def cannot_rerun(spec: BenchmarkSpec) -> str | None:
    """Why no worker here can rerun ``spec`` at all, whatever its settings, or None: an LLM-judged benchmark
    without an inspect task for its judging (arenahardwriting: pairwise judging against the harness's baseline
    answers). The server refuses such a rerun when it is queued (evaluator.services.queue_rerun); a worker
    refuses it the same way."""
    if spec.judge is not None and spec.task_id != "healthbench":
        return (f"{spec.task_id} ({spec.dataset_note}) cannot be rerun here: {spec.notes[0] if spec.notes else 'no inspect task'}; "
                "rerun it with the harness's evaluate.py")
    return None


def _judged_inputs(spec: BenchmarkSpec, *, dataset_path: Path | None, judge_model: str, data: Path | None) -> Path:
    refused = cannot_rerun(spec)
    if refused:
        raise DatasetUnavailable(refused)
    if not judge_model:
        raise JudgeModelNotConfigured(
            f"{spec.task_id} is scored by an LLM judge (the harness uses {spec.judge} through the OpenAI API); "
            "no judge model is configured on this worker: set PTB_EVAL_JUDGE_MODEL to an inspect-ai model name "
            "(e.g. openai/gpt-5-mini, with OPENAI_API_KEY)")
    path = dataset_path if dataset_path is not None else data
    if path is None or not path.is_file():
        raise DatasetUnavailable(
            f"healthbench needs {spec.dataset_note}: set PTB_HARNESS_DIR on the worker or pass a HealthBench "
            f"JSONL as the dataset (got {path or 'none'})")
    return path


def _judged_task(spec: BenchmarkSpec, *, dataset_path: Path | None, judge_model: str, data: Path | None) -> Task:
    path = _judged_inputs(spec, dataset_path=dataset_path, judge_model=judge_model, data=data)
    from inspect_evals.healthbench import healthbench

    try:
        # As the harness's grader.py asks gpt-5 models: no temperature, up to 49,152 completion tokens. inspect_evals
        # annotates judge_temperature as float, but passes it on to GenerateConfig(temperature: float | None), where
        # None sends no temperature at all: what the harness does, and what gpt-5 models accept.
        return healthbench(local_path=str(path), judge_model=judge_model, include_subset_scores=False,
                           judge_temperature=None, judge_max_tokens=49152)  # type: ignore[arg-type]
    except Exception as exc:  # noqa: BLE001 - a malformed file must name itself
        raise DatasetUnavailable(f"healthbench dataset {path} cannot be read: {type(exc).__name__}: {exc}") from exc


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
    # evaluate.py defines this task itself (inspect_evals' GPQA is diamond only): shuffled choices, CoT, 1 epoch.
    from inspect_ai import Task
    from inspect_ai.dataset import Sample, hf_dataset
    from inspect_ai.scorer import choice
    from inspect_ai.solver import multiple_choice

    def record_to_sample(record: dict[str, Any]) -> Sample:
        return Sample(
            input=record["Question"],
            choices=[str(record["Correct Answer"]), str(record["Incorrect Answer 1"]),
                     str(record["Incorrect Answer 2"]), str(record["Incorrect Answer 3"])],
            target="A",
            id=record["Record ID"],
        )

    assert spec.dataset is not None
    dataset = hf_dataset(path=spec.dataset.repo, name=spec.dataset.name, split=spec.dataset.splits[0],
                         sample_fields=record_to_sample, shuffle_choices=True)
    return Task(name="gpqa_main", dataset=dataset, solver=[multiple_choice(cot=True)], scorer=choice(), epochs=1)
