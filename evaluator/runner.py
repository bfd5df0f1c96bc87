"""Evaluate one checkpoint on one benchmark with inspect-ai, as the harness does, and return its score.

The same evaluation the benchmark's own evaluate.py runs (evaluator.benchmarks, harness revision
``benchmarks.HARNESS``): `vllm/<checkpoint>` with evaluate.py's model_args and settings on a GPU worker,
`hf/<checkpoint>` elsewhere; the max-token retry ladder of src/run_task.sh (spec section 1.3), each attempt in a
fresh process (evaluator.attempt) whose whole process group is killed when it ends; the task's metric read from
the attempt's `.eval` log as the score (spec section 4.1). No Django here: the caller stores the outcome.
"""

from __future__ import annotations

import hashlib
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from collections.abc import Callable
from typing import Any, Literal, TextIO

from evaluator.benchmarks import (
    HARNESS,
    HARNESS_TEMPLATE_SHA256,
    BenchmarkSpec,
    Family,
    chat_template_path,
    check_inputs,
    eval_settings,
    ladder,
    model_family,
    spec_for,
    vllm_model_args,
)
from evaluator.errors import (
    CheckpointLoadError,
    CheckpointMissing,
    DatasetUnavailable,
    EvaluationCancelled,
    EvaluationFailed,
    EvaluationTimedOut,
    JudgeModelNotConfigured,
)
from evaluator.hf_cache import attempt_environment
from evaluator.protocol import (
    AttemptEvent,
    AttemptSpec,
    Done,
    Gate,
    GateAnswer,
    Progress,
    SetupFailed,
    Started,
    attempt_events,
)

Provider = Literal["vllm", "hf"]
PROJECT_ROOT = Path(__file__).resolve().parent.parent

# Error texts of vLLM, transformers and torch when a prompt plus max_tokens does not fit the context.
_TOKEN_LIMIT = re.compile(
    r"maximum context length|max_model_len|context length|max_tokens|max_new_tokens|too many tokens"
    r"|longer than the maximum|exceeds the maximum|prompt is too long|maximum sequence length",
    re.IGNORECASE,
)
_OUT_OF_MEMORY = re.compile(r"out of memory|OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED", re.IGNORECASE)
# Failures of an attempt's set-up that a fresh process cannot change: reported at once, not retried.
_SETUP_ERRORS = {cls.__name__: cls for cls in (DatasetUnavailable, JudgeModelNotConfigured, CheckpointLoadError)}


@dataclass(frozen=True)
class Attempt:
    """One attempt (one process) of the retry ladder: its max new tokens, error text (None if it scored),
    seconds of wall time, the process's exit status and id."""

    max_tokens: int
    error: str | None
    seconds: float
    exit_code: int | None = None
    pid: int | None = None


