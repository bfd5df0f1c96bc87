"""Reads of verdict review: a run's override audit log, and judge-vs-reviewer agreement over all overrides."""
from __future__ import annotations

from ptbsite import warehouse

import re
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from ptbsite.warehouse.once import kept_key

from ..schemas import CitedStep, JudgeQuestion, JudgeVerdict, OverrideEntry, Run
from ..verdicts import AGGREGATE_JUDGE, SCORED_KINDS, Verdict, chosen_verdicts, effective_flags, era_rule, kind_text
from .runs import OVERRIDES_TABLE, fetch_dicts, read_verdicts

REASONING_SHOWN = 20_000  # characters of a judge's reasoning (its trace's messages) a run page shows
CITED_SHOWN = 40  # cited steps listed per verdict
# "step 12", "steps 12 and 14", "step #12", "Step 12-14" (the first number of a range), "#12"
_STEP_REF = re.compile(r"\bsteps?\s*#?\s*(\d{1,7})(?:\s*(?:,|and|&)\s*#?(\d{1,7}))*|(?<![\w&])#(\d{1,7})\b", re.I)
_STEP_NUMBERS = re.compile(r"\d{1,7}")
# Tool call ids of the scaffolds' traces (Claude Code toolu_..., OpenAI call_..., fc_...); only ids that are in the
# agent's trace count.
_CALL_REF = re.compile(r"\b((?:toolu|call|fc)_[A-Za-z0-9_-]{4,80})\b")


# The reviewers' overrides and the public's challenges: read by every run page and often never written (a table
# that never held a row costs ~4 ms per column a DuckLake query names: warehouse.rows_in_memory's ``unwritten``).
REVIEW_TABLES = (*OVERRIDES_TABLE, "verdict_challenges", "challenge_events")

def judge_trace_name(judge: str, attempt: str) -> str:
    """The stored trace of a judge's attempt: ``judge:<judge>`` (``:rerun`` for a rerun), as ingest names it."""
    return f"judge:{judge}" + (":rerun" if attempt == "rerun" else "")


# A file name with an extension, optionally with its folders (``train.py``, ``data/train.jsonl``,
# ``/home/ben/task/final_model/config.json``): cited when the agent's tool calls name it.
_FILE_REF = re.compile(r"(?<![\w.-])((?:/?[\w.-]+/)*[\w-][\w.-]*\.(?:py|jsonl|json|txt|csv|tsv|sh|yaml|yml|parquet|md|"
                       r"ipynb|toml|cfg|arrow|safetensors|bin|log|sql))(?![\w/])")
FILES_LOOKED_UP = 20  # file names of one judge's words looked up in the agent's trace


def cited_steps(con, run_id: str, texts: list[str], step_count: int,
                files_at: dict[str, int] | None = None) -> list[CitedStep]:
    """The agent-trace steps the texts name, in order of index: step numbers below ``step_count`` (``step 12``,
    ``steps 12 and 14``, ``#12``), tool call ids that occur in the agent trace (the call's step), and file names
    (``train.py``, ``data/train.jsonl``) that a tool call's input holds (the first such step; at most
    FILES_LOOKED_UP names). At most CITED_SHOWN. ``files_at``: {file name: the first agent step whose input holds
    it} read already for names that include these texts' (:func:`read_judge_panel` reads its verdicts' names in
    one query); without it, the names are looked up here."""
    found: dict[int, str] = {}
    calls: list[str] = []
    files: list[str] = []
    for text in texts:
        for match in _STEP_REF.finditer(text or ""):
            for number in _STEP_NUMBERS.findall(match[0]):
                if int(number) < step_count:
                    found.setdefault(int(number), f"step {int(number)}")
        calls += _CALL_REF.findall(text or "")
        files += [f for f in _FILE_REF.findall(text or "") if f not in files]
    if calls:
        for call_id, index in _calls_at(con, run_id, sorted(set(calls))[:200]):
            found.setdefault(index, call_id)
    if files:
        named = files[:FILES_LOOKED_UP]
        at = files_at if files_at is not None else dict(_files_at(con, run_id, named))
        for name in named:
            if name in at:
                found.setdefault(at[name], name)
    return [CitedStep(index=i, via=v) for i, v in sorted(found.items())[:CITED_SHOWN]]


