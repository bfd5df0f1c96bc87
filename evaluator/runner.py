"""Evaluate one checkpoint on one benchmark with inspect-ai, in-process, and return its score.

The same evaluation the benchmark's own evaluate.py runs (see evaluator.benchmarks): `vllm/<checkpoint>` on a
GPU worker, `hf/<checkpoint>` elsewhere, the max-token retry ladder of spec section 1.3, the `accuracy` metric
of spec section 4.1 as the score. No Django here: the caller stores the outcome and the `.eval` log.
"""

from __future__ import annotations

import hashlib
import re
import time
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal

from inspect_ai.hooks import Hooks, SampleEnd, hooks

from evaluator.benchmarks import (
    BenchmarkSpec,
    Family,
    chat_template_file,
    ladder,
    load_task,
    model_family,
    spec_for,
    vllm_tool_args,
)
from evaluator.errors import (
    CheckpointLoadError,
    CheckpointMissing,
    EvaluationCancelled,
    EvaluationFailed,
)

if TYPE_CHECKING:
    from inspect_ai import Task
    from inspect_ai.model import Model

Provider = Literal["vllm", "hf"]

# Error texts of vLLM, transformers and torch when a prompt plus max_tokens does not fit the context.
_TOKEN_LIMIT = re.compile(
    r"maximum context length|max_model_len|context length|max_tokens|max_new_tokens|too many tokens"
    r"|longer than the maximum|exceeds the maximum|prompt is too long|maximum sequence length",
    re.IGNORECASE,
)
_OUT_OF_MEMORY = re.compile(r"out of memory|OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED", re.IGNORECASE)


@dataclass(frozen=True)
class Attempt:
    """One inspect-ai run inside the retry ladder: its max new tokens, error text (None if it scored), seconds."""

    max_tokens: int
    error: str | None
    seconds: float


@dataclass(frozen=True)
class EvalOutcome:
    """A scored evaluation.

    `score` is the `accuracy` metric, a fraction 0..1 (spec section 4.1), `stderr` its standard error (None
    if the scorer reports none); `samples_done` of `samples_total` samples completed in the scoring attempt;
    `log_path` is the `.eval` log of that attempt; `model_id` the inspect model name (`hf/<path>` or
    `vllm/<path>`); `chat_template_sha256` the SHA-256 hex digest of the chat template text used (None if the
    tokenizer has none); `settings` what was run (benchmark, dataset, limit, max_tokens, max_connections,
    family, chat_template_file, model_args); `attempts` every ladder attempt in order, the last one scored;
    `started`/`finished` are UTC datetimes and `seconds` the wall time of the whole call.
    """

    benchmark: str
    score: float
    stderr: float | None
    samples_done: int
    samples_total: int
    log_path: Path
    provider: Provider
    model_id: str
    inspect_version: str
    chat_template_sha256: str | None
    settings: dict[str, Any]
    attempts: list[Attempt]
    started: datetime
    finished: datetime
    seconds: float


def select_provider(provider: str = "auto") -> Provider:
    """The inspect model provider to use: "vllm" or "hf".

    "auto" picks vllm when `torch.cuda.is_available()` and `import vllm` succeeds (GPU workers, as the
    benchmark's evaluate.py does), else hf. "vllm" and "hf" are returned as given; anything else raises
    ValueError. vllm is imported only here and only when CUDA is present.
    """
    if provider in ("vllm", "hf"):
        return provider  # type: ignore[return-value]
    if provider != "auto":
        raise ValueError(f"provider must be 'auto', 'vllm' or 'hf', not {provider!r}")
    import torch

    if not torch.cuda.is_available():
        return "hf"
    try:
        import vllm  # noqa: F401
    except ImportError:
        return "hf"
    return "vllm"


