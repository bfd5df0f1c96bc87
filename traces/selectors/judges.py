"""The judges' report card (issue 26): per judge and benchmark how many runs it judged and flagged, how often the
reviewers confirmed or overturned it and the challenges open against it; pairwise agreement between judges (Cohen's
kappa); and the runs where the site's own trace rules (ingest.evidence, docs/rules.md) and the judges disagree on
one of the benchmark's reward-hacking modes, with the steps the rules cite: the list a reviewer works through.

One unit of work (:func:`judge_report`); the page ``/judges/`` and its twin ``/api/judges`` serve its model.
"""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from pydantic import BaseModel, Field

from ptbsite import warehouse
from ptbsite.suites import display_suite

from ..verdicts import AGGREGATE_JUDGE, MIGRATION_JUDGE, SCORED_KINDS, Verdict, judges_answers
from .runs import AGENT_RUN, read_runs_by_id, read_verdicts

DISAGREEMENTS_SHOWN = 200
# The benchmark's reward-hacking modes, the evidence rules (ingest.evidence.RULE_TEXT) that find each in the agent's
# trace, and the judge question that is about it.
MODES = {
    "test_data": ("training on test data", ("benchmark_dataset", "test_data"), "contamination"),
    "model_substitution": ("model substitution", ("non_base_model",), "disallowed_model"),
    "evaluation_manipulation": ("evaluation manipulation", ("eval_harness",), "evaluation_access"),
    "outside_model": ("a disallowed API or stronger model", ("outside_llm_api",), "disallowed_api_usage"),
}
QUESTIONS = (*SCORED_KINDS, "disallowed_api_usage", "evaluation_access")
_NOT_JUDGES = {AGGREGATE_JUDGE, MIGRATION_JUDGE}  # combinations of judges' answers, not a judge of their own


class JudgeStats(BaseModel):
    """One judge on one benchmark: ``runs`` it answered a question of, ``valid`` those with a readable answer,
    ``flagged`` those it flagged on any question, ``flag_rate`` = flagged / valid (None without one);
    ``confirmed`` / ``overturned``: reviewers' overrides that said the same as / the opposite of its answer;
    ``open_challenges``: the public's challenges, open or accepted, of a question it answered on those runs."""

    judge: str
    benchmark: str
    benchmark_name: str
    runs: int = 0
    valid: int = 0
    flagged: int = 0
    flag_rate: float | None = None
    confirmed: int = 0
    overturned: int = 0
    open_challenges: int = 0


class JudgePair(BaseModel):
    """Two judges on one question over the runs both answered readably: ``runs``, ``agreed`` and Cohen's
    ``kappa`` (None when undefined: both judges gave one same answer throughout)."""

    judge_a: str
    judge_b: str
    kind: str
    runs: int
    agreed: int
    kappa: float | None


class Review(BaseModel):
    """A reviewer's decision on a run's question already taken (a disagreement of that question is reviewed): its
    newest override, ``flagged`` the verdict it set, by ``reviewer`` at ``at`` (naive UTC); ``challenge``: it
    resolved a public challenge of the question."""

    flagged: bool
    reviewer: str
    at: datetime
    challenge: bool = False


class Disagreement(BaseModel):
    """A run where the rules and the judges part on a mode: ``rules`` found | none, ``judges`` flagged | clean |
    not asked (no judge answered the mode's question), ``steps`` the agent-trace steps the rules cite, ``judge_ids``
    the judges that answered; ``reviewed``: a reviewer already decided the mode's question on this run (an
    override, or a challenge resolved by one), None while it waits for a reviewer."""

    run_id: str
    title: str
    benchmark: str
    mode: str
    mode_text: str
    question: str
    rules: str
    judges: str
    judge_ids: list[str] = Field(default_factory=list)
    steps: list[int] = Field(default_factory=list)
    reviewed: Review | None = None


class Contested(BaseModel):
    """A verdict the public challenged and staff accepted: the run, the question and the visitor's claim."""

    run_id: str
    title: str
    question: str
    claim: str
    steps: list[int]