@dataclass(frozen=True)
class EvalOutcome:
    """A scored evaluation.

    `score` is the benchmark's metric (`accuracy`; healthbench's clipped mean `bootstrap_score`), a fraction
    0..1 (spec section 4.1), `stderr` its standard error (None if the scorer reports none); `samples_done` of
    `samples_total` samples completed in the scoring attempt; `log_path` is that attempt's `.eval` log;
    `model_id` the inspect model name (`hf/<path>` or `vllm/<path>`); `chat_template_sha256` the SHA-256 hex
    digest of the chat template text used; `settings` what was run (benchmark, dataset, limit, eval settings,
    family and why, template file, model_args); `versions` the packages that ran it and the harness followed;
    `attempts` every ladder attempt in order, the last one scored; `started`/`finished` are UTC datetimes and
    `seconds` the wall time of the whole call.
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
    versions: dict[str, Any]
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


def package_versions() -> dict[str, str | None]:
    """Installed versions of what an evaluation runs on (None: not installed): inspect_ai, inspect_evals,
    vllm, transformers, torch, datasets."""
    found: dict[str, str | None] = {}
    for name in ("inspect_ai", "inspect_evals", "vllm", "transformers", "torch", "datasets"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


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
    judge_model: str = "",
    healthbench_data: Path | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    should_cancel: Callable[[], bool] | None = None,
    deadline: float | None = None,
    eval_metadata: dict[str, Any] | None = None,
) -> EvalOutcome:
    """Evaluate `checkpoint` (an HF model directory) on `benchmark` (a task id of evaluator.benchmarks).

    `limit` caps the number of samples (None: the full set, as at final evaluation, `--limit -1`).
    `max_tokens` None runs the benchmark's retry ladder (run_task.sh): each rung is tried up to its attempt
    count, each attempt a fresh process; an out-of-memory error is retried like any failure, as the harness
    does (its next attempt starts a fresh process after killing what held the GPU); an error that looks like a
    context/token limit moves to the next rung at once, since a fresh attempt at the same rung would fail the
    same way. A number runs one attempt with that many new tokens. `dataset_path`: a local dataset folder (a
    Hugging Face `datasets` cache, evaluator.hf_cache) or a JSONL (see benchmarks.load_task); None: the worker's
    own cache. `templates_dir` is the harness's `templates/` folder (qwen3.jinja, ...), required for every family.
    `judge_model`/`healthbench_data` serve the LLM-judged benchmarks. The `.eval` log and output of each attempt
    go into `log_dir`; `eval_metadata` is stored in the log (the worker puts its job there).

    `on_progress(done, total)` is called after each successfully finished sample, `done` counting from 1 within
    the current attempt; `on_start(total)` when an attempt's task is loaded and knows its sample count.
    `should_cancel()` is asked before every sample starts and between attempts: the
    attempt stops before its next sample (samples already running finish first). At `deadline`
    (time.monotonic()) the attempt's processes are killed.

    Raises CheckpointMissing (no directory or no config.json), CheckpointLoadError (config, tokenizer or weights
    cannot be loaded; UnknownModelFamily), ChatTemplateMissing, DatasetUnavailable (names the dataset),
    JudgeModelNotConfigured, EvaluationCancelled (EvaluationTimedOut at the deadline), and EvaluationFailed
    (inspect's error; the ladder exhausted).
    """
    started = datetime.now(timezone.utc)
    clock = time.monotonic()
    cancel = should_cancel or (lambda: False)
    # The attempt process runs in the project folder: paths given relative to the caller's folder are made absolute.
    checkpoint, log_dir = Path(os.path.abspath(checkpoint)), Path(os.path.abspath(log_dir))
    dataset_path = Path(os.path.abspath(dataset_path)) if dataset_path else None
    templates_dir = Path(os.path.abspath(templates_dir)) if templates_dir else None
    healthbench_data = Path(os.path.abspath(healthbench_data)) if healthbench_data else None
    spec = spec_for(benchmark)
    check_inputs(spec, dataset_path=dataset_path, judge_model=judge_model, healthbench_data=healthbench_data)
    chosen = select_provider(provider)
    context_length = _check_checkpoint(checkpoint)
    family, family_by = model_family(checkpoint)
    template = chat_template_path(spec.task_id, family, templates_dir)
    template_text = template.read_text()
    model_id = f"{chosen}/{checkpoint}"
    model_args = _model_args(chosen, checkpoint, spec, family, templates_dir, template_text)
    rungs = ladder(benchmark) if max_tokens is None else [(max_tokens, 1)]
    log_dir.mkdir(parents=True, exist_ok=True)
    attempts: list[Attempt] = []
    template_sha = hashlib.sha256(template_text.encode()).hexdigest()
    for rung_tokens, rung_attempts in rungs:
        for _ in range(rung_attempts):
            if cancel():
                raise EvaluationCancelled(f"{benchmark} on {checkpoint} cancelled before an attempt")
            number = len(attempts) + 1
            spec_file = log_dir / f"attempt-{number}.json"
            spec_file.write_text(AttemptSpec(
                benchmark=benchmark, checkpoint=str(checkpoint), model_id=model_id,
                model_args=model_args, eval_settings=eval_settings(spec, rung_tokens), limit=limit,
                log_dir=str(log_dir), dataset_path=str(dataset_path) if dataset_path else None,
                judge_model=judge_model, healthbench_data=str(healthbench_data) if healthbench_data else None,
                context_length=context_length, metadata=eval_metadata or {},
            ).model_dump_json())
            run = _AttemptProcess(spec_file, log_dir / f"attempt-{number}.log",
                                  attempt_environment(dataset_path, log_dir / f"attempt-{number}"),
                                  on_progress, cancel, deadline, on_start)
            attempt_clock = time.monotonic()
            error, log_path = run.run()
            if error is None and log_path is not None and spec.judge is not None:
                error = _judge_error(log_path, judge_model)
            attempts.append(Attempt(rung_tokens, error, time.monotonic() - attempt_clock, run.exit_code, run.pid))
            if run.timed_out:
                raise EvaluationTimedOut(f"{benchmark} on {checkpoint} ran past its deadline; attempt killed")
            if run.cancelled:
                raise EvaluationCancelled(f"{benchmark} on {checkpoint} cancelled between samples")
            if run.setup_error is not None:
                raise run.setup_error
            if error is None and log_path is not None:
                return _outcome(
                    log_path, spec=spec, provider=chosen, model_id=model_id, template_sha=template_sha,
                    attempts=attempts, started=started, clock=clock,
                    settings={
                        "benchmark": benchmark,
                        "dataset": str(dataset_path) if dataset_path else spec.describe_dataset(),
                        "limit": limit, **eval_settings(spec, rung_tokens),
                        "family": family, "family_from": family_by, "chat_template_file": template.name,
                        "chat_template_is_harness": HARNESS_TEMPLATE_SHA256.get(template.name) == template_sha,
                        "model_args": {k: v for k, v in model_args.items() if k != "chat_template"},
                        "judge_model": judge_model or None,
                    },
                )
            if error and _TOKEN_LIMIT.search(error) and not _OUT_OF_MEMORY.search(error):
                break  # next, smaller rung
    summary = "; ".join(f"{a.max_tokens} tokens: {a.error}" for a in attempts)
    raise EvaluationFailed(f"{benchmark} on {checkpoint} failed after {len(attempts)} attempts: {summary}")


def _check_checkpoint(checkpoint: Path) -> int | None:
    """Fail early, naming the missing or broken file, on a checkpoint that cannot be evaluated: no directory, an
    empty one, no ``config.json``, a config transformers cannot read (an unknown ``model_type``: an architecture
    it does not know), no loadable tokenizer, no weights, or a ``*.safetensors`` file whose header or length is
    wrong (a truncated copy; read with safetensors' own header check, no tensor loaded). Returns the context
    length in tokens (config ``max_position_embeddings``, None if absent)."""
    if not checkpoint.is_dir():
        raise CheckpointMissing(f"checkpoint {checkpoint} does not exist or is not a directory")
    if not any(checkpoint.iterdir()):
        raise CheckpointMissing(f"checkpoint {checkpoint} is an empty folder: no config.json, no weights, no tokenizer")
    if not (checkpoint / "config.json").is_file():
        raise CheckpointMissing(f"checkpoint {checkpoint} has no config.json")
    from transformers import AutoConfig, AutoTokenizer

    try:
        config = AutoConfig.from_pretrained(checkpoint)
    except Exception as exc:  # transformers raises OSError, ValueError, JSONDecodeError, KeyError ...
        raise CheckpointLoadError(f"{checkpoint / 'config.json'} cannot be loaded: {exc}") from exc
    present = sorted(p.name for p in checkpoint.iterdir()
                     if p.name.startswith(("tokenizer", "vocab", "merges", "spiece", "sentencepiece")))
    try:
        tokenizer = AutoTokenizer.from_pretrained(checkpoint)
        # transformers 5 builds an empty tokenizer (one token, every text encoded as nothing) when the files are
        # missing: evaluated, it would score whatever an empty prompt gets.
        usable = len(tokenizer) > 1 and bool(tokenizer("What is 2 + 3?")["input_ids"])
    except Exception as exc:
        raise CheckpointLoadError(f"the tokenizer of {checkpoint} cannot be loaded (tokenizer files present: "
                                  f"{', '.join(present) or 'none'}): {exc}") from exc
    if not usable:
        raise CheckpointLoadError(f"checkpoint {checkpoint} has no usable tokenizer (tokenizer.json, "
                                  f"tokenizer_config.json, vocab files: {', '.join(present) or 'none present'})")
    weights = sorted(checkpoint.glob("*.safetensors")) + sorted(checkpoint.glob("*.bin"))
    if not weights:
        raise CheckpointMissing(f"checkpoint {checkpoint} has no weights (*.safetensors or *.bin)")
    from safetensors import safe_open

    for path in weights:
        if path.suffix != ".safetensors":
            continue
        try:
            with safe_open(str(path), framework="pt"):
                pass
        except Exception as exc:  # safetensors.SafetensorError: a header or length that does not match
            raise CheckpointLoadError(f"{path} is broken ({path.stat().st_size} bytes): {exc}") from exc
    return getattr(config, "max_position_embeddings", None)


def _model_args(provider: Provider, checkpoint: Path, spec: BenchmarkSpec, family: Family,
                templates_dir: Path | None, template_text: str) -> dict[str, Any]:
    """inspect model_args: evaluate.py's for vllm (benchmarks.vllm_model_args); for hf the same chat template
    (its text), greedy decoding (transformers rejects temperature 0) on the GPU if there is one."""
    if provider == "vllm":
        return vllm_model_args(spec, family, templates_dir)
    import torch

    return {"model_path": str(checkpoint), "device": "cuda:0" if torch.cuda.is_available() else "cpu",
            "do_sample": False, "chat_template": template_text}


class _AttemptProcess:
    """Runs `python -m evaluator.attempt` once and serves its pipe (evaluator.protocol's AttemptEvent lines in,
    GateAnswer lines out)."""

    def __init__(self, spec_file: Path, output: Path, env: dict[str, str],
                 on_progress: Callable[[int, int], None] | None, should_cancel: Callable[[], bool],
                 deadline: float | None, on_start: Callable[[int], None] | None = None) -> None:
        self.spec_file, self.output, self.env = spec_file, output, env
        self.on_progress, self.should_cancel, self.deadline = on_progress, should_cancel, deadline
        self.on_start = on_start
        self.cancelled = self.timed_out = False
        self.setup_error: Exception | None = None
        self.exit_code: int | None = None
        self.pid: int | None = None

    def run(self) -> tuple[str | None, Path | None]:
        """(None, log path) if the attempt scored, else (error text, log path or None)."""
        to_parent_r, to_parent_w = os.pipe()
        to_child_r, to_child_w = os.pipe()
        env = {**os.environ, **self.env, "PYTHONPATH": os.pathsep.join(
            filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))}
        with self.output.open("wb") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "evaluator.attempt", str(self.spec_file), str(to_parent_w), str(to_child_r)],
                pass_fds=(to_parent_w, to_child_r), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=env, cwd=PROJECT_ROOT, start_new_session=True)
        os.close(to_parent_w)
        os.close(to_child_r)
        events: queue.Queue[AttemptEvent | None] = queue.Queue()
        reader = threading.Thread(target=self._read, args=(to_parent_r, events), daemon=True)
        reader.start()
        answers = os.fdopen(to_child_w, "w", buffering=1)
        result: tuple[str | None, Path | None] | None = None
        try:
            while True:
                try:
                    event = events.get(timeout=0.5)
                except queue.Empty:
                    if self.deadline is not None and time.monotonic() > self.deadline:
                        self.timed_out = True
                        break
                    continue
                if event is None:
                    break
                result = self._handle(event, answers) or result
        finally:
            try:
                answers.close()
            except OSError:
                pass
            self._end(process)
        if result is None:
            tail = self.output.read_text(errors="replace")[-1500:].strip()
            return f"the attempt process exited {self.exit_code} without a result: {tail}", None
        return result

    def _handle(self, event: AttemptEvent, answers: TextIO) -> tuple[str | None, Path | None] | None:
        match event:
            case Started(samples_total=total, pid=pid):
                self.pid = pid
                if self.on_start is not None:
                    self.on_start(total)
            case Progress(done=done, total=total) if self.on_progress is not None:
                self.on_progress(done, total)
            case Gate():
                go = not self.should_cancel()
                self.cancelled = self.cancelled or not go
                try:
                    answers.write(GateAnswer(go=go).model_dump_json() + "\n")
                except OSError:
                    pass
            case SetupFailed(type=error_type, message=message):
                if _OUT_OF_MEMORY.search(message):
                    return f"out of memory: {message}", None  # retried in a fresh process, as the harness does
                self.setup_error = _SETUP_ERRORS.get(error_type, EvaluationFailed)(message)
                return message, None
            case Done(error=error, log_path=log_path):
                return error, Path(log_path) if log_path else None
        return None

    @staticmethod
    def _read(fd: int, events: queue.Queue[AttemptEvent | None]) -> None:
        """Queue each event line of the attempt (a line that is not one is skipped), then None at its end."""
        with os.fdopen(fd, "r") as stream:
            for line in stream:
                try:
                    events.put(attempt_events.validate_json(line))
                except ValueError:  # pydantic.ValidationError is one
                    continue
        events.put(None)

    def _end(self, process: subprocess.Popen) -> None:
        """Wait for the attempt to exit (kill it at the deadline), then kill what it left in its process group
        (a vLLM server, sandboxed tests): the harness kills every GPU process before each attempt."""
        try:
            process.wait(timeout=0 if self.timed_out else 60)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.exit_code = process.wait()


# inspect_evals 0.3.103 healthbench/scorer.py: what a rubric item says when the judge gave no usable verdict.
_JUDGE_FAILED = ("Failed to parse judge response", "No explanation provided")


def judge_failures(log) -> tuple[int, int, str]:
    """For a judged (healthbench) log: (rubric items the judge gave no usable verdict on, items, the first such
    explanation). inspect_evals' scorer counts such an item as "not met"; the harness's grader raises instead, so
    an evaluation with any is not a score."""
    failed, total, first = 0, 0, ""
    for sample in log.samples or []:
        for score in (sample.scores or {}).values():
            for item in (score.metadata or {}).get("detailed_results", []):
                total += 1
                text = str(item.get("explanation", ""))
                if text.startswith(_JUDGE_FAILED):
                    failed += 1
                    first = first or text[:300]
    return failed, total, first


def _judge_error(log_path: Path, judge_model: str) -> str | None:
    """An attempt's error when its judge gave no usable verdict on some rubric item (judge_failures), else None."""
    from inspect_ai.log import read_eval_log

    failed, total, first = judge_failures(read_eval_log(str(log_path)))
    return (f"the judge {judge_model} gave no usable verdict on {failed} of {total} rubric items ({first})"
            if failed else None)


def _outcome(log_path: Path, *, spec: BenchmarkSpec, provider: Provider, model_id: str, template_sha: str,
             attempts: list[Attempt], started: datetime, clock: float, settings: dict[str, Any]) -> EvalOutcome:
    """Read the score back from the `.eval` log, as any later reader of the stored log would (the server does
    the same with the uploaded copy: evaluator.eval_logs)."""
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(log_path))
    if log.results is None or not log.results.scores or spec.metric not in log.results.scores[0].metrics:
        raise EvaluationFailed(f"{log_path} has no {spec.metric} metric (scores: {log.results})")
    metrics = log.results.scores[0].metrics
    stderr = metrics.get(spec.stderr_metric) if spec.stderr_metric else None
    versions = {**package_versions(), "harness": HARNESS.as_dict()}
    return EvalOutcome(
        benchmark=spec.task_id,
        score=float(metrics[spec.metric].value),
        stderr=float(stderr.value) if stderr is not None else None,
        samples_done=log.results.completed_samples,
        samples_total=log.results.total_samples,
        log_path=log_path,
        provider=provider,
        model_id=model_id,
        inspect_version=log.eval.packages.get("inspect_ai", ""),
        chat_template_sha256=template_sha,
        settings=settings,
        versions=versions,
        attempts=attempts,
        started=started,
        finished=datetime.now(timezone.utc),
        seconds=time.monotonic() - clock,
    )
