"""Reads of verdict review: a run's override audit log, and judge-vs-reviewer agreement over all overrides."""
from __future__ import annotations

from ptbsite import warehouse

from ..schemas import OverrideEntry
from ..verdicts import SCORED_KINDS, effective_flags
from .runs import fetch_dicts, read_verdicts


def read_override_log(con, run_id: str) -> list[OverrideEntry]:
    return [OverrideEntry(**r, new="flagged" if r["flagged"] else "clean") for r in fetch_dicts(
        con, "SELECT kind, previous, flagged, reason, reviewer, created_at FROM verdict_overrides WHERE run_id = ? "
             "ORDER BY created_at", [run_id])]


@warehouse.retrying
def override_log(run_id: str) -> list[OverrideEntry]:
    """The run's reviewer overrides, oldest first (the audit log, :class:`traces.schemas.OverrideEntry`)."""
    with warehouse.connect() as con:
        return read_override_log(con, run_id)


@warehouse.retrying
def override_agreement() -> dict[str, dict[str, int]]:
    """Judge vs reviewer, per scored kind, over every override in the audit log: ``{kind: {"agreed": n,
    "disagreed": n, "judge_error": n}}``. The judge's verdict is the run's effective flag without overrides;
    an override agrees when it says the same (flagged or clean); ``judge_error`` counts overrides of runs whose
    judge gave no usable verdict."""
    counts = {kind: {"agreed": 0, "disagreed": 0, "judge_error": 0} for kind in SCORED_KINDS}
    with warehouse.connect() as con:
        overrides = con.execute("SELECT run_id, kind, flagged FROM verdict_overrides").fetchall()
        if not overrides:
            return counts
        verdicts = read_verdicts(con, sorted({r[0] for r in overrides}))
    judged = {run_id: effective_flags(found) for run_id, found in verdicts.items()}
    for run_id, kind, flagged in overrides:
        if kind not in counts:
            continue
        judge = judged[run_id][kind]
        if judge == "judge_error":
            counts[kind]["judge_error"] += 1
        else:
            counts[kind]["agreed" if (judge == "flagged") == flagged else "disagreed"] += 1
    return counts