def panel_file_names(verdicts: list[Verdict], reasonings: dict[str, tuple[str, bool] | None]) -> list[str]:
    """Every file name (``_FILE_REF``) the judge panel of a run can look up: those of its verdicts' texts and of its
    judges' reasonings (``reasonings``: {judge trace: :func:`_reasoning`'s answer}), each once, sorted."""
    texts = [v.text for v in verdicts] + [said[0] for said in reasonings.values() if said]
    return sorted({name for text in texts for name in _FILE_REF.findall(text or "")})


@warehouse.once.read_once
def _calls_at(con, run_id: str, call_ids: list[str]) -> list[tuple[str, int]]:
    """(call id, the first agent step holding it) of those of ``call_ids`` the agent trace has."""
    return con.execute(f"SELECT call_id, min(idx) FROM steps WHERE run_id = ? AND trace = 'agent' AND call_id IN "
                       f"({', '.join('?' * len(call_ids))}) GROUP BY call_id", [run_id, *call_ids]).fetchall()


@warehouse.once.read_once
def _files_at(con, run_id: str, names: list[str]) -> list[tuple[str, int]]:
    """(file name, the first agent step whose input holds it) of those of ``names`` some step's input holds, by
    name: :func:`read_files_at_of` of one run."""
    return read_files_at_of(con, {run_id: names})[run_id]


def read_files_at_of(con, names: dict[str, list[str]]) -> dict[str, list[tuple[str, int]]]:
    """{run id: [(file name, the first agent step whose input holds it), ...] by name} of ``names`` ({run id: file
    names}; every run a key; a name no input holds left out), in one query."""
    out: dict[str, list[tuple[str, int]]] = {run_id: [] for run_id in names}
    pairs = [(run_id, name) for run_id, some in names.items() for name in some]
    if not pairs:
        return out
    for run_id, name, index in con.execute(
            "SELECT n.run_id, n.name, min(s.idx) FROM (SELECT unnest(?::VARCHAR[]) AS run_id, unnest(?::VARCHAR[]) "
            "AS name) n JOIN steps s ON s.run_id = n.run_id AND s.trace = 'agent' AND contains(s.input, n.name) "
            "WHERE s.run_id = ANY(?::VARCHAR[]) GROUP BY n.run_id, n.name ORDER BY n.run_id, n.name",
            [[p[0] for p in pairs], [p[1] for p in pairs], sorted(names)]).fetchall():
        out[run_id].append((name, index))
    return out


@warehouse.once.read_once
def _reasoning(con, run_id: str, trace: str) -> tuple[str, bool] | None:
    return _reasoning_of(con.execute(
        "SELECT kind, output FROM steps WHERE run_id = ? AND trace = ? AND kind IN ('assistant', 'thinking', 'result') "
        "AND output <> '' ORDER BY idx", [run_id, trace]).fetchall())


