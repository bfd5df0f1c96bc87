"""Reads of verdict review: a run's override audit log, and judge-vs-reviewer agreement over all overrides."""
from __future__ import annotations

from ptbsite import warehouse

import re

from ..schemas import CitedStep, JudgeVerdict, OverrideEntry, Run
from ..verdicts import SCORED_KINDS, effective_flags, kind_text
from .runs import fetch_dicts, read_verdicts

REASONING_SHOWN = 20_000  # characters of a judge's reasoning (its trace's messages) a run page shows
CITED_SHOWN = 40  # cited steps listed per verdict
# "step 12", "steps 12 and 14", "step #12", "Step 12-14" (the first number of a range), "#12"
_STEP_REF = re.compile(r"\bsteps?\s*#?\s*(\d{1,7})(?:\s*(?:,|and|&)\s*#?(\d{1,7}))*|(?<![\w&])#(\d{1,7})\b", re.I)
_STEP_NUMBERS = re.compile(r"\d{1,7}")
# Tool call ids of the scaffolds' traces (Claude Code toolu_..., OpenAI call_..., fc_...); only ids that are in the
# agent's trace count.
_CALL_REF = re.compile(r"\b((?:toolu|call|fc)_[A-Za-z0-9_-]{4,80})\b")


def judge_trace_name(judge: str, attempt: str) -> str:
    """The stored trace of a judge's attempt: ``judge:<judge>`` (``:rerun`` for a rerun), as ingest names it."""
    return f"judge:{judge}" + (":rerun" if attempt == "rerun" else "")


def cited_steps(con, run_id: str, texts: list[str], step_count: int) -> list[CitedStep]:
    """The agent-trace steps the texts name, in order of index: step numbers below ``step_count`` (``step 12``,
    ``steps 12 and 14``, ``#12``) and tool call ids that occur in the agent trace (the call's step). At most
    CITED_SHOWN."""
    found: dict[int, str] = {}
    calls: list[str] = []
    for text in texts:
        for match in _STEP_REF.finditer(text or ""):
            for number in _STEP_NUMBERS.findall(match[0]):
                if int(number) < step_count:
                    found.setdefault(int(number), f"step {int(number)}")
        calls += _CALL_REF.findall(text or "")
    if calls:
        unique = sorted(set(calls))[:200]
        for call_id, index in con.execute(
                f"SELECT call_id, min(idx) FROM steps WHERE run_id = ? AND trace = 'agent' AND call_id IN "
                f"({', '.join('?' * len(unique))}) GROUP BY call_id", [run_id, *unique]).fetchall():
            found.setdefault(index, call_id)
    return [CitedStep(index=i, via=v) for i, v in sorted(found.items())[:CITED_SHOWN]]


def _reasoning(con, run_id: str, trace: str) -> tuple[str, bool] | None:
    rows = con.execute(
        "SELECT kind, output FROM steps WHERE run_id = ? AND trace = ? AND kind IN ('assistant', 'thinking', 'result') "
        "AND output <> '' ORDER BY idx", [run_id, trace]).fetchall()
    if not rows:
        return None
    text = "\n\n".join(f"[{kind}] {output.strip()}" if kind == "thinking" else output.strip() for kind, output in rows)
    return text[:REASONING_SHOWN], len(text) > REASONING_SHOWN


def read_judge_panel(con, run: Run) -> list[JudgeVerdict]:
    """Every verdict of the run with the judge's words and reasoning (:class:`traces.schemas.JudgeVerdict`), in
    the order of ``run.verdicts``."""
    traces = {r[0] for r in con.execute("SELECT DISTINCT trace FROM steps WHERE run_id = ? AND trace <> 'agent'",
                                        [run.id]).fetchall()}
    reasoning: dict[str, tuple[str, bool] | None] = {}
    panel = []
    for v in run.verdicts:
        trace = judge_trace_name(v.judge, v.attempt)
        if trace not in traces and v.judge == "aggregate":
            trace = next((t for t in sorted(traces) if t.endswith(":rerun") == (v.attempt == "rerun")), trace)
        if trace in traces and trace not in reasoning:
            reasoning[trace] = _reasoning(con, run.id, trace)
        said = reasoning.get(trace) if trace in traces else None
        panel.append(JudgeVerdict(
            kind=v.kind, kind_text=kind_text(v.kind), judge=v.judge, attempt=v.attempt, era=v.era, value=v.value,
            value_text=v.value_text, text=v.text, note=v.note, source_file=v.source_file,
            reasoning=said[0] if said else None, reasoning_trace=trace if said else None,
            reasoning_cut=bool(said and said[1]),
            cited=cited_steps(con, run.id, [v.text, said[0] if said else ""], run.step_count)))
    return panel


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
