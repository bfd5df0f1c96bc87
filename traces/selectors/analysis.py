"""Reads of a run's time use (phases, tool calls on the timeline, system_monitor samples) and of the analysis page
(facts of a suite's latest runs and the per-agent tables built from them). Scores are fractions."""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from itertools import compress
from operator import itemgetter
from typing import NamedTuple

from ptbsite import warehouse
from ptbsite.suites import display_suite

from pydantic import Field, computed_field

from ..reported import FACT_TOPIC_TEXT, ReportedFact, read_reported_facts
from ..schemas import Model, Percent, Run
from ..vocabulary import IDLE_GAP_S, METHOD_FACETS, PHASES, Phase, call_phase, overoptimism, time_split
from .runs import AGENT_RUN, agent_display, fetch_dicts

class TimelineCall(Model):
    """A tool call on the timeline: step index, seconds since the trace's start, tool, phase, input (clipped).
    ``calls``: the tool calls its marker stands for: 1, or on a run with more than MAX_TIMELINE_CALLS of them, every
    call of its time bin (``Timeline.bin_s`` seconds wide), of which it is the first."""

    index: int
    elapsed_s: float
    tool: str | None
    phase: str
    input: str
    calls: int = 1


class PhaseStretch(Model):
    """A stretch of the run in one phase: seconds since the trace's first timed step, and its first and last step."""

    phase: str
    start_s: float
    end_s: float
    step_from: int
    step_to: int


class MonitorSample(Model):
    """One system_monitor sample: seconds on the steps' axis, GPU utilisation (%), memory used and total (MiB)."""

    t_s: float
    gpu_util: float
    gpu_mem_mib: float
    gpu_mem_total_mib: float


class Timeline(Model):
    """A run's time use, as on its page and ``/api/runs/<id>/timeline``. Seconds on the steps' ``elapsed_s`` axis;
    ``split_s``: seconds per phase (every phase of ``traces.vocabulary.PHASES``); ``idle_gaps``: idle stretches
    (longer than ``idle_gap_s`` with nothing running); ``budget_s``: the budget in seconds; ``time_taken_s``:
    time_taken.txt (None without); ``budget_fraction``: the fraction of the budget used; ``calls``: every tool call
    of the trace (``calls_total`` of them), or where there are more than MAX_TIMELINE_CALLS, the first call of each
    of MAX_TIMELINE_CALLS equal time bins ``bin_s`` seconds wide that holds one (its ``calls``: how many the bin
    holds); ``bin_s`` is None when every call is listed."""

    run_id: str
    budget_s: float
    time_taken_s: int | None
    split_s: dict[str, float]
    idle_gaps: int
    idle_gap_s: float = IDLE_GAP_S
    phases: list[PhaseStretch]
    calls: list[TimelineCall]
    monitor: list[MonitorSample]
    calls_total: int = 0
    bin_s: float | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def budget_fraction(self) -> float | None:
        return None if self.time_taken_s is None or not self.budget_s else self.time_taken_s / self.budget_s


# More tool calls than this: one marker per time bin (1/MAX_TIMELINE_CALLS of the run), so a 20,000-call trace draws
# at most 200 markers and its timeline's DOM stays under 300 KB (issue 29: every 11th call made a 1.4 MB DOM).
MAX_TIMELINE_CALLS = 200


@warehouse.retrying
def run_timeline(run: Run) -> Timeline:
    """The run's phases, tool calls (with the phase of the stretch holding them; binned in time when there are
    more than MAX_TIMELINE_CALLS, ``calls_total`` says how many there are) and monitor samples."""
    with warehouse.connect() as con:
        return read_timeline(con, run)


@warehouse.once.read_once
def read_timeline_summary(con, run: Run) -> tuple[Timeline, bool, bool]:
    """(the run's time use without its stretches, tool calls and monitor samples; whether it has phases; whether
    it has monitor samples): what the run page shows before its timeline figure loads from
    ``/runs/<id>/timeline.json``. The seconds per phase and the idle gaps are summed in SQL (a 60,000-step trace
    has ~5,000 stretches), and the steps are never read, so it costs the same for a 200- and a 60,000-step trace."""
    return read_timeline_summaries_of(con, [run])[run.id]