def evaluate_checkpoint(
    *,
    checkpoint: Path,
    benchmark: str,
    limit: int | None,
    max_tokens: int | None,
    log_dir: Path,
    provider: str = "auto",
    dataset_path: Path | None = None,
    templates_dir: Path | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    should_cancel: Callable[[], bool] | None = None,
) -> EvalOutcome:
    """Evaluate `checkpoint` (an HF model directory) on `benchmark` (a task id of evaluator.benchmarks).

    `limit` caps the number of samples (None: the full set, as at final evaluation). `max_tokens` None runs
    the benchmark's retry ladder (spec section 1.3): each rung is tried up to its attempt count; an error
    that looks like a context/token limit moves to the next rung at once. A number runs one attempt with
    that many new tokens. `dataset_path` replaces the benchmark's dataset with a local JSONL (see
    benchmarks.load_task). `templates_dir` is the harness's `templates/` directory, required for the
    families whose evaluate.py passes a template file (gemma, llama, smollm). The `.eval` log of each
    attempt is written into `log_dir`.

    `on_progress(done, total)` is called after each successfully finished sample (inspect's on_sample_end
    hook), `done` counting from 1 within the current attempt. `should_cancel()` is checked before every
    sample starts and between attempts; samples already running finish first.

    Raises CheckpointMissing (no directory or no config.json), CheckpointLoadError (config, tokenizer or
    weights cannot be loaded), DatasetUnavailable (names the dataset), EvaluationCancelled, and
    EvaluationFailed (inspect's error; "out of memory ..." on OOM; the ladder exhausted).
    """
    started = datetime.now(timezone.utc)
    clock = time.monotonic()
    cancel = should_cancel or (lambda: False)
    spec = spec_for(benchmark)
    chosen = select_provider(provider)
    tokenizer_template, context_length = _check_checkpoint(checkpoint)
    family = model_family(checkpoint)
    template_text, template_file = _chat_template(spec, family, checkpoint, templates_dir, tokenizer_template)
    task = load_task(spec, dataset_path=dataset_path)
    cancel_gate = _CancelGate(cancel)
    task = _with_cancel_gate(task, cancel_gate)
    samples_total = _samples_total(task, limit)

    model_id = f"{chosen}/{checkpoint}"
    model_args = _model_args(chosen, checkpoint, spec, family, template_text, template_file)
    rungs = ladder(benchmark) if max_tokens is None else [(max_tokens, 1)]
    log_dir.mkdir(parents=True, exist_ok=True)
    attempts: list[Attempt] = []

    with _load_model(model_id, model_args, context_length) as model:
        for rung_tokens, rung_attempts in rungs:
            for _ in range(rung_attempts):
                if cancel():
                    raise EvaluationCancelled(f"{benchmark} on {checkpoint} cancelled before an attempt")
                attempt_clock = time.monotonic()
                error, log_path = _run_once(
                    task, model, rung_tokens, spec.max_connections, limit, log_dir, samples_total, on_progress
                )
                attempts.append(Attempt(rung_tokens, error, time.monotonic() - attempt_clock))
                if cancel_gate.fired:
                    raise EvaluationCancelled(f"{benchmark} on {checkpoint} cancelled between samples")
                if error is None:
                    return _outcome(
                        log_path, benchmark=benchmark, provider=chosen, model_id=model_id,
                        template_text=template_text, attempts=attempts, started=started, clock=clock,
                        settings={
                            "benchmark": benchmark,
                            "dataset": str(dataset_path) if dataset_path else spec.describe_dataset(),
                            "limit": limit,
                            "max_tokens": rung_tokens,
                            "max_connections": spec.max_connections,
                            "family": family,
                            "chat_template_file": template_file and template_file.name,
                            "model_args": {k: v for k, v in model_args.items() if k != "chat_template"},
                        },
                    )
                if _OUT_OF_MEMORY.search(error):
                    raise EvaluationFailed(f"out of memory evaluating {checkpoint} on {benchmark}: {error}")
                if _TOKEN_LIMIT.search(error):
                    break  # next, smaller rung
    summary = "; ".join(f"{a.max_tokens} tokens: {a.error}" for a in attempts)
    raise EvaluationFailed(f"{benchmark} on {checkpoint} failed after {len(attempts)} attempts: {summary}")