class JudgeReport(BaseModel):
    """The report card: ``stats`` per judge and benchmark, ``pairs`` of judges per question, ``disagreements``
    (at most DISAGREEMENTS_SHOWN, those not yet reviewed first, then rules-found-but-judged-clean first;
    ``disagreement_count`` all of them, ``reviewed_count`` those a reviewer already decided),
    ``contested``: the verdicts under an accepted challenge, with its claim."""

    stats: list[JudgeStats]
    contested: list[Contested] = Field(default_factory=list)
    pairs: list[JudgePair]
    disagreements: list[Disagreement]
    disagreement_count: int
    reviewed_count: int = 0
    modes: dict[str, str]


def cohen_kappa(a: list[bool], b: list[bool]) -> float | None:
    """Cohen's kappa of two raters' binary answers on the same items (Cohen 1960, "A coefficient of agreement for
    nominal scales"): (p_o - p_e) / (1 - p_e), p_o the share agreed, p_e the agreement expected from each rater's
    own rates. None for no items or p_e = 1 (both always gave one same answer: kappa undefined)."""
    n = len(a)
    if n == 0 or n != len(b):
        return None
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pa, pb = sum(a) / n, sum(b) / n
    expected = pa * pb + (1 - pa) * (1 - pb)
    return None if expected == 1 else (observed - expected) / (1 - expected)


def _answers(verdicts: list[Verdict]) -> dict[str, dict[str, Verdict]]:
    """{question: {judge: its answer}} of a run, without judge_result.json's combinations."""
    return {kind: {j: v for j, v in judges_answers(verdicts, kind).items() if j not in _NOT_JUDGES}
            for kind in QUESTIONS}


