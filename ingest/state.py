"""Run state: what a run directory's files say about how the run ended (spec section 1.3), and its score.

``derive_state`` gives one of ``traces.schemas.RUN_STATES`` with a human-readable detail; ``read_accuracy`` reads the score of a
parsed ``metrics.json``. Both read files only; nothing is written.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from .files import RunFiles

# Strings in solve_out.txt that mean the agent's API account ran dry (spec 1.3).
API_LIMIT_MARKERS = ("You've hit your limit", "spending_limit", "billing_hard_limit", "insufficient_quota",
                     "budget_exceeded", "plan does not yet include", "token_expired", "Failed to refresh token")


def read_accuracy(metrics: dict | None, path: Path) -> tuple[float | None, str | None]:
    """``(accuracy, problem)`` of a parsed ``metrics.json`` (spec 4.1: ``accuracy`` is a fraction in [0, 1]).

    A number (not a bool) is the score; a string holding a finite number (``"0.85"``) is parsed. Anything else
    under ``accuracy`` (text, NaN, a number outside 0..1, a bool, a list) is no score and a problem naming the
    file and the value; a missing ``accuracy`` is no score without a problem. Raises nothing.
    """
    if metrics is None or "accuracy" not in metrics:
        return None, None
    value = metrics["accuracy"]
    number: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is not None and math.isfinite(number) and 0.0 <= number <= 1.0:
        return number, None
    shown = json.dumps(value, ensure_ascii=False)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    why = "is not a number" if number is None else "is not a fraction between 0 and 1"
    return None, f"{path}: accuracy {shown} {why}; counted as no score"



def derive_state(run_dir: Path, trace_text: str, metrics: dict | None, files: RunFiles | None = None) -> tuple[str, str]:
    """(state, human-readable detail) of a run from its files (spec section 1.3, "Run-level states").

    Precedence: CUDA failure, timed out (``error.log`` starts with ``Terminated`` or the diagnostics say so),
    never finished (no ``time_taken.txt``), scored (an ``accuracy`` :func:`read_accuracy` accepts), API limit
    (marker strings in the trace), evaluation failed (``final_model/`` present), no final model. ``files``: the
    run's readable entries (``ingest.files``; default: those under its root two levels up); a refused
    entry counts as absent.
    """
    files = files or RunFiles(run_dir, run_dir.parent.parent)
    error_log = (files.read_bytes(run_dir / "error.log") or b"").decode(errors="replace")
    output_log = (files.read_bytes(run_dir / "output.log") or b"").decode(errors="replace")
    if files.ok(run_dir / "task" / "cuda_not_available") and (run_dir / "task" / "cuda_not_available").exists():
        return "cuda_failure", "the CUDA check failed; the agent never started"
    if error_log.lstrip().startswith("Terminated") or "killed by timeout" in output_log:
        return "timed_out", "the job was killed at its time limit"
    if not files.is_file(run_dir / "time_taken.txt"):
        detail = "killed (out of memory)" if "Killed" in error_log else "no time_taken.txt"
        return "never_finished", f"the agent never finished: {detail}"
    if read_accuracy(metrics, run_dir / "metrics.json")[0] is not None:
        return "scored", "metrics.json holds the score"
    marker = next((m for m in API_LIMIT_MARKERS if m in trace_text), None)
    if marker:
        return "api_limit", f"the agent hit its API limit ({marker!r} in the trace)"
    if files.is_dir(run_dir / "final_model"):
        return "eval_failed", "final_model/ exists but every evaluation attempt failed"
    return "no_final_model", "the agent left no final_model/"