def read_panels_ahead(con, some: list[Run], traces: dict[str, list[str]]) -> dict[str, dict[Hashable, Any]]:
    """What the judge panels of many runs (``some``; ``traces``: {run id: its trace names}) read, as
    ``warehouse.once`` keeps :func:`_reasoning`'s and :func:`_files_at`'s answers ({run id: {kept key: answer}}),
    in two queries: the judges' reasoning (the steps' output is the steps table's largest column, and one run's
    read costs about what many runs' read together does), then the file names the panel looks up
    (:func:`panel_file_names`), as :func:`read_judge_panel` asks for them."""
    judges = {run_id: [t for t in names if t != "agent"] for run_id, names in traces.items()}
    rows: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for run_id, trace, kind, output in con.execute(
            "SELECT run_id, trace, kind, output FROM steps WHERE run_id = ANY(?::VARCHAR[]) AND trace <> 'agent' AND "
            "kind IN ('assistant', 'thinking', 'result') AND output <> '' ORDER BY run_id, trace, idx",
            [list(traces)]).fetchall():
        rows.setdefault((run_id, trace), []).append((kind, output))
    said = {run_id: {trace: _reasoning_of(rows.get((run_id, trace), [])) for trace in names}
            for run_id, names in judges.items()}
    names = {run.id: panel_file_names(run.verdicts, _panel_reasonings(run, judges.get(run.id, []), said[run.id].get))
             for run in some if run.id in said}
    files = read_files_at_of(con, {run_id: some_names for run_id, some_names in names.items() if some_names})
    out: dict[str, dict[Hashable, Any]] = {}
    for run_id, answers in said.items():
        kept: dict[Hashable, Any] = {kept_key(_reasoning, run_id, trace): answer for trace, answer in answers.items()}
        if names.get(run_id):
            kept[kept_key(_files_at, run_id, names[run_id])] = files[run_id]
        out[run_id] = kept
    return out


def _panel_reasonings(run: Run, judge_traces: Iterable[str],
                      reasoning: Callable[[str], tuple[str, bool] | None]) -> dict[str, tuple[str, bool] | None]:
    """{judge trace: its reasoning (``reasoning(trace)``)} of the traces of ``run``'s verdicts that the run holds
    (``judge_traces``), in name order: what :func:`read_judge_panel` shows."""
    held = set(judge_traces)
    return {trace: reasoning(trace) for trace in sorted({judge_trace_name(v.judge, v.attempt) for v in run.verdicts})
            if trace in held}


def _reasoning_of(rows: list[tuple[str, str]]) -> tuple[str, bool] | None:
    """A judge's reasoning from its trace's (kind, output) rows in order: the text shown and whether it was cut."""
    if not rows:
        return None
    text = "\n\n".join(f"[{kind}] {output.strip()}" if kind == "thinking" else output.strip() for kind, output in rows)
    return text[:REASONING_SHOWN], len(text) > REASONING_SHOWN


KIND_ORDER = (*SCORED_KINDS, "disallowed_api_usage", "evaluation_access", "disallowed_ptb_lookup", "general_anomaly")
_TAGGED = re.compile(r"^\[([a-z0-9_]+)\] ", re.M)


def _origin(v: Verdict) -> str:
    """Where a verdict comes from, in words: a file of the run directory, or the judge re-run job's output."""
    if v.attempt == "rerun" and v.note and "re-run by" in v.note:
        return f"written by a judge re-run job ({v.source_file})" if v.source_file else "a judge re-run job"
    if not v.source_file:
        return "no file: the judge wrote none"
    return f"{v.source_file} in the run directory"


def _combines(v: Verdict, verdicts: list[Verdict]) -> bool:
    """judge_result.json's justification is aggregate_judgement.py's ``[<judge>] <text>`` paragraphs of judges
    whose own verdicts on the same question the run holds with that text, or one judge's text verbatim."""
    if v.judge != AGGREGATE_JUDGE or not v.text.strip():
        return False
    own = {(o.judge, o.text.strip()) for o in verdicts if o.kind == v.kind and o.era == "judgement_json"}
    if any(text == v.text.strip() for _, text in own):
        return True  # one judge's words copied verbatim (the API judge's, in aggregate_judgement.py)
    parts = [p.strip() for p in v.text.split("\n\n") if p.strip()]
    tagged = [_TAGGED.match(p) for p in parts]
    return all(tagged) and all((m[1], p[m.end():].strip()) in own for m, p in zip(tagged, parts, strict=True)
                               if m is not None)


