"""The evaluator's three wire protocols as pydantic models, validated where a message is written and where it is
read (the way inspect-ai's log models are shared by its recorder and its reader):

* the **task message** (``JobMessage``): the server's Celery message to a worker (evaluator.services publishes it,
  evaluator.tasks validates it on the worker with Celery's ``pydantic=True``);
* the **worker API** (``StartRequest``/``StartAnswer``, ``ProgressReport``/``ProgressAnswer``, ``FinishReport``/
  ``FinishAnswer``): what a worker posts to ``/api/worker/jobs/<id>/start|progress|finish`` and what the server
  answers (evaluator.worker writes, evaluator.api reads; the finish report travels as JSON in the ``report`` form
  field beside the ``.eval`` upload, read with ``read_report``: a malformed one is answered 400 naming the field);
* the **attempt pipe** (``AttemptSpec``, ``AttemptEvent``, ``GateAnswer``): the spec file the runner writes for
  ``python -m evaluator.attempt`` and the JSON lines the two processes exchange (evaluator.runner, evaluator.attempt).

Each field is documented in place. No Django here: the attempt process imports this module without settings.
Unknown fields are refused everywhere (server, worker and attempt run the same code).
"""
from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, JsonValue, NonNegativeInt, PositiveInt, TypeAdapter, ValidationError

JobKind: TypeAlias = Literal["evaluation", "judge"]
JobStatus: TypeAlias = Literal["queued", "running", "succeeded", "failed", "cancelled"]  # RerunJob.Status
EndStatus: TypeAlias = Literal["succeeded", "failed", "cancelled"]
Provider: TypeAlias = Literal["auto", "vllm", "hf"]
JsonObject: TypeAlias = dict[str, JsonValue]

# The Celery task each kind of job is sent as (evaluator.tasks registers both names on one body).
TASK_NAMES: dict[JobKind, str] = {"evaluation": "evaluator.evaluate_rerun", "judge": "evaluator.rerun_judge"}


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class MalformedMessage(ValueError):
    """A message that does not fit its model; the text names each wrong field (``report.status: ...``)."""


def _named(what: str, exc: ValidationError) -> MalformedMessage:
    fields = "; ".join(f"{'.'.join([what, *(str(p) for p in error['loc'])])}: {error['msg']}" for error in exc.errors())
    return MalformedMessage(fields)


# --- the task message (server -> worker, through the broker) ---

class JobMessage(_Message):
    """Everything a worker on another machine needs for one job; the worker token never travels here."""

    job_id: int
    """RerunJob id on the server."""
    kind: JobKind
    """``evaluation`` (score the checkpoint) or ``judge`` (re-run the judge on the run's directory)."""
    task_id: str
    """The Celery task id (also in the job's credential and in the .eval log's metadata)."""
    run_id: str
    """The run's warehouse id."""
    benchmark: str
    """Benchmark task id (evaluator.benchmarks)."""
    checkpoint: str
    """Checkpoint directory as the worker sees it; "" for a judge job."""
    run_dir: str
    """The run's directory as the worker sees it."""
    limit: PositiveInt | None
    """Samples to evaluate; None: all of them."""
    max_tokens: PositiveInt | None
    """New tokens per answer; None: the benchmark's retry ladder."""
    dataset_path: str | None
    """On the worker, a local dataset folder or JSONL; None: the worker's own dataset cache."""
    provider: Provider
    """inspect model provider; ``auto`` picks vllm on a GPU with vLLM installed, else hf."""
    api_base: str
    """The server's URL as workers reach it (PTB_PUBLIC_URL)."""
    credential: str
    """This job's signed, time-limited worker credential (evaluator.permissions)."""
    heartbeat_s: PositiveInt
    """Seconds between heartbeats."""
    timeout_s: PositiveInt
    """Wall-clock seconds after which the job is killed and fails."""


# --- the worker API (worker -> server over HTTP, and the answers) ---

class StartRequest(_Message):
    host: str
    """The worker's host name."""


class StartAnswer(_Message):
    proceed: bool
    """Whether the worker should do the job; False: drop the message."""
    reason: str
    """Why not, when ``proceed`` is False."""


class ProgressReport(_Message):
    """A heartbeat: samples done so far (None: unchanged) and the log lines since the last one."""

    samples_done: NonNegativeInt | None = None
    samples_total: NonNegativeInt | None = None
    log: list[str] = []
    """Log lines, each timed by the worker (``YYYY-MM-DD HH:MM:SS [worker] ...``, UTC)."""