def _check_checkpoint(checkpoint: Path) -> tuple[str | None, int | None]:
    """Fail early on a missing or unloadable checkpoint; return its tokenizer's chat template text and its
    context length in tokens (config `max_position_embeddings`, None if absent)."""
    if not checkpoint.is_dir():
        raise CheckpointMissing(f"checkpoint {checkpoint} does not exist or is not a directory")
    if not (checkpoint / "config.json").is_file():
        raise CheckpointMissing(f"checkpoint {checkpoint} has no config.json")
    from transformers import AutoConfig, AutoTokenizer

    try:
        config = AutoConfig.from_pretrained(checkpoint)
        tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    except Exception as exc:  # transformers raises OSError, ValueError, JSONDecodeError, KeyError ...
        raise CheckpointLoadError(f"cannot load config or tokenizer of {checkpoint}: {exc}") from exc
    return tokenizer.chat_template, getattr(config, "max_position_embeddings", None)


def _chat_template(
    spec: BenchmarkSpec, family: Family, checkpoint: Path, templates_dir: Path | None, tokenizer_template: str | None
) -> tuple[str | None, Path | None]:
    """The chat template text to use and the harness file it came from (None: the tokenizer's own)."""
    name = chat_template_file(spec.task_id, family)
    if name is None:
        return tokenizer_template, None
    if templates_dir is None or not (templates_dir / name).is_file():
        raise EvaluationFailed(
            f"{checkpoint} is evaluated with the harness template {name} (as evaluate.py does); "
            f"pass templates_dir holding it (got {templates_dir})"
        )
    return (templates_dir / name).read_text(), templates_dir / name


def _model_args(
    provider: Provider,
    checkpoint: Path,
    spec: BenchmarkSpec,
    family: Family,
    template_text: str | None,
    template_file: Path | None,
) -> dict[str, Any]:
    """inspect model_args: evaluate.py's for vllm; for hf greedy decoding (transformers rejects temperature 0)."""
    if provider == "vllm":
        args: dict[str, Any] = {"gpu_memory_utilization": spec.gpu_memory_utilization}
        args.update(vllm_tool_args(spec.task_id, family))
        if template_file is not None:
            args["chat_template"] = str(template_file)
        return args
    import torch

    args = {
        "model_path": str(checkpoint),
        "device": "cuda:0" if torch.cuda.is_available() else "cpu",
        "do_sample": False,
    }
    if template_file is not None:
        args["chat_template"] = template_text
    return args


def _load_model(model_id: str, model_args: dict[str, Any], context_length: int | None) -> Model:
    """Load the model once for all ladder attempts (for vllm this starts its server)."""
    from inspect_ai.model import ModelInfo, get_model, set_model_info

    # inspect 0.3.285 looks up model info by name after every generate (agent/_acp/event_mapping.py) and, for
    # a name missing from its database, instantiates the provider again without our model_args: a second
    # copy of the weights (hf) or a second server (vllm). Registering the name stops that.
    set_model_info(model_id, ModelInfo(organization="local checkpoint", context_length=context_length))
    try:
        return get_model(model_id, memoize=False, **model_args)
    except Exception as exc:
        if _OUT_OF_MEMORY.search(str(exc)):
            raise EvaluationFailed(f"out of memory loading {model_id}: {exc}") from exc
        raise CheckpointLoadError(f"cannot load {model_id}: {type(exc).__name__}: {exc}") from exc


def _samples_total(task: Task, limit: int | None) -> int:
    size = len(task.dataset)
    return (size if limit is None else min(limit, size)) * (task.epochs or 1)


