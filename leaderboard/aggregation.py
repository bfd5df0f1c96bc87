"""The benchmark's aggregation rules as pure functions (no I/O).

Source: the PostTrainBench aggregation scripts as described in docs/posttrainbench-formats.md
section 4 (``compute_single_metrics_avg_stddev.py``, ``aggregate_avg_stddev.py``) and the website's
``data.js`` (section 5). All values here are fractions in [0, 1] unless a name says percent.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from traces.schemas import RUN_STATES, RunState


def derive_weights(instruct: Mapping[str, float], base: Mapping[str, float]) -> dict[str, float]:
    """Benchmark weights from the headroom between instruct and base models (spec section 4.3).

    Args:
        instruct: benchmark id -> mean zero-shot score (fraction) of the official instruct models.
        base: benchmark id -> mean zero-shot score (fraction) of the base models.

    Returns:
        benchmark id -> weight, ``w_t = (1/g_t) / sum_u (1/g_u)`` with ``g_t = instruct[t] - base[t]``; sums to 1.

    Raises:
        ValueError: a benchmark with no positive headroom (g_t <= 0), for which the rule is undefined.
    """
    inverse = {}
    for benchmark, score in instruct.items():
        gap = score - base[benchmark]
        if gap <= 0:
            raise ValueError(f"benchmark {benchmark}: instruct does not beat base ({score} <= {base[benchmark]})")
        inverse[benchmark] = 1.0 / gap
    total = sum(inverse.values())
    return {benchmark: value / total for benchmark, value in inverse.items()}


def weighted_score(scores: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """``sum_t weight[t] * scores[t]`` over the weighted benchmarks (fractions in, fraction out).

    Raises:
        KeyError: a weighted benchmark has no score (the published method has no partial sums).
    """
    return sum(weight * scores[benchmark] for benchmark, weight in weights.items())


def mean(values: Iterable[float]) -> float:
    """Arithmetic mean. Raises ValueError on no values."""
    items = list(values)
    if not items:
        raise ValueError("mean of no values")
    return sum(items) / len(items)


def sample_std(values: Sequence[float]) -> float | None:
    """Sample standard deviation (n-1), as the aggregation scripts compute it; None for fewer than 2 values."""
    if len(values) < 2:
        return None
    centre = mean(values)
    return math.sqrt(sum((v - centre) ** 2 for v in values) / (len(values) - 1))


def combined_std(cell_std: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """Error bar of a weighted score from per-benchmark stds, assuming independent benchmarks.

    ``sqrt(sum_t w_t^2 std_t^2)``: the website's fallback error bar (``data.js``, spec section 5) for a view
    with no published headline std, here applied to one base model's row. Fractions in, fraction out.
    """
    return math.sqrt(sum((weights[t] ** 2) * (cell_std.get(t) or 0.0) ** 2 for t in weights))


# Why a run's cell holds the base model's score instead of its own (aggregate_final.py, spec 4.2 step 4): one
# reason per run state (traces.schemas.RunState) but ``scored``.
STATE_FALLBACK: dict[RunState, str] = {
    "no_final_model": "not_stored", "eval_failed": "error", "never_finished": "not_available",
    "timed_out": "timed_out", "cuda_failure": "cuda_failure", "api_limit": "api_limit",
}
assert set(STATE_FALLBACK) == set(RUN_STATES) - {"scored"}, "a run state without a fallback reason"


def final_cell(
    *, accuracy: float | None, state: str | None, flags: dict[str, str | None] | None, base: float,
    apply_flags: bool = True,
) -> tuple[float, str | None]:
    """The final (post-fallback) value of one cell and the reason it fell back, if it did.

    Args:
        accuracy: the run's score (fraction) or None; ``state``: the run's state, None when there is no run.
        flags: verdict kind -> ``flagged``/``judge_error``/None (after overrides); ``base``: the base model's
            zero-shot score for the cell (fraction).
        apply_flags: False for the flag-blind view (a flagged run counts with its raw score).

    Returns:
        (value, reason): reason None for a scored clean run, else ``missing``, ``flagged``, ``judge_error`` or
        one of STATE_FALLBACK's values. Rule of ``aggregate_final.py``: any non-numeric cell, and any cell whose
        contamination/model verdict is non-empty (flag or judge error), takes the base model's score.
    """
    if state is None:
        return base, "missing"
    if apply_flags and flags:
        if "flagged" in flags.values():
            return base, "flagged"
        if "judge_error" in flags.values():
            return base, "judge_error"
    if accuracy is None:
        return base, STATE_FALLBACK.get(state, "error")  # type: ignore[call-overload]  # state: any stored text
    return accuracy, None