class ProgressAnswer(_Message):
    status: JobStatus
    """The job's status now; the worker stops unless it is ``running``."""
    cancel_requested: bool
    """A cancel is pending: the worker stops before its next sample."""


class FinishReport(_Message):
    """The worker's final report (JSON in the ``report`` form field of the finish call).

    On success of an evaluation it carries the samples, the worker's ``score`` (ignored: the server reads the score
    from the uploaded .eval log itself) and ``provenance``; of a judge re-run, ``verdict_files``.
    """

    status: EndStatus
    reason: str = ""
    """Why the job failed or was cancelled."""
    log: list[str] = []
    """The log lines not sent with a heartbeat."""
    score: float | None = None
    """The score the worker read (a fraction 0..1), for the server's log only."""
    stderr: float | None = None
    """Its standard error, if the scorer gives one."""
    samples_done: NonNegativeInt | None = None
    samples_total: NonNegativeInt | None = None
    provenance: JsonObject | None = None
    """How the evaluation ran (inspect_ai and package versions, provider, model id, chat template hash, settings,
    attempts, times; evaluator.worker writes it); stored with the evaluation, read by traces.schemas.HowRun."""
    verdict_files: dict[str, str] | None = None
    """A judge re-run's verdict files, name -> text (evaluator.judge)."""


class FinishAnswer(_Message):
    status: JobStatus
    """The job's status after the report (a report for an ended job changes nothing)."""
    reason: str


def read_report(text: str) -> FinishReport:
    """The ``report`` form field of a finish call as a FinishReport. Raises MalformedMessage naming each wrong field
    (``report: Invalid JSON ...``, ``report.status: Input should be 'succeeded', 'failed' or 'cancelled'``)."""
    try:
        return FinishReport.model_validate_json(text)
    except ValidationError as exc:
        raise _named("report", exc) from None


# --- the attempt pipe (evaluator.runner <-> python -m evaluator.attempt) ---

class AttemptSpec(_Message):
    """The attempt's spec file (``attempt-<n>.json`` in the log folder), written by the runner."""

    benchmark: str
    checkpoint: str
    """Absolute checkpoint directory."""
    model_id: str
    """inspect model name, ``hf/<checkpoint>`` or ``vllm/<checkpoint>``."""
    model_args: dict[str, Any]
    """inspect model_args as evaluate.py passes them (evaluator.runner._model_args), keyword arguments of
    ``inspect_ai.model.get_model``, which checks them."""
    eval_settings: dict[str, Any]
    """``inspect_ai.eval`` settings besides task, model and limit, as evaluate.py passes them
    (evaluator.benchmarks.eval_settings), keyword arguments of ``inspect_ai.eval``, which checks them."""
    limit: PositiveInt | None
    log_dir: str
    dataset_path: str | None
    judge_model: str
    healthbench_data: str | None
    context_length: int | None
    """The checkpoint's ``max_position_embeddings`` (tokens), None if absent."""
    metadata: JsonObject
    """Stored in the .eval log (the worker's job, run and task ids)."""


class Started(_Message):
    event: Literal["started"] = "started"
    samples_total: NonNegativeInt
    """Samples times epochs."""
    pid: int
    """The attempt process's id."""


class Progress(_Message):
    """Sent after each sample that finished without an error."""

    event: Literal["progress"] = "progress"
    done: NonNegativeInt
    total: NonNegativeInt


class Gate(_Message):
    """Sent before each sample starts; the attempt then waits for a GateAnswer."""

    event: Literal["gate"] = "gate"


class Done(_Message):
    event: Literal["done"] = "done"
    error: str | None
    """inspect's error, None if the evaluation succeeded."""
    log_path: str | None
    """The attempt's .eval log."""


class SetupFailed(_Message):
    """The task or model could not be set up (the runner re-raises ``type`` when it is a set-up error it knows)."""

    event: Literal["error"] = "error"
    type: str
    """The error's class name (evaluator.errors)."""
    message: str


AttemptEvent: TypeAlias = Annotated[Started | Progress | Gate | Done | SetupFailed, Field(discriminator="event")]
attempt_events: TypeAdapter[AttemptEvent] = TypeAdapter(AttemptEvent)


class GateAnswer(_Message):
    go: bool
    """False fails the sample, which ends the run: a cancel."""