def read_timeline_summaries_of(con, runs: list[Run]) -> dict[str, tuple[Timeline, bool, bool]]:
    """{run id: :func:`read_timeline_summary`} of ``runs``, in two queries."""
    ids = [run.id for run in runs]
    rows: dict[str, list[tuple]] = {run_id: [] for run_id in ids}
    for run_id, phase, seconds, count in con.execute(
            "SELECT run_id, phase, sum(end_s - start_s), count(*) FROM phases WHERE run_id = ANY(?::VARCHAR[]) "
            "GROUP BY run_id, phase", [ids]).fetchall():
        rows[run_id].append((phase, seconds, count))
    monitored = {r[0] for r in con.execute("SELECT DISTINCT run_id FROM monitor WHERE run_id = ANY(?::VARCHAR[])",
                                           [ids]).fetchall()}
    out = {}
    for run in runs:
        split = dict.fromkeys(PHASES, 0.0)
        idle_gaps = 0
        for phase, seconds, count in rows[run.id]:
            split[phase] = split.get(phase, 0.0) + seconds
            idle_gaps += count if phase == "idle" else 0
        out[run.id] = (Timeline(run_id=run.id, budget_s=run.budget_hours * 3600, time_taken_s=run.time_taken_s,
                                split_s=split, idle_gaps=idle_gaps, phases=[], calls=[], monitor=[]),
                       bool(rows[run.id]), run.id in monitored)
    return out


@warehouse.once.read_once
def read_timeline(con, run: Run) -> Timeline:
    """:func:`run_timeline` on an open connection."""
    return read_timelines_of(con, [run])[run.id]


def read_timelines_of(con, runs: list[Run]) -> dict[str, Timeline]:
    """{run id: :func:`run_timeline`} of ``runs``, in four queries for them all."""
    ids = [run.id for run in runs]
    stretches: dict[str, list[PhaseStretch]] = {run_id: [] for run_id in ids}
    for r in fetch_dicts(con, "SELECT run_id, phase, start_s, end_s, step_from, step_to FROM phases "
                              "WHERE run_id = ANY(?::VARCHAR[]) ORDER BY run_id, start_s", [ids]):
        stretches[r.pop("run_id")].append(PhaseStretch(**r))
    spans: dict[str, tuple[int, float | None]] = dict.fromkeys(ids, (0, None))
    spans.update((run_id, (total, span)) for run_id, total, span in con.execute(
        "SELECT run_id, count(*), max(elapsed_s) FROM steps WHERE run_id = ANY(?::VARCHAR[]) AND trace = 'agent' "
        "AND kind = 'tool_call' AND elapsed_s IS NOT NULL GROUP BY run_id", [ids]).fetchall())
    # Every call, or each time bin's first call and how many calls the bin holds (bin b: [b, b + 1) * bin_s).
    bins = {run_id: max(span or 0.0, 1.0) / MAX_TIMELINE_CALLS if total > MAX_TIMELINE_CALLS else None
            for run_id, (total, span) in spans.items()}
    calls: dict[str, list[TimelineCall]] = {run_id: [] for run_id in ids}
    for run_id, index, elapsed, tool, text, n in con.execute(
            "SELECT run_id, idx, elapsed_s, tool, input, n FROM (SELECT run_id, idx, elapsed_s, tool, input, "
            "row_number() OVER bin AS r, count(*) OVER bin AS n FROM (SELECT s.run_id, idx, elapsed_s, tool, "
            "left(input, 200) AS input, CASE WHEN w.bin_s IS NULL THEN idx ELSE "
            "least(floor(elapsed_s / w.bin_s), ? - 1) END AS b FROM steps s JOIN (SELECT unnest(?::VARCHAR[]) AS "
            "run_id, unnest(?::DOUBLE[]) AS bin_s) w ON w.run_id = s.run_id WHERE s.run_id = ANY(?::VARCHAR[]) "
            "AND trace = 'agent' AND kind = 'tool_call' AND elapsed_s IS NOT NULL) WINDOW bin AS "
            "(PARTITION BY run_id, b ORDER BY idx ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)) "
            "WHERE r = 1 ORDER BY run_id, idx", [MAX_TIMELINE_CALLS, ids, [bins[i] for i in ids], ids]).fetchall():
        calls[run_id].append(TimelineCall(index=index, elapsed_s=elapsed, tool=tool, input=(text or "")[:200],
                                          calls=n, phase=call_phase(text)))
    samples: dict[str, list[MonitorSample]] = {run_id: [] for run_id in ids}
    for r in fetch_dicts(con, "SELECT run_id, t_s, gpu_util, gpu_mem_mib, gpu_mem_total_mib FROM monitor "
                              "WHERE run_id = ANY(?::VARCHAR[]) ORDER BY run_id, t_s", [ids]):
        samples[r.pop("run_id")].append(MonitorSample(**r))
    out = {}
    for run in runs:
        phases = stretches[run.id]
        split = time_split(Phase(p.phase, p.start_s, p.end_s, p.step_from, p.step_to) for p in phases)
        out[run.id] = Timeline(run_id=run.id, budget_s=run.budget_hours * 3600, time_taken_s=run.time_taken_s,
                               split_s=split, idle_gaps=sum(1 for p in phases if p.phase == "idle"), phases=phases,
                               calls=calls[run.id], monitor=samples[run.id], calls_total=spans[run.id][0],
                               bin_s=bins[run.id])
    return out