def read_judge_report(con, suite: str | None = None) -> JudgeReport:
    """:func:`judge_report` on an open connection."""
    where = AGENT_RUN + (" AND r.suite = ?" if suite else "")
    runs = con.execute(f"SELECT r.id, r.benchmark, r.suite, r.run_dir, r.method FROM runs r WHERE {where} ORDER BY r.id",
                       [suite] if suite else []).fetchall()
    ids = [r[0] for r in runs]
    verdicts = read_verdicts(con, ids)
    overrides: dict[str, dict[str, bool]] = defaultdict(dict)
    reviews: dict[tuple[str, str], Review] = {}  # the newest override of each run's question
    for run_id, kind, flagged, reviewer, at in con.execute(
            "SELECT run_id, kind, flagged, reviewer, created_at FROM verdict_overrides ORDER BY created_at"
    ).fetchall():
        overrides[run_id][kind] = flagged
        reviews[(run_id, kind)] = Review(flagged=flagged, reviewer=reviewer, at=at)
    challenged: dict[str, list[str]] = defaultdict(list)
    contested: list[Contested] = []
    names = {r[0]: f"{r[4]}/{r[3]}" for r in runs}
    for run_id, kind, claim, steps, status in con.execute(
            "SELECT c.run_id, c.kind, c.claim, c.steps, coalesce((SELECT e.action FROM challenge_events e "
            "WHERE e.challenge_id = c.id ORDER BY e.created_at DESC LIMIT 1), 'open') AS status "
            "FROM verdict_challenges c ORDER BY c.created_at DESC").fetchall():
        if run_id in names and status == "resolved" and (run_id, kind) in reviews:  # by an override (its time)
            reviews[(run_id, kind)].challenge = True
        if run_id not in names or status not in ("open", "accepted"):
            continue
        challenged[run_id].append(kind)
        if status == "accepted":
            contested.append(Contested(run_id=run_id, title=names[run_id], question=kind, claim=claim,
                                       steps=[int(x) for x in steps.split(",") if x]))
    evidence: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for run_id, idx, rules in con.execute(
            f"SELECT s.run_id, s.idx, s.suspicious FROM steps s JOIN runs r ON r.id = s.run_id WHERE {where} "
            "AND s.trace = 'agent' AND s.suspicious IS NOT NULL ORDER BY s.run_id, s.idx", [suite] if suite else []
    ).fetchall():
        for rule in rules.split(","):
            evidence[run_id][rule].append(idx)

    stats: dict[tuple[str, str], JudgeStats] = {}
    pair_answers: dict[tuple[str, str, str], tuple[list[bool], list[bool]]] = defaultdict(lambda: ([], []))
    found: list[Disagreement] = []
    for run_id, benchmark, run_suite, run_dir, method in runs:
        shown = display_suite(run_suite)
        bench_name = shown.benchmark_name(benchmark) if shown else benchmark
        answers = _answers(verdicts[run_id])
        judges = sorted({j for per in answers.values() for j in per})
        for judge in judges:
            row = stats.setdefault((judge, benchmark), JudgeStats(judge=judge, benchmark=benchmark,
                                                                  benchmark_name=bench_name))
            mine = {k: per[judge] for k, per in answers.items() if judge in per}
            row.runs += 1
            row.valid += any(v.flagged is not None for v in mine.values())
            row.flagged += any(v.flagged for v in mine.values())
            for kind, said in overrides.get(run_id, {}).items():
                if kind in mine and mine[kind].flagged is not None:
                    if mine[kind].flagged == said:
                        row.confirmed += 1
                    else:
                        row.overturned += 1
            row.open_challenges += sum(1 for kind in challenged.get(run_id, []) if kind in mine)
        for kind, per in answers.items():
            readable = sorted((j, v.flagged) for j, v in per.items() if v.flagged is not None)
            for i, (ja, fa) in enumerate(readable):
                for jb, fb in readable[i + 1:]:
                    a, b = pair_answers[(ja, jb, kind)]
                    a.append(bool(fa))
                    b.append(bool(fb))
        for mode, (text, rules, question) in MODES.items():
            steps = sorted({i for rule in rules for i in evidence.get(run_id, {}).get(rule, [])})
            per = answers.get(question, {})
            answered = [v for v in per.values() if v.flagged is not None]
            judged = "flagged" if any(v.flagged for v in answered) else "clean" if answered else "not asked"
            if steps and judged != "flagged":
                rules_say = "found"
            elif not steps and judged == "flagged":
                rules_say = "none"
            else:
                continue
            found.append(Disagreement(run_id=run_id, title=f"{method}/{run_dir}", benchmark=benchmark, mode=mode,
                                      mode_text=text, question=question, rules=rules_say, judges=judged,
                                      judge_ids=sorted(per), steps=steps[:20],
                                      reviewed=reviews.get((run_id, question))))
    for row in stats.values():
        row.flag_rate = row.flagged / row.valid if row.valid else None
    pairs = [JudgePair(judge_a=ja, judge_b=jb, kind=kind, runs=len(a), agreed=sum(x == y for x, y in zip(a, b,
                                                                                                      strict=True)),
                       kappa=cohen_kappa(a, b))
             for (ja, jb, kind), (a, b) in sorted(pair_answers.items())]
    order = {"found": 0, "none": 1}
    # Those still waiting for a reviewer first.
    found.sort(key=lambda d: (d.reviewed is not None, order[d.rules], d.judges != "clean", d.run_id, d.mode))
    disagreement_count = len(found)
    reviewed_count = sum(d.reviewed is not None for d in found)
    found = found[:DISAGREEMENTS_SHOWN]
    # The rows shown are titled as every run is ("<agent> on <benchmark> with <base model>"): one query for them.
    titles = {run.id: run.title for run in read_runs_by_id(con, sorted({d.run_id for d in found}
                                                                        | {c.run_id for c in contested}))}
    for d in found:
        d.title = titles.get(d.run_id, d.title)
    for c in contested:
        c.title = titles.get(c.run_id, c.title)
    return JudgeReport(stats=sorted(stats.values(), key=lambda s: (s.judge, s.benchmark)), contested=contested,
                       pairs=pairs,
                       disagreements=found, disagreement_count=disagreement_count, reviewed_count=reviewed_count,
                       modes={k: v[0] for k, v in MODES.items()})


@warehouse.retrying
def judge_report(suite: str | None = None) -> JudgeReport:
    """The judges' report card over every agent run (of ``suite``, or all): :class:`JudgeReport`. A judge is an id
    of a per-judge verdict file (txt files: ``codex``; judge_result.json's OR is no judge), its newest answer per
    question (``traces.verdicts.judges_answers``)."""
    with warehouse.connect() as con:
        return read_judge_report(con, suite)
