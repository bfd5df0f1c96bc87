"""Typed failures of an evaluation; each message says what failed and on which path or dataset."""

from __future__ import annotations


class EvaluationError(Exception):
    """Base class: an evaluation of a checkpoint produced no score."""


class CheckpointMissing(EvaluationError):
    """The checkpoint directory does not exist or holds no `config.json`."""


class CheckpointLoadError(EvaluationError):
    """The checkpoint exists but its config, tokenizer or weights cannot be loaded."""


class DatasetUnavailable(EvaluationError):
    """The benchmark's dataset (or the package that defines its task) is not available on this worker."""


class EvaluationFailed(EvaluationError):
    """inspect-ai ran but the evaluation errored (message includes inspect's error), ran out of memory, or
    exhausted the max-token retry ladder."""


class EvaluationCancelled(EvaluationError):
    """`should_cancel()` returned True; the evaluation stopped before producing a score."""


class UnknownModelFamily(CheckpointLoadError):
    """Neither the checkpoint's path nor its `architectures[0]` names a family evaluate.py knows (it raises
    ValueError there too)."""


class ChatTemplateMissing(EvaluationError):
    """The harness's chat template file for the model family is not in the worker's templates folder."""


class JudgeModelNotConfigured(EvaluationError):
    """An LLM-judged benchmark (arenahardwriting, healthbench) was asked for, and no judge model is configured."""


class EvaluationTimedOut(EvaluationCancelled):
    """The evaluation ran past its deadline; its attempt process was killed."""