@dataclass(frozen=True)
class FactRun:
    """The run a :class:`RunFacts` is about, as the analysis page names it: ``agent`` its agent's display name
    (``runs.agent_display``), ``score`` its score (fraction, ``runs.SCORE_SQL``), ``budget_fraction`` the agent's
    time over the budget (time_taken.txt, None without), ``synthetic`` a generated demo run."""

    id: str
    agent_key: str
    agent: str
    benchmark: str
    base_model: str
    synthetic: bool
    score: float | None
    budget_fraction: float | None


@dataclass
class RunFacts:
    """One run as the analysis page counts it. Scores are fractions: ``self_score`` (the agent's last
    self-reported score), ``verified`` (the newest evaluation); ``ratio`` = self / verified (None where undefined,
    ``traces.vocabulary.overoptimism``); ``base_score``: the base model's zero-shot score on the benchmark (fraction,
    from the suite's published baselines, else an ingested baseline evaluation; None when neither exists);
    ``split``: seconds per phase; ``idle_gaps``: idle stretches; ``methods``: the run's method facets."""

    run: FactRun
    methods: set[str]
    self_score: float | None
    verified: float | None
    ratio: float | None
    base_score: float | None
    split: dict[str, float]
    idle_gaps: int
    timed: bool


class MethodMix(Model):
    """Per agent: how many of its latest runs (``runs``) used each method facet (``counts``)."""

    key: str
    agent: str
    runs: int
    counts: dict[str, int]


class MethodScore(Model):
    """Per method facet: mean verified score (fraction; percent in JSON) of the scored latest runs with it and of
    those without it."""

    facet: str
    runs: int
    mean_score: Percent = Field(description="percent (fraction x 100)")
    runs_without: int
    mean_without: Percent = Field(description="percent (fraction x 100)")


class AgentCalibration(Model):
    """Per agent: runs with a defined overoptimism ratio (self-reported / verified), its mean, the mean self-reported
    and verified scores (fractions; percent in JSON), and the best run (highest verified score) with its ratio."""

    key: str
    agent: str
    runs: int
    mean_ratio: float | None
    mean_self: Percent = Field(description="percent (fraction x 100)")
    mean_verified: Percent = Field(description="percent (fraction x 100)")
    best_run: str | None
    best_ratio: float | None