def _run_once(
    task: Task,
    model: Model,
    max_tokens: int,
    max_connections: int,
    limit: int | None,
    log_dir: Path,
    samples_total: int,
    on_progress: Callable[[int, int], None] | None,
) -> tuple[str | None, Path | None]:
    """One inspect-ai run: (None, log path) if it succeeded, else (inspect's error text, log path or None)."""
    from inspect_ai import eval as inspect_eval

    token = _progress.set(_Progress(samples_total, on_progress))
    try:
        logs = inspect_eval(
            task,
            model=model,
            max_tokens=max_tokens,
            max_connections=max_connections,
            limit=limit,
            log_dir=str(log_dir),
            log_format="eval",
            display="none",
            score_display=False,
        )
    except Exception as exc:  # inspect raises for errors outside samples (e.g. during model setup)
        return f"{type(exc).__name__}: {exc}", None
    finally:
        _progress.reset(token)
    log = logs[0]
    log_path = Path(log.location)
    if log.status == "success":
        return None, log_path
    message = log.error.message if log.error else f"inspect ended with status {log.status}"
    return message, log_path


def _outcome(
    log_path: Path | None,
    *,
    benchmark: str,
    provider: Provider,
    model_id: str,
    template_text: str | None,
    attempts: list[Attempt],
    started: datetime,
    clock: float,
    settings: dict[str, Any],
) -> EvalOutcome:
    """Read the score back from the `.eval` log, as any later reader of the stored log would."""
    from inspect_ai.log import read_eval_log

    assert log_path is not None  # a successful run always has its log
    log = read_eval_log(str(log_path))
    if log.results is None or not log.results.scores or "accuracy" not in log.results.scores[0].metrics:
        raise EvaluationFailed(f"{log_path} has no accuracy metric (scores: {log.results})")
    metrics = log.results.scores[0].metrics
    return EvalOutcome(
        benchmark=benchmark,
        score=float(metrics["accuracy"].value),
        stderr=float(metrics["stderr"].value) if "stderr" in metrics else None,
        samples_done=log.results.completed_samples,
        samples_total=log.results.total_samples,
        log_path=log_path,
        provider=provider,
        model_id=model_id,
        inspect_version=log.eval.packages.get("inspect_ai", ""),
        chat_template_sha256=hashlib.sha256(template_text.encode()).hexdigest() if template_text else None,
        settings=settings,
        attempts=attempts,
        started=started,
        finished=datetime.now(timezone.utc),
        seconds=time.monotonic() - clock,
    )


class _CancelGate:
    """Checked as the first solver step of every sample; once `should_cancel()` is True it fails the sample,
    which ends the run (inspect's default fail_on_error)."""

    def __init__(self, should_cancel: Callable[[], bool]) -> None:
        self.should_cancel = should_cancel
        self.fired = False

    def check(self) -> None:
        if self.fired or self.should_cancel():
            self.fired = True
            raise RuntimeError("evaluation cancelled")


def _with_cancel_gate(task: Task, gate: _CancelGate) -> Task:
    from inspect_ai import task_with
    from inspect_ai.solver import Generate, Solver, TaskState, chain, solver

    @solver("ptb_cancel_gate")
    def cancel_gate() -> Solver:
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            gate.check()
            return state

        return solve

    return task_with(task, solver=chain(cancel_gate(), task.solver))


@dataclass
class _Progress:
    total: int
    callback: Callable[[int, int], None] | None
    done: int = 0


# The hook below is registered once per process; each evaluate_checkpoint call routes it to its own
# callback through this context variable (inspect runs samples in tasks that inherit the caller's context).
_progress: ContextVar[_Progress | None] = ContextVar("ptb_evaluator_progress", default=None)


@hooks(name="ptb_evaluator_progress", description="Reports finished samples to evaluate_checkpoint's caller.")
class _ProgressHook(Hooks):
    async def on_sample_end(self, data: SampleEnd) -> None:
        progress = _progress.get()
        # Errored samples end here too; they end the run (fail_on_error), so they are not progress.
        if progress is None or progress.callback is None or data.sample.error is not None:
            return
        progress.done += 1
        progress.callback(progress.done, progress.total)