@warehouse.once.read_once
def read_judge_panel(con, run: Run, trace_names: list[str]) -> list[JudgeVerdict]:
    """Every verdict of the run with the judge's words and reasoning (:class:`traces.schemas.JudgeVerdict`), by
    question (KIND_ORDER), within one the verdicts the era's rule reads first, then by judge and attempt.
    ``trace_names``: the run's trace names (:func:`traces.selectors.steps.read_trace_names`, which the caller's page
    shows too).

    A judge's reasoning (its own trace's messages) is given once, on its first verdict in that order; its other
    verdicts name the question it is under (``reasoning_under``). judge_result.json has no trace of its own."""
    traces = set(trace_names) - {"agent"}
    rule = era_rule(run.verdicts)
    counted = {id(v) for kind in {v.kind for v in run.verdicts} for v in chosen_verdicts(run.verdicts, kind, rule)}
    order = {k: i for i, k in enumerate(KIND_ORDER)}
    ordered = sorted(run.verdicts, key=lambda v: (order.get(v.kind, len(order)), v.kind, id(v) not in counted,
                                                  v.judge, v.attempt != "original"))
    reasonings = _panel_reasonings(run, traces, lambda trace: _reasoning(con, run.id, trace))
    names = panel_file_names(run.verdicts, reasonings)
    files_at = dict(_files_at(con, run.id, names)) if names else {}
    shown_under: dict[str, str] = {}
    panel = []
    for v in ordered:
        trace = judge_trace_name(v.judge, v.attempt)
        said = None
        if trace in traces and trace not in shown_under:
            said = reasonings[trace]
            if said:
                shown_under[trace] = v.kind
            under = None
        else:
            under = shown_under.get(trace)
        combines = _combines(v, run.verdicts)
        panel.append(JudgeVerdict(
            kind=v.kind, kind_text=kind_text(v.kind), judge=v.judge, attempt=v.attempt, era=v.era, value=v.value,
            value_text=v.value_text, text=v.text, note=v.note, source_file=v.source_file,
            reasoning=said[0] if said else None, reasoning_trace=trace if (said or under) else None,
            reasoning_cut=bool(said and said[1]), reasoning_under=under,
            # judge_result.json's words that are the judges' own cite nothing of their own: each judge's row does
            cited=[] if combines else cited_steps(con, run.id, [v.text, said[0] if said else ""], run.step_count,
                                                     files_at),
            counts=id(v) in counted, origin=_origin(v), combines=combines))
    return panel


def judge_questions(run: Run, panel: list[JudgeVerdict], said: list | None = None) -> list[JudgeQuestion]:
    """The judge panel by question: each question the run's flags or verdicts name, with its label, the era's
    rule in words and the verdicts on it (in ``panel``'s order); a question nobody answered has none.
    ``said``: the run's public challenges (traces.challenges.PublicChallenge); the accepted ones on a question
    make it contested (``contested``)."""
    rule = run.verdict_rule.text if run.verdict_rule else ""
    kinds = list(run.verdict_labels) + [v.kind for v in panel if v.kind not in run.verdict_labels]
    out = []
    for kind in dict.fromkeys(kinds):
        label = run.verdict_labels.get(kind, "shown")
        out.append(JudgeQuestion(kind=kind, kind_text=kind_text(kind), label=label, rule=rule,
                                 overridden=kind in run.overrides,
                                 verdicts=[v for v in panel if v.kind == kind],
                                 contested=[c.claim for c in said or () if c.kind == kind and c.status == "accepted"]))
    return out


@warehouse.once.read_once
def read_override_log(con, run_id: str) -> list[OverrideEntry]:
    return read_override_logs_of(con, [run_id])[run_id]


def read_override_logs_of(con, run_ids: list[str]) -> dict[str, list[OverrideEntry]]:
    """{run id: :func:`override_log`} of ``run_ids`` (every id a key), in one query."""
    out: dict[str, list[OverrideEntry]] = {run_id: [] for run_id in run_ids}
    for r in fetch_dicts(con, "SELECT run_id, kind, previous, flagged, reason, reviewer, created_at FROM "
                              "verdict_overrides WHERE run_id = ANY(?::VARCHAR[]) ORDER BY run_id, created_at",
                         [run_ids]):
        out[r.pop("run_id")].append(OverrideEntry(**r, new="flagged" if r["flagged"] else "clean"))
    return out


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