class CalibrationRun(Model):
    """One run with a defined ratio, scores as fractions (also in JSON): ``base_score`` the base model's score on
    the benchmark (None when unknown)."""

    run_id: str
    agent_key: str
    benchmark: str
    base_model: str
    self_score: float
    verified: float
    ratio: float
    base_score: float | None


class CalibrationPoint(NamedTuple):
    """One run with a defined ratio as the calibration chart and the twin's ``calibration.runs`` show it: its id,
    agent key and display name (``runs.agent_display``), benchmark, base model, self-reported and verified scores
    (fractions), their ratio (``traces.vocabulary.overoptimism``) and the base model's score on the benchmark
    (fraction, None when unknown). A tuple, not a model: K=90 has ~1,900 of them per analysis (issue 24)."""

    run_id: str
    agent_key: str
    agent: str
    benchmark: str
    base_model: str
    self_score: float
    verified: float
    ratio: float
    base_score: float | None


class Calibration(Model):
    """The calibration table (``agents``) and every run with a ratio (``runs``), as on /analysis/."""

    agents: list[AgentCalibration]
    runs: list[CalibrationRun]


class AgentTimeUse(Model):
    """Per agent: mean fraction of the budget used (time_taken.txt) over ``runs_timed`` runs, and mean hours per
    phase and idle gaps per run over the ``runs_traced`` runs whose trace has times."""

    key: str
    agent: str
    runs: int
    runs_timed: int
    budget_fraction: float | None
    runs_traced: int
    hours: dict[str, float]
    idle_gaps: float | None


class AnalysisTwin(Model):
    """The analysis page as one JSON object (``/api/analysis?suite=``): the suite id and each of the page's sections,
    as :class:`Analysis` holds them (``calibration`` with the runs behind it, :meth:`Analysis.calibration_page`;
    ``reported``: the suite source's figures and statements, ``traces.reported``)."""

    suite: str
    method_mix: list[MethodMix]
    score_by_method: list[MethodScore]
    calibration: Calibration
    time_use: list[AgentTimeUse]
    reported: list[ReportedFact]


