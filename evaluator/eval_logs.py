"""The server's own reading of an uploaded inspect-ai ``.eval`` log: the score it stores comes from here, never
from the number a worker's report claims.

A log is taken only if inspect-ai's ``read_eval_log`` reads it, it ended ``success``, it was written for this
job (the ``ptb_job``/``ptb_task`` metadata the worker passes to ``inspect_ai.eval``), of this job's task and model
(``vllm/`` or ``hf/`` + the job's checkpoint), with the benchmark's metric in 0..1 over at least one sample (at
most the job's limit), and, for an ``accuracy`` metric, one that is the mean of its samples' scores (a log
edited by hand to raise its accuracy is refused).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from evaluator.benchmarks import spec_for
from evaluator.runner import judge_failures

from .models import RerunJob


class LogRefused(ValueError):
    """The uploaded file is not this job's valid .eval log; the message says why."""


@dataclass(frozen=True)
class LogScore:
    """What the server read from a log: the score (fraction 0..1), its stderr, samples completed / total, and
    the log's task, model and inspect-ai version."""

    score: float
    stderr: float | None
    samples_done: int
    samples_total: int
    task: str
    model: str
    inspect_ai: str


def expected_tasks(job: RerunJob) -> set[str]:
    """The task names a job's log may carry: the benchmark's inspect task, or with a JSONL stand-in dataset
    (not healthbench, whose JSONL is its own data) the stand-in task named after the benchmark."""
    spec = spec_for(job.benchmark)
    names = {spec.inspect_task} if spec.inspect_task else set()
    if spec.task_id == "gpqamain":
        names.add("gpqa_main")
    if job.dataset_path.endswith(".jsonl") and spec.task_id != "healthbench":
        names = {spec.task_id}
    return {n for n in names if n}


def read_job_log(path: Path, job: RerunJob) -> LogScore:
    """Read and check ``path`` as ``job``'s .eval log; return its score. Raises LogRefused naming the reason."""
    from inspect_ai.log import read_eval_log
    from inspect_ai.scorer import value_to_float

    try:
        log = read_eval_log(str(path))
    except Exception as exc:  # noqa: BLE001 - zipfile, JSON and pydantic errors: all mean "not a log"
        raise LogRefused(f"not an inspect-ai .eval log: {type(exc).__name__}: {str(exc)[:300]}") from None
    if log.status != "success":
        raise LogRefused(f"the log's evaluation ended {log.status}, not success")
    metadata = log.eval.metadata or {}
    if metadata.get("ptb_job") != job.pk or metadata.get("ptb_task") != job.celery_task_id:
        raise LogRefused(f"the log was not written for job {job.pk} (its metadata: ptb_job="
                         f"{metadata.get('ptb_job')!r}, ptb_task={metadata.get('ptb_task')!r})")
    tasks = expected_tasks(job)
    if log.eval.task not in tasks:
        raise LogRefused(f"the log is of task {log.eval.task!r}, not {' or '.join(sorted(tasks))}")
    if log.eval.model not in (f"vllm/{job.checkpoint}", f"hf/{job.checkpoint}"):
        raise LogRefused(f"the log evaluated {log.eval.model!r}, not the job's checkpoint {job.checkpoint}")
    spec = spec_for(job.benchmark)
    results = log.results
    if results is None or not results.scores or spec.metric not in results.scores[0].metrics:
        raise LogRefused(f"the log has no {spec.metric} metric")
    score = float(results.scores[0].metrics[spec.metric].value)
    if not (math.isfinite(score) and 0.0 <= score <= 1.0):
        raise LogRefused(f"the log's {spec.metric} {score} is not a fraction 0..1")
    if results.completed_samples < 1 or (job.limit is not None and results.total_samples > job.limit):
        raise LogRefused(f"the log scored {results.completed_samples} of {results.total_samples} samples "
                         f"(job limit {job.limit})")
    if spec.metric == "accuracy":
        scorer = results.scores[0].name
        to_float = value_to_float()
        values = [to_float(s.scores[scorer].value) for s in (log.samples or []) if s.scores and scorer in s.scores]
        if len(values) != results.completed_samples:
            raise LogRefused(f"the log holds {len(values)} scored samples, its results say "
                             f"{results.completed_samples}")
        mean = sum(values) / len(values)
        if abs(mean - score) > 1e-9:
            raise LogRefused(f"the log's accuracy {score} is not the mean of its {len(values)} sample scores "
                             f"({mean})")
    if spec.judge is not None:
        failed, total, first = judge_failures(log)
        if failed:
            raise LogRefused(f"the judge gave no usable verdict on {failed} of {total} rubric items ({first})")
    stderr = results.scores[0].metrics.get(spec.stderr_metric) if spec.stderr_metric else None
    return LogScore(score=score, stderr=float(stderr.value) if stderr is not None else None,
                    samples_done=results.completed_samples, samples_total=results.total_samples,
                    task=log.eval.task, model=log.eval.model, inspect_ai=log.eval.packages.get("inspect_ai", ""))


def _cut(text: object, limit: int = 2000) -> str:
    text = str(text)
    return text if len(text) <= limit else text[:limit] + f" … ({len(text) - limit} more characters)"


# inspect-ai's score value letters (inspect_ai.scorer: CORRECT "C", INCORRECT "I", PARTIAL "P", NOANSWER "N").
SCORE_WORDS = {"C": "correct", "I": "incorrect", "P": "partially correct", "N": "no answer"}


def score_text(value: object) -> str:
    """A sample's score value in words: inspect's letters as SCORE_WORDS says (``"I"`` -> "incorrect"), True /
    False as correct / incorrect, a number as it is (4 significant digits), anything else as text."""
    if isinstance(value, str) and value in SCORE_WORDS:
        return SCORE_WORDS[value]
    if isinstance(value, bool):
        return "correct" if value else "incorrect"
    if isinstance(value, (int, float)):
        return f"{value:.4g}"
    return str(value)


def summarize(path: Path) -> dict:
    """A stored log for its page: {"task", "model", "status", "packages", "metrics": {name: value},
    "samples": [{"id", "epoch", "input", "output", "target", "scores": {scorer: (value in words, raw value)}}]}
    (texts cut at 2,000 characters; words by :func:`score_text`). Raises LogRefused if inspect-ai cannot read it."""
    from inspect_ai.log import read_eval_log

    try:
        log = read_eval_log(str(path))
    except Exception as exc:  # noqa: BLE001
        raise LogRefused(f"not an inspect-ai .eval log: {type(exc).__name__}") from None
    metrics = {}
    for score in (log.results.scores if log.results else []):
        metrics.update({f"{score.name}/{name}": m.value for name, m in score.metrics.items()})
    return {
        "task": log.eval.task, "model": log.eval.model, "status": log.status, "packages": log.eval.packages,
        "metrics": metrics,
        "samples": [{"id": s.id, "epoch": s.epoch, "input": _cut(s.input if isinstance(s.input, str) else
                     "\n".join(f"{m.role}: {m.text}" for m in s.input)),
                     "output": _cut(s.output.completion if s.output else ""), "target": _cut(s.target),
                     "scores": {k: (score_text(v.value), _cut(v.value, 200)) for k, v in (s.scores or {}).items()}}
                    for s in (log.samples or [])],
    }