@dataclass
class Analysis:
    """The analysis page of a suite: the per-agent tables over its latest runs (``run_count`` of them,
    ``synthetic_runs`` generated demo runs) and, for the calibration chart and the twins, the runs with a defined
    overoptimism ratio (:attr:`points`, built from ``rated_rows`` when first asked for: the page itself does not
    read them, so its cost does not grow with the runs)."""

    suite: str
    run_count: int
    synthetic_runs: int
    method_mix: list[MethodMix]
    score_by_method: list[MethodScore]
    calibration: list[AgentCalibration]
    time_use: list[AgentTimeUse]
    reported: list[ReportedFact] = field(default_factory=list)
    # (run id, method, agent key, stored agent name, benchmark, base model, self score, verified score) of each
    # rated run, in the page's order: the columns of _RUN_SQL's rows that :attr:`points` reads, not the whole rows
    # (their phases and facets: 0.5 MB more held by every web process's memo at K=90, bench/RESULTS.md, issue 24)
    rated_rows: list[tuple] = field(default_factory=list, repr=False)
    base_scores: dict[tuple[str, str], float] = field(default_factory=dict, repr=False)  # (base model, benchmark)

    @property
    def reported_by_topic(self) -> list[tuple[str, list[ReportedFact]]]:
        """The reported facts grouped by topic, in FACT_TOPIC_TEXT's order, as (topic in words, facts); topics
        without facts left out."""
        topics = [(text, [f for f in self.reported if f.topic == topic]) for topic, text in FACT_TOPIC_TEXT.items()]
        return [(text, items) for text, items in topics if items]

    @cached_property
    def points(self) -> list[CalibrationPoint]:
        """The runs with a defined ratio (self-reported / verified), ordered by agent name then run id as the page's
        tables are: the calibration chart's points and the twin's ``calibration.runs``, built from ``rated_rows`` in
        one pass (agent names resolved once per method). Shared by every caller of the analysis of a warehouse
        version."""
        shown = display_suite(self.suite)
        names: dict[tuple[str, str], str] = {}
        for row in self.rated_rows:
            if (row[1], row[3]) not in names:
                names[(row[1], row[3])] = (agent_display(shown, row[1], row[3]) if shown else row[3]) or row[1]
        base = self.base_scores
        return [CalibrationPoint(row[0], row[2], names[(row[1], row[3])], row[4], row[5], row[6], row[7],
                                 row[6] / row[7], base.get((row[5], row[4])))
                for row in self.rated_rows]  # rated: both scores known, the verified one not 0 (overoptimism)

    def twin(self) -> AnalysisTwin:
        """The page's JSON twin: every section in one object."""
        return AnalysisTwin(suite=self.suite, method_mix=self.method_mix, score_by_method=self.score_by_method,
                            calibration=self.calibration_page(), time_use=self.time_use, reported=self.reported)

    def calibration_page(self) -> Calibration:
        """The calibration table with the runs behind it (the twin of the page's calibration section): the runs
        validated from :attr:`points` by pydantic in one call, not built one model at a time."""
        return Calibration.model_validate({"agents": self.calibration, "runs": [
            {"run_id": p.run_id, "agent_key": p.agent_key, "benchmark": p.benchmark, "base_model": p.base_model,
             "self_score": p.self_score, "verified": p.verified, "ratio": p.ratio, "base_score": p.base_score}
            for p in self.points]})


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _known(values: Iterable[float | None]) -> list[float]:
    """The values that are not None, in order (the facts' optional scores, once a filter made them defined)."""
    return [v for v in values if v is not None]


@warehouse.retrying
def run_facts(suite: str) -> list[RunFacts]:
    """Facts of every latest (non-baseline) run of a suite, ordered by agent then run id."""
    with warehouse.connect() as con:
        return read_run_facts(con, suite)


# What the analysis reads of a run: its row of ``latest_runs`` (migration 0021) with its method's agent, every
# value a scalar: ``mask`` has bit i set when the run used METHOD_FACETS[i] (a string search in the stored facet
# names); ``traced`` it has phases; ``idle`` its idle stretches; then its seconds in each phase of PHASES (0 for
# none). The order of :func:`_facts`' rows.
_RUN_SQL = ("SELECT r.run_id, r.method, m.agent_key, m.agent_name, r.benchmark, r.base_model, r.synthetic, r.score, "
            "r.time_taken_s, r.budget_hours, r.self_score, "
            + " + ".join(f"coalesce(contains(r.facets, ',{m},')::INTEGER, 0) * {1 << i}"
                         for i, m in enumerate(METHOD_FACETS))
            + ", r.traced, r.idle_stretches, " + ", ".join(f"coalesce(r.{p}_s, 0.0)" for p in PHASES)
            + f" FROM latest_runs r JOIN methods m ON m.id = r.method WHERE r.suite = ? AND {AGENT_RUN}")
_SCORE, _SELF, _MASK = 7, 10, 11


def _read_rows(con, suite: str) -> list[tuple]:
    """The suite's latest agent runs as :data:`_RUN_SQL` rows, ordered by stored agent name (case-blind, Python's
    ``str.lower``) then id: the page's order (each agent's first run opens its row). Sorted by id (run ids are
    unique), then each lowered name's runs gathered in that order and the names sorted: no Python key call per run
    (K=90: 2,520 runs, ~90 names)."""
    rows = con.execute(_RUN_SQL, [suite]).fetchall()
    rows.sort(key=itemgetter(0))
    lowered = {name: (name or "").lower() for name in set(map(itemgetter(3), rows))}
    by_name: dict[str, list[tuple]] = {}
    for row in rows:
        by_name.setdefault(lowered[row[3]], []).append(row)
    return [row for name in sorted(by_name) for row in by_name[name]]


def read_run_facts(con, suite: str) -> list[RunFacts]:
    """:func:`run_facts` on an open connection. The runs are read with what the page shows of them
    (:class:`FactRun`: no verdicts, which the analysis does not count), agent names resolved once per method.

    One query of ``latest_runs`` (migration 0021: each latest run with its score, facets, self-reported score and
    seconds per phase gathered at write time, ``traces.services.refresh_latest_runs``) joined with ``methods``,
    whose cost does not grow with the facet and phase rows stored (K=90: ~20,000 and ~9,000 for 2,520 runs)."""
    return _facts(_read_rows(con, suite), display_suite(suite), read_base_scores(con, suite))


def read_base_scores(con, suite: str) -> dict[tuple[str, str], float]:
    """{(base model, benchmark): the base model's zero-shot score (fraction)}: the suite's published baselines,
    else the newest evaluation of a latest baseline run (``latest_runs.newest_accuracy``)."""
    base = {(m, t): v for m, t, v in con.execute(
        "SELECT base_model, benchmark, value FROM reported_cells WHERE suite = ? AND agent = 'base-zeroshot'",
        [suite]).fetchall()}
    for m, t, v in con.execute(
            f"SELECT r.base_model, r.benchmark, r.newest_accuracy FROM latest_runs r WHERE r.suite = ? AND NOT "
            f"({AGENT_RUN}) AND r.newest_accuracy IS NOT NULL", [suite]).fetchall():
        base.setdefault((m, t), v)
    return base


def _methods(mask: int) -> frozenset[str]:
    """The method facets of a :data:`_RUN_SQL` mask."""
    return frozenset(m for i, m in enumerate(METHOD_FACETS) if mask >> i & 1)


def _facts(rows: Iterable[tuple], shown, base: dict[tuple[str, str], float]) -> list[RunFacts]:
    """:class:`RunFacts` of :data:`_RUN_SQL` rows, in their order: agent names resolved once per method
    (``shown``: the suite as displayed, None when unknown), method facets once per mask."""
    names: dict[tuple[str, str], str] = {}
    methods_of: dict[int, frozenset[str]] = {}
    facts = []
    for (run_id, method, key, stored, benchmark, model, synthetic, score, taken, budget, own, mask, traced, idle,
         *seconds) in rows:
        if (method, stored) not in names:
            names[(method, stored)] = (agent_display(shown, method, stored) if shown else stored) or method
        if mask not in methods_of:
            methods_of[mask] = _methods(mask)
        run = FactRun(run_id, key, names[(method, stored)], benchmark, model, synthetic, score,
                      None if taken is None or not budget else taken / (budget * 3600))
        facts.append(RunFacts(run, set(methods_of[mask]), own, score, overoptimism(own, score),
                              base.get((model, benchmark)), dict(zip(PHASES, seconds)), idle, traced))
    return facts


_ANALYSES: warehouse.memo.PerVersion[Analysis] = warehouse.memo.PerVersion(maxsize=4)


@warehouse.retrying
def analysis(suite: str) -> Analysis:
    """The analysis page of a suite and its JSON twin (``/api/analysis``), computed once per warehouse version
    (``warehouse.memo``: the page and its twin share one computation; callers must not change it), in one unit of work: method mix,
    score by method, calibration and time use per agent over the suite's latest runs, and what the suite's
    source reports on the same questions (``reported``, ``traces.reported``).

    Scores are fractions (percent in JSON). Score by method compares runs of every benchmark and base model together (their
    difficulty differs), raw verified scores (a flagged run counts with its own score). Ratios average per run.
    """
    with warehouse.snapshot() as con:  # one unit of work on a memo hit too (cheap: the request's open instance)
        return _ANALYSES.get(suite, lambda: read_analysis(con, suite))


def read_analysis(con, suite: str) -> Analysis:
    """:func:`analysis` computed on an open connection (no memo), from ``latest_runs`` (migration 0021): one query
    of a row of scalars per run (no facet or phase row read, no list converted), then per agent and per table a
    comprehension over its rows, summed in the page's run order as before (the same floats). No Python object is
    built per run: the runs with a ratio (:attr:`Analysis.points`) are built from the rows when first asked for."""
    reported = read_reported_facts(con, suite)
    rows = _read_rows(con, suite)
    agents: dict[str, list[tuple]] = {}
    for row in rows:
        agents.setdefault(row[2], []).append(row)
    shown = display_suite(suite)
    mix, calibration, time_use = [], [], []
    traced_at = _MASK + 1
    mask_of, traced_of = itemgetter(_MASK), itemgetter(traced_at)
    seconds_at = range(_MASK + 3, _MASK + 3 + len(PHASES))
    for key, items in agents.items():  # one pass per agent's runs for each table (K=90: 63 agents, 2,520 runs)
        first = items[0]
        name = (agent_display(shown, first[1], first[3]) if shown else first[3]) or first[1]
        masks = Counter(map(mask_of, items)).items()  # a few distinct masks per agent
        mix.append(MethodMix(key=key, agent=name, runs=len(items), counts={
            m: sum(n for mask, n in masks if mask >> i & 1) for i, m in enumerate(METHOD_FACETS)}))
        # overoptimism(own, verified), inlined: both known and the verified score not 0 (falsy: None or 0.0)
        rated = [(row[0], own, verified, own / verified) for row in items
                 if (own := row[_SELF]) is not None and (verified := row[_SCORE])]
        best = max(rated, key=lambda r: r[2]) if rated else None
        calibration.append(AgentCalibration(
            key=key, agent=name, runs=len(rated), mean_ratio=_mean([r[3] for r in rated]),
            mean_self=_mean([r[1] for r in rated]), mean_verified=_mean([r[2] for r in rated]),
            best_run=best[0] if best else None, best_ratio=best[3] if best else None))
        timed = [row[8] / (row[9] * 3600) for row in items if row[8] is not None and row[9]]
        traced = list(compress(items, map(traced_of, items)))
        columns = list(zip(*traced))  # the traced runs' values column by column, in order (none: empty)
        time_use.append(AgentTimeUse(
            key=key, agent=name, runs=len(items), runs_timed=len(timed), budget_fraction=_mean(timed),
            runs_traced=len(traced),
            hours={p: (_mean([v / 3600 for v in columns[at]]) if traced else None) or 0.0
                   for p, at in zip(PHASES, seconds_at)},
            idle_gaps=_mean([float(v) for v in columns[traced_at + 1]]) if traced else None))
    # Per method facet, the verified scores of the runs with it and without it, in the runs' order: picked by
    # ``compress`` over the scored runs' masks, each distinct mask tested once per facet (no Python step per run).
    scored = [row for row in rows if row[_SCORE] is not None]
    scores, scored_masks = [row[_SCORE] for row in scored], [row[_MASK] for row in scored]
    distinct = set(scored_masks)
    by_method = []
    for i, m in enumerate(METHOD_FACETS):
        has, lacks = {mask: mask >> i & 1 for mask in distinct}, {mask: not mask >> i & 1 for mask in distinct}
        with_m = list(compress(scores, map(has.__getitem__, scored_masks)))
        without_m = list(compress(scores, map(lacks.__getitem__, scored_masks)))
        by_method.append(MethodScore(facet=m, runs=len(with_m), mean_score=_mean(with_m),
                                     runs_without=len(without_m), mean_without=_mean(without_m)))
    return Analysis(suite, len(rows), sum(map(itemgetter(6), rows)), mix, by_method, calibration, time_use,
                    reported, [(*row[:6], own, verified) for row in rows  # overoptimism's
                               if (own := row[_SELF]) is not None and (verified := row[_SCORE])],
                    read_base_scores(con, suite))
