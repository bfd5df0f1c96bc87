"""Runs side by side: ``/compare/?runs=<id>,<id>[,...]`` and ``/api/compare`` (one selector,
:func:`compare_page`), and the runs a run page offers to compare with (:func:`read_cell_peers`).

**What is compared.** Per run: the run (state, score, time used, tokens, cost, verdicts), its evaluations, its
judges' verdicts, its facets and its time in phases; :attr:`ComparePage.facts` and :attr:`ComparePage.facets`
put each of them on one row with a ``differs`` flag (values compared as shown). Phases are binned on one axis
from 0 to the largest budget (:data:`PHASE_BINS` bins, each the phase that filled most of it), so the page holds
the same number of bars for a 200- and a 60,000-step trace.

**The aligned traces** (:func:`read_aligned`): the agent traces in columns, page by page, ``limit`` steps per run
at most. With clocks in every run (``runs.started_at``), steps are placed by elapsed time (a step without a time
takes the last time before it; a time going backwards is held at the highest seen): each run's next ``limit + 1``
steps after its cursor are read by index (a keyset window, as the run page), the page ends at the earliest time
at which some run has no more steps read, and each run shows its steps up to that time. Rows then zip the steps
in time order, a new row when a run already has a step in the current one. Without clocks in some run, steps
are aligned by their position (row k: each run's k-th step after its cursor). The cursor of the next page is
each run's last step shown (``after=i,j``), so a page reads ``runs x (limit + 1)`` steps whatever the traces'
lengths.
"""
from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any, Literal, NamedTuple, Protocol, TypeVar

from pydantic import Field

from ptbsite import units, warehouse
from ptbsite.warehouse.once import kept_key
from ptbsite.query import ascii_int

from ..templatetags.trace_format import hms, percent
from ..schemas import STATE_TEXT, Evaluation, Facet, JudgeVerdict, Model, Percent, Run, RunState
from .runs import AGENT_RUN, OVERRIDES_TABLE, SCORE_SQL, read_evaluations, read_run, read_run_facets, read_runs_by_id
from .steps import read_trace_names
from .verdicts import read_judge_panel
from ..vocabulary import FACET_NAME, METHOD_FACETS, PHASES, overoptimism

MAX_RUNS = 4  # runs side by side at most
PHASE_BINS = 120  # bars per run on the phase axis
STEP_CHARS = 400  # characters of each step input and output shown in a column
MAX_LIMIT = 100  # steps per run per page at most
PEERS_SHOWN = 12  # other agents' runs of the cell a run page offers at most


class PhaseBin(Model):
    """One bin of a run's phase axis: ``start_s`` and ``end_s`` (seconds since the trace's first timestamp) and
    the phase that filled most of it (``traces.vocabulary.PHASES``)."""

    start_s: float
    end_s: float
    phase: str
    left_pct: float = Field(description="where the bin starts, percent of the axis (0 to the largest budget)")
    width_pct: float = Field(description="the bin's width, percent of the axis")


class CompareRun(Model):
    """One run of a comparison: the run, its evaluations (newest first), its judges' verdicts, facets,
    ``self_score`` (the last self-reported score, a fraction; None without), ``overoptimism`` (self-reported over
    verified), seconds per phase (``split_s``) and the binned phases (``phases``)."""

    run: Run
    evaluations: list[Evaluation]
    judge_panel: list[JudgeVerdict] = Field(default_factory=list)
    facets: list[Facet]
    self_score: Percent = Field(None, description="percent, the agent's last self-reported score")
    overoptimism: float | None
    split_s: dict[str, float]
    phases: list[PhaseBin]
    used_pct: float | None = Field(None, description="time used (time_taken.txt), percent of the phase axis")

    @property
    def has_times(self) -> bool:
        return self.run.started_at is not None


class CompareRow(Model):
    """A row of the side-by-side tables: ``label``, one shown value per run, ``differs`` when they are not all
    the same."""

    key: str
    label: str
    values: list[str]
    differs: bool


class AlignedStep(Model):
    """A step in a column: its index, kind, tool, ``elapsed_s`` (None without clocks), and its input and output
    cut to STEP_CHARS characters (``*_cut``: there is more on its page)."""

    index: int
    kind: str
    tool: str | None = None
    elapsed_s: float | None = None
    is_error: bool = False
    input: str | None = None
    output: str = ""
    input_cut: bool = False
    output_cut: bool = False


class AlignedRow(Model):
    """A row of the aligned traces: ``at_s`` the elapsed time of its first step (time alignment) or None, and a
    cell per run (its step, or None)."""

    at_s: float | None = None
    cells: list[AlignedStep | None]


class Aligned(Model):
    """A page of the aligned traces: ``mode`` ``time`` or ``index`` (module docstring), its ``rows``, ``after``
    the cursors it started after (one per run), ``next`` those of the next page (None on the last)."""

    mode: Literal["time", "index"]
    rows: list[AlignedRow]
    after: list[int]
    next: list[int] | None


class ComparePage(Model):
    """``/compare/?runs=``: the runs (:class:`CompareRun`), ``budget_s`` the phase axis' end (the largest budget,
    seconds), ``facts`` and ``facets`` rows (:class:`CompareRow`), ``steps`` a page of the aligned agent traces."""

    runs: list[CompareRun]
    budget_s: float
    facts: list[CompareRow]
    facets: list[CompareRow]
    steps: Aligned
    missing: list[str] = Field(default_factory=list, description="ids asked for that are no run")


def asked_runs(value: str | list[str] | None) -> list[str]:
    """Every run id asked for in ``runs=a,b`` (or repeated ``runs=a&runs=b``), each once in order (each cut at 64
    characters, at most 64 of them): what a comparison was asked for, before :func:`parse_runs` keeps MAX_RUNS."""
    items = value if isinstance(value, list) else [value or ""]
    ids: list[str] = []
    for item in items:
        for part in item.split(","):
            part = part.strip()[:64]
            if part and part not in ids and len(ids) < 64:
                ids.append(part)
    return ids


def parse_runs(value: str | list[str] | None) -> list[str]:
    """Run ids from ``runs=a,b`` (or repeated ``runs=a&runs=b``), each once in order, at most MAX_RUNS."""
    return asked_runs(value)[:MAX_RUNS]


def parse_cursors(value: str | None) -> list[int]:
    """Cursors ``"12,-1"`` -> [12, -1] (one step index per run); a part that is not an integer >= -1 is -1 (from
    the start)."""
    out = []
    for part in (value or "").split(",")[:MAX_RUNS]:
        cursor = ascii_int(part.strip(), signed=True)
        out.append(cursor if cursor is not None and -1 <= cursor < 10**9 else -1)
    return out if value else []


@warehouse.once.read_once
def _phases(con, run: Run, budget_s: float) -> tuple[dict[str, float], list[PhaseBin]]:
    """Seconds per phase and the phase axis in PHASE_BINS bins of ``budget_s / PHASE_BINS`` (each bin's phase:
    the one with most seconds in it, the first by name on a tie: ``arg_max`` alone picked either, so one axis could
    differ between two reads), in SQL: a 60,000-step trace's ~5,000 stretches become 120 rows at most."""
    width = max(budget_s, 1.0) / PHASE_BINS
    split = con.execute("SELECT phase, sum(end_s - start_s) FROM phases WHERE run_id = ? GROUP BY phase",
                        [run.id]).fetchall()
    rows = con.execute(
        "SELECT b, first(phase ORDER BY s DESC, phase) FROM (SELECT b, phase, sum(least(end_s, (b + 1) * ?) - greatest(start_s, b * ?)) "
        "AS s FROM (SELECT phase, start_s, end_s, unnest(range(CAST(floor(start_s / ?) AS BIGINT), "
        "CAST(floor(greatest(end_s - 1e-9, start_s) / ?) AS BIGINT) + 1)) AS b FROM phases WHERE run_id = ? "
        "AND end_s > start_s AND start_s < ?) WHERE b < ? GROUP BY b, phase) GROUP BY b ORDER BY b",
        [width, width, width, width, run.id, budget_s, PHASE_BINS]).fetchall()
    return _phases_of(split, rows, budget_s)


def _phases_of(split_rows: list[tuple[str, float]], bin_rows: list[tuple[int, str]],
               budget_s: float) -> tuple[dict[str, float], list[PhaseBin]]:
    """:func:`_phases`' answer from its rows: (phase, seconds) and (bin, its phase) in bin order."""
    width = max(budget_s, 1.0) / PHASE_BINS
    split = dict.fromkeys(PHASES, 0.0)
    for phase, seconds in split_rows:
        split[phase] = split.get(phase, 0.0) + seconds
    axis = max(budget_s, 1.0) / 100
    return split, [PhaseBin(start_s=b * width, end_s=(b + 1) * width, phase=p, left_pct=round(b * width / axis, 3),
                            width_pct=round(width / axis, 3)) for b, p in bin_rows]


def _shown(value) -> str:
    return "" if value is None else str(value)


def _row(key: str, label: str, values: list[str]) -> CompareRow:
    return CompareRow(key=key, label=label, values=values, differs=len(set(values)) > 1)


def _facts(runs: list[CompareRun]) -> list[CompareRow]:
    """The rows of what each run is and what it got, as shown (percent, h:mm, counts)."""
    def pct(x: float | None) -> str:
        return "" if x is None else f"{100 * x:.1f}%"

    rows = [
        _row("agent", "Agent", [c.run.agent_display for c in runs]),
        _row("scaffold", "Scaffold", [c.run.scaffold for c in runs]),
        _row("model", "Model in the trace", [_shown(c.run.trace_model) for c in runs]),
        _row("cell", "Benchmark × base model", [f"{c.run.benchmark_name} × {c.run.base_model_name}" for c in runs]),
        _row("attempt", "Attempt", ["counts" if c.run.is_latest else "older attempt" for c in runs]),
        _row("state", "State", [c.run.state_text for c in runs]),
        _row("score", "Score", [pct(c.run.score) for c in runs]),
        _row("self_score", "Self-reported score", [pct(c.self_score) for c in runs]),
        _row("overoptimism", "Self-reported / verified", [
            "" if c.overoptimism is None else f"{c.overoptimism:.2f}x" for c in runs]),
        _row("evaluations", "Evaluations", ["; ".join(f"{e.origin} {pct(e.score)}" for e in c.evaluations)
                                            for c in runs]),
        _row("verdicts", "Verdicts (after review)", ["; ".join(v for v in c.run.verdict_text.values())
                                                     for c in runs]),
        _row("time", "Time used", [
            f"{units.hm(c.run.time_taken_s)} of {units.hm(c.run.budget_hours * 3600)}"
            if c.run.time_taken_s is not None else "" for c in runs]),
        _row("steps", "Steps", [f"{c.run.step_count:,}" for c in runs]),
        _row("tokens", "Tokens in / out", [
            f"{c.run.tokens_in:,} / {c.run.tokens_out or 0:,}" if c.run.tokens_in is not None else "" for c in runs]),
        _row("cost", "Cost", ["" if c.run.cost_usd is None else f"${c.run.cost_usd:,.2f}" for c in runs]),
    ]
    judges = sorted({(v.judge, v.attempt, v.kind) for c in runs for v in c.judge_panel})
    for judge, attempt, kind in judges:
        values = [next((v.value_text for v in c.judge_panel if (v.judge, v.attempt, v.kind) == (judge, attempt, kind)),
                       "") for c in runs]
        label = f"Judge {judge}{' (rerun)' if attempt != 'original' else ''}: {kind.replace('_', ' ')}"
        rows.append(_row(f"judge:{judge}:{attempt}:{kind}", label, values))
    for phase in PHASES:
        rows.append(_row(f"phase:{phase}", f"Time in {phase}", [
            units.hm(c.split_s.get(phase, 0.0)) if c.phases or c.split_s.get(phase) else "" for c in runs]))
    return rows


def _facet_value(facets: list[Facet], name: str) -> str:
    """A facet as shown: a method facet "yes" (or ""), a measured one its values (comma-separated, sorted) or its
    number."""
    found = [f for f in facets if f.facet == name]
    if not found:
        return ""
    if name in METHOD_FACETS:
        return "yes"
    if name == "self_score":
        return "" if found[0].value_num is None else f"{100 * found[0].value_num:.1f}%"
    if all(f.value_num is not None and not f.value for f in found) or (
            len(found) == 1 and found[0].value_num is not None):
        return f"{found[0].value_num:g}"
    return ", ".join(sorted({f.value for f in found if f.value}))


def _facet_rows(runs: list[CompareRun]) -> list[CompareRow]:
    names = [n for n in FACET_NAME if any(f.facet == n for c in runs for f in c.facets)]
    names += sorted({f.facet for c in runs for f in c.facets} - set(names))
    return [_row(n, FACET_NAME.get(n, n), [_facet_value(c.facets, n) for c in runs]) for n in names]


def read_compare_run(con, run: Run, budget_s: float) -> CompareRun:
    """One run's side of a comparison (:class:`CompareRun`) on an open connection, its phases binned on an axis
    from 0 to ``budget_s`` seconds."""
    return _read_compare_run(con, run, budget_s)


def _read_compare_run(con, run: Run, budget_s: float) -> CompareRun:
    facets = read_run_facets(con, run.id)
    own = next((f.value_num for f in facets if f.facet == "self_score"), None)
    split, bins = _phases(con, run, budget_s)
    used = None if run.time_taken_s is None else round(min(100.0, 100 * run.time_taken_s / max(budget_s, 1.0)), 3)
    panel = read_judge_panel(con, run, read_trace_names(con, run.id))
    return CompareRun(run=run, evaluations=read_evaluations(con, run.id), judge_panel=panel, facets=facets,
                      self_score=own, overoptimism=overoptimism(own, run.score), split_s=split, phases=bins,
                      used_pct=used)


@warehouse.once.read_once
def _window(con, run_id: str, after: int, limit: int) -> list[tuple]:
    """The agent trace's steps from index ``after`` (the cursor step itself, for the time it carries) up to
    ``limit + 1`` after it: a keyset window by index (indices are dense), then the rest when it falls short."""
    columns = ("idx, kind, tool, elapsed_s, is_error, left(input, ?), left(output, ?), "
               "coalesce(input_bytes, strlen(input)) > ?, coalesce(output_bytes, strlen(output)) > ?")
    params = [STEP_CHARS, STEP_CHARS, STEP_CHARS, STEP_CHARS, run_id]
    rows = con.execute(f"SELECT {columns} FROM steps WHERE run_id = ? AND trace = 'agent' AND idx >= ? AND idx <= ? "
                       "ORDER BY idx", [*params, after, after + limit + 1]).fetchall()
    later = [r for r in rows if r[0] > after]
    if len(later) < limit + 1:
        rows += con.execute(f"SELECT {columns} FROM steps WHERE run_id = ? AND trace = 'agent' AND idx > ? "
                            "ORDER BY idx LIMIT ?", [*params, after + limit + 1, limit + 1 - len(later)]).fetchall()
    return rows


def _step(row: tuple) -> AlignedStep:
    idx, kind, tool, elapsed, is_error, text_in, text_out, in_cut, out_cut = row
    return AlignedStep(index=idx, kind=kind, tool=tool, elapsed_s=elapsed, is_error=is_error, input=text_in,
                       output=text_out or "", input_cut=bool(in_cut) and text_in is not None,
                       output_cut=bool(out_cut))


def read_aligned(con, runs: list[Run], after: list[int], limit: int) -> Aligned:
    """A page of the runs' agent traces aligned (module docstring): ``after`` one cursor per run (-1: from the
    start), ``limit`` steps per run at most."""
    after = (after + [-1] * len(runs))[:len(runs)]
    mode: Literal["time", "index"] = "time" if all(r.started_at is not None for r in runs) else "index"
    windows = [_window(con, r.id, a, limit) for r, a in zip(runs, after, strict=True)]
    steps = [[_step(row) for row in w if row[0] > a] for w, a in zip(windows, after, strict=True)]
    if mode == "index":
        shown = [s[:limit] for s in steps]
        rows = [AlignedRow(cells=[s[k] if k < len(s) else None for s in shown])
                for k in range(max((len(s) for s in shown), default=0))]
    else:
        # Each step's time on the shared axis: the highest time seen so far in its run (from the cursor step on).
        timed: list[list[tuple[float, AlignedStep]]] = []
        for window, a, run_steps in zip(windows, after, steps, strict=True):
            seen = max((row[3] for row in window if row[0] <= a and row[3] is not None), default=0.0)
            placed = []
            for s in run_steps:
                seen = max(seen, s.elapsed_s) if s.elapsed_s is not None else seen
                placed.append((seen, s))
            timed.append(placed)
        horizon = min((p[limit - 1][0] for p in timed if len(p) > limit), default=float("inf"))
        shown_timed = [[(t, s) for t, s in p[:limit] if t <= horizon] for p in timed]
        merged = sorted(((t, col, s) for col, p in enumerate(shown_timed) for t, s in p),
                        key=lambda x: (x[0], x[1], x[2].index))
        rows = []
        for t, col, s in merged:
            if not rows or rows[-1].cells[col] is not None:
                rows.append(AlignedRow(at_s=t, cells=[None] * len(runs)))
            rows[-1].cells[col] = s
        shown = [[s for _, s in p] for p in shown_timed]
    cursors = [s[-1].index if s else a for s, a in zip(shown, after, strict=True)]
    more = any(len(full) > len(part) for full, part in zip(steps, shown, strict=True))
    return Aligned(mode=mode, rows=rows, after=after, next=cursors if more else None)


STEPS_SHOWN = 25  # steps of each run on the first page of the aligned traces (the page's default ``limit``)


class SideRow(Model):
    """One run's value on a row of the comparison's tables, as shown: ``key`` and ``label`` as
    :class:`CompareRow`'s, ``value`` this run's. Judge rows carry ``order`` ((judge, attempt, kind): the rows of
    several runs are sorted by it), phase rows ``nonzero`` (seconds in the phase), facet rows ``rank`` (the
    facet's place in ``FACET_NAME``; None: after those, by key)."""

    key: str
    label: str
    value: str
    order: list[str] | None = None
    nonzero: bool | None = None
    rank: int | None = None


class SideAxis(Model):
    """A run's phase axis for a comparison whose largest budget is ``budget_s`` seconds (``budget_hm`` as shown):
    ``bins`` as :func:`_phases` bins them, each bin's ``title`` as the page shows it, ``used_pct`` the time used on
    that axis."""

    budget_s: float
    budget_hm: str
    bins: list[PhaseBin]
    titles: list[str]
    used_pct: float | None = None


class SideStep(AlignedStep):
    """A step of the run's first window of the aligned traces: ``at_s`` its time on the shared axis (the highest
    elapsed time up to it, from 0: :func:`read_aligned` from the start), ``at_text`` and ``elapsed_text`` as shown
    (h:mm:ss), ``href`` its page (set by the caller: the live URL or the static export's file)."""

    at_s: float
    at_text: str
    elapsed_text: str
    href: str = ""


class CompareSide(Model):
    """What a comparison shows of one run, whatever runs it is compared with (the static export's
    ``runs/<id>/compare.json``, from which the browser builds ``/compare/?runs=`` as :func:`compare_page` and
    traces/compare.html would): the header (``title``, ``method``, ``run_dir``, ``name``: agent and seed as the
    column heads show them, ``href`` the run page), its rows (``facts``, ``judges``, ``phases``, ``facets``: one
    value each), ``axes`` its phase axis for each budget a comparison can have (every budget of the warehouse at
    least its own), and its first ``limit + 1`` agent steps (``steps``). ``has_times``: the trace has clocks
    (time alignment needs every run to)."""

    run_id: str
    title: str
    method: str
    run_dir: str
    name: str
    href: str = ""
    has_times: bool
    budget_s: float
    used_title: str
    facts: list[SideRow]
    judges: list[SideRow]
    phases: list[SideRow]
    facets: list[SideRow]
    axes: list[SideAxis]
    limit: int
    steps: list[SideStep]


def read_budgets(con) -> list[float]:
    """Every run's budget in the warehouse, seconds, each once, ascending: the axes a comparison can have."""
    return [float(h) * 3600 for (h,) in con.execute(
        "SELECT DISTINCT budget_hours FROM runs WHERE budget_hours IS NOT NULL ORDER BY 1").fetchall()]


def read_compare_side(con, run: Run, budgets_s: list[float], limit: int = STEPS_SHOWN) -> CompareSide:
    """:class:`CompareSide` of ``run`` on an open connection: the same selectors as :func:`compare_page`
    (:func:`read_compare_run`, :func:`_facts`, :func:`_facet_rows`, :func:`_window`) on this run alone; its phase
    axis binned for each of ``budgets_s`` at least its own budget (:func:`read_budgets`)."""
    own_s = run.budget_hours * 3600
    side = read_compare_run(con, run, own_s)
    facts = _facts([side])
    facet_order = {name: n for n, name in enumerate(FACET_NAME)}
    judge_keys = {f"judge:{j}:{a}:{k}": [j, a, k] for j, a, k in {(v.judge, v.attempt, v.kind) for v in side.judge_panel}}
    judges = [SideRow(key=r.key, label=r.label, value=r.values[0], order=judge_keys[r.key])
              for r in facts if r.key in judge_keys]
    phases = [SideRow(key=f"phase:{p}", label=f"Time in {p}", value=units.hm(side.split_s.get(p, 0.0)),
                      nonzero=bool(side.split_s.get(p))) for p in PHASES]
    axes = []
    for budget_s in sorted({own_s, *(b for b in budgets_s if b >= own_s)}):
        split, bins = (side.split_s, side.phases) if budget_s == own_s else _phases(con, run, budget_s)
        used = (None if run.time_taken_s is None
                else round(min(100.0, 100 * run.time_taken_s / max(budget_s, 1.0)), 3))
        axes.append(SideAxis(budget_s=budget_s, budget_hm=units.hm(budget_s), bins=bins, used_pct=used,
                             titles=[f"{units.hm(b.start_s)}–{units.hm(b.end_s)}: {b.phase}" for b in bins]))
    steps, seen = [], 0.0
    for row in _window(con, run.id, -1, limit):
        if row[0] <= -1:
            continue
        step = _step(row)
        seen = max(seen, step.elapsed_s) if step.elapsed_s is not None else seen
        steps.append(SideStep(**step.model_dump(), at_s=seen, at_text=hms(seen), elapsed_text=hms(step.elapsed_s)))
    return CompareSide(
        run_id=run.id, title=run.title, method=run.method, run_dir=run.run_dir,
        name=run.agent_display + (f" (seed {run.seed})" if run.seed else ""), has_times=side.has_times,
        budget_s=own_s, used_title=f"time used {units.hm(run.time_taken_s)}",
        facts=[SideRow(key=r.key, label=r.label, value=r.values[0]) for r in facts
               if not r.key.startswith(("judge:", "phase:"))],
        judges=judges, phases=phases, axes=axes, limit=limit, steps=steps,
        facets=[SideRow(key=r.key, label=r.label, value=r.values[0], rank=facet_order.get(r.key))
                for r in _facet_rows([side])])


@warehouse.retrying
def compare_side(run_id: str, budgets_s: list[float] | None = None) -> CompareSide | None:
    """:func:`read_compare_side` of one run in its own unit of work (``budgets_s``: :func:`read_budgets` when
    None); None for an unknown run."""
    with warehouse.snapshot(unwritten=OVERRIDES_TABLE) as con:
        run = read_run(con, run_id)
        if run is None:
            return None
        return read_compare_side(con, run, read_budgets(con) if budgets_s is None else budgets_s)


def read_sides_ahead(con, runs: list[Run], budgets_s: list[float],
                     limit: int = STEPS_SHOWN) -> dict[str, dict[Hashable, Any]]:
    """What :func:`read_compare_side` of each of ``runs`` reads beyond its facets, evaluations and judge panel,
    read for them all at once as ``warehouse.once`` keeps it ({run id: {kept key: answer}}): its seconds per phase
    and phase axis for its budget and each of ``budgets_s`` above it (:func:`_phases`), and its first ``limit``
    steps (:func:`_window`); 2 + (distinct budgets) + 2 queries."""
    ids = [run.id for run in runs]
    out: dict[str, dict[Hashable, Any]] = {run_id: {} for run_id in ids}
    if not ids:
        return out
    splits: dict[str, list[tuple[str, float]]] = {run_id: [] for run_id in ids}
    for run_id, phase, seconds in con.execute(
            "SELECT run_id, phase, sum(end_s - start_s) FROM phases WHERE run_id = ANY(?::VARCHAR[]) "
            "GROUP BY run_id, phase", [ids]).fetchall():
        splits[run_id].append((phase, seconds))
    needs: dict[float, list[Run]] = {}
    for run in runs:
        own_s = run.budget_hours * 3600
        for budget_s in {own_s, *(b for b in budgets_s if b >= own_s)}:
            needs.setdefault(budget_s, []).append(run)
    for budget_s, having in needs.items():
        width = max(budget_s, 1.0) / PHASE_BINS
        bins: dict[str, list[tuple[int, str]]] = {run.id: [] for run in having}
        for run_id, b, p in con.execute(
                "SELECT run_id, b, first(phase ORDER BY s DESC, phase) FROM (SELECT run_id, b, phase, "
                "sum(least(end_s, (b + 1) * ?) - greatest(start_s, b * ?)) AS s FROM (SELECT run_id, phase, start_s, "
                "end_s, unnest(range(CAST(floor(start_s / ?) AS BIGINT), CAST(floor(greatest(end_s - 1e-9, start_s) "
                "/ ?) AS BIGINT) + 1)) AS b FROM phases WHERE run_id = ANY(?::VARCHAR[]) AND end_s > start_s AND "
                "start_s < ?) WHERE b < ? GROUP BY run_id, b, phase) GROUP BY run_id, b ORDER BY run_id, b",
                [width, width, width, width, [run.id for run in having], budget_s, PHASE_BINS]).fetchall():
            bins[run_id].append((b, p))
        for run in having:
            out[run.id][kept_key(_phases, run, budget_s)] = _phases_of(splits[run.id], bins[run.id], budget_s)
    columns = ("run_id, idx, kind, tool, elapsed_s, is_error, left(input, ?), left(output, ?), "
               "coalesce(input_bytes, strlen(input)) > ?, coalesce(output_bytes, strlen(output)) > ?")
    params = [STEP_CHARS, STEP_CHARS, STEP_CHARS, STEP_CHARS]
    windows: dict[str, list[tuple]] = {run_id: [] for run_id in ids}
    for row in con.execute(f"SELECT {columns} FROM steps WHERE run_id = ANY(?::VARCHAR[]) AND trace = 'agent' "
                           "AND idx >= -1 AND idx <= ? ORDER BY run_id, idx", [*params, ids, limit]).fetchall():
        windows[row[0]].append(row[1:])
    short = {run_id: limit + 1 - len([r for r in rows if r[0] > -1]) for run_id, rows in windows.items()}
    short = {run_id: n for run_id, n in short.items() if n > 0}
    if short:
        for row in con.execute(f"SELECT * EXCLUDE (k) FROM (SELECT {columns}, row_number() OVER (PARTITION BY run_id "
                               "ORDER BY idx) AS k FROM steps WHERE run_id = ANY(?::VARCHAR[]) AND trace = 'agent' "
                               "AND idx > ?) WHERE k <= ? ORDER BY run_id, idx",
                               [*params, list(short), limit, limit + 1]).fetchall():
            if short[row[0]] > 0:
                windows[row[0]].append(row[1:])
                short[row[0]] -= 1
    for run_id, rows in windows.items():
        out[run_id][kept_key(_window, run_id, -1, limit)] = rows
    return out


@warehouse.retrying
def compare_page(run_ids: list[str], *, after: list[int] | None = None, limit: int = 25,
                 at_seconds: float | None = None, steps_only: bool = False) -> ComparePage | None:
    """The comparison of ``run_ids`` (at most MAX_RUNS; unknown ids are listed in ``missing``), with a page of
    their aligned agent traces after the cursors ``after`` (one per run), or from the first step at or after
    ``at_seconds`` of elapsed time in each run; ``limit`` steps per run (1-MAX_LIMIT). ``steps_only``: the runs
    and the aligned page only (the page's "more steps" request). None when fewer than one run is found. One unit
    of work."""
    limit = max(1, min(limit, MAX_LIMIT))
    with warehouse.snapshot(unwritten=OVERRIDES_TABLE) as con:
        found = {r.id: r for r in read_runs_by_id(con, run_ids)}
        runs = [found[i] for i in run_ids if i in found]
        if not runs:
            return None
        if at_seconds is not None:
            after = []
            for r in runs:
                row = con.execute("SELECT min(idx) FROM steps WHERE run_id = ? AND trace = 'agent' AND "
                                  "elapsed_s >= ?", [r.id, at_seconds]).fetchone()
                after.append((row[0] if row and row[0] is not None else r.step_count) - 1)
        budget_s = max(r.budget_hours for r in runs) * 3600
        sides = [] if steps_only else [read_compare_run(con, r, budget_s) for r in runs]
        steps = read_aligned(con, runs, list(after or []), limit)
    if steps_only:
        sides = [CompareRun(run=r, evaluations=[], facets=[], self_score=None, overoptimism=None, split_s={},
                              phases=[], used_pct=None) for r in runs]
    return ComparePage(runs=sides, budget_s=budget_s, facts=[] if steps_only else _facts(sides),
                       facets=[] if steps_only else _facet_rows(sides), steps=steps,
                       missing=[i for i in run_ids if i not in found])


class PeerRun(Model):
    """A run as a run page's "Compare with" lists it. In JSON only what names it and says how it relates (its id,
    method, directory, title, agent, seed, whether it counts): what changes with the run's identity, so the static
    export writes a run's page again only when a peer's identity changes. ``state`` and ``score`` (fraction, None
    when not scored) are the live page's, not in JSON: each peer's own ``/api/runs/<id>`` has them, and the
    static page reads them from its cell's file (``cell_facts``)."""

    id: str
    method: str
    run_dir: str
    suite: str
    benchmark: str
    base_model: str
    cluster_id: int
    is_latest: bool
    agent_key: str
    agent_display: str
    seed: int | None
    title: str
    state: RunState = Field(exclude=True)
    score: float | None = Field(None, exclude=True)

    @classmethod
    def of(cls, run: Run) -> PeerRun:
        return cls(id=run.id, method=run.method, run_dir=run.run_dir, suite=run.suite, benchmark=run.benchmark,
                   base_model=run.base_model, cluster_id=run.cluster_id, is_latest=run.is_latest,
                   agent_key=run.agent_key, agent_display=run.agent_display, seed=run.seed, title=run.title,
                   state=run.state, score=run.score)

    @property
    def state_text(self) -> str:
        """The state in words (STATE_TEXT)."""
        return STATE_TEXT.get(self.state, self.state)


class Peer(Model):
    """A run a run page offers to compare with: the run and how it relates (``attempt``: the same agent method
    on the same cell, an older attempt or the one that counts; ``repeat``: another seed of the same agent;
    ``other``: another agent's run of the cell, the one that counts)."""

    run: PeerRun
    relation: Literal["attempt", "repeat", "other"]


class PeerKey(Protocol):
    """What choosing a run's peers reads of a run (:func:`pick_peers`): a ``Run`` has it."""

    @property
    def id(self) -> str: ...
    @property
    def method(self) -> str: ...
    @property
    def agent_key(self) -> str: ...
    @property
    def cluster_id(self) -> int: ...
    @property
    def is_latest(self) -> bool: ...


P = TypeVar("P", bound=PeerKey)
Relation = Literal["attempt", "repeat", "other"]


def pick_peers(run: PeerKey, cell: Iterable[P]) -> list[tuple[P, Relation]]:
    """The runs of ``run``'s cell it is compared with, from every agent run of the cell (``cell``, ``run`` itself
    included or not), in the order its page lists them: every other attempt of its method, the latest run of each
    of its agent's other methods (repeats), and the latest runs of up to PEERS_SHOWN other agents' methods: the
    ones following ``run``'s method in the cell's methods sorted by name, wrapping around after the last.

    The wrap spreads the listings: at the real benchmark's size (~90 methods a cell) each run is offered by at most
    PEERS_SHOWN other agents' pages, where "the first PEERS_SHOWN by name" put 13% of the runs on ~90 pages each
    (and a change to one of them re-rendered ~90 pages of the static export; bench/RESULTS.md, issue 24).
    :func:`read_cell_peers` for a run page; ``run_fingerprints`` for what a run's pages depend on."""
    rows = [r for r in cell if r.id != run.id and (r.method == run.method or r.is_latest)]
    own = sorted((r for r in rows if r.agent_key == run.agent_key),
                 key=lambda r: (r.method != run.method, r.method, -r.cluster_id))
    others = sorted((r for r in rows if r.agent_key != run.agent_key), key=lambda r: (r.method, -r.cluster_id))
    after = [r for r in others if r.method > run.method]
    chosen = (after + [r for r in others if r.method <= run.method])[:PEERS_SHOWN]
    peers: list[tuple[P, Relation]] = [(r, "attempt" if r.method == run.method else "repeat") for r in own]
    return peers + [(r, "other") for r in sorted(chosen, key=lambda r: (r.method, -r.cluster_id))]


class _CellRun(NamedTuple):
    """What :func:`pick_peers` reads of a run of the cell."""

    id: str
    method: str
    agent_key: str
    cluster_id: int
    is_latest: bool


Cell = tuple[str, str, str]  # (suite, benchmark, base model)


@warehouse.once.read_once
def read_cell_runs(con, suite: str, benchmark: str, base_model: str) -> list[_CellRun]:
    """Every agent run of one cell as :func:`pick_peers` reads it, by id: :func:`read_cell_runs_of` of the cell."""
    return read_cell_runs_of(con, [(suite, benchmark, base_model)])[(suite, benchmark, base_model)]


def read_cell_runs_of(con, cells: Iterable[Cell], facts: dict[Cell, CellFacts] | None = None
                      ) -> dict[Cell, list[_CellRun]]:
    """{(suite, benchmark, base model): its agent runs as :func:`pick_peers` reads them, by id} of ``cells`` (every
    cell a key), in one query: the static export reads the cells of READ_AHEAD runs at once (``read_ahead``), where
    one query per run page cost ~30 CPU ms of DuckLake catalog work (bench/RESULTS.md, issue 24). ``facts``: when
    given, each cell's :class:`CellFacts` put there, from the same query (its runs' states and scores besides: the
    rows :func:`read_cell_facts` reads)."""
    wanted = sorted(set(cells))
    out: dict[Cell, list[_CellRun]] = {cell: [] for cell in wanted}
    if not wanted:
        return out
    states: dict[Cell, dict[str, PeerFacts]] = {cell: {} for cell in wanted}
    for suite, benchmark, base_model, *row in con.execute(
            "SELECT r.suite, r.benchmark, r.base_model, r.id, r.method, m.agent_key, r.cluster_id, r.is_latest"
            f"{'' if facts is None else f', r.state, {SCORE_SQL}'} "
            "FROM runs r JOIN methods m ON m.id = r.method JOIN (SELECT unnest(?::VARCHAR[]) AS suite, "
            "unnest(?::VARCHAR[]) AS benchmark, unnest(?::VARCHAR[]) AS base_model) c ON c.suite = r.suite "
            f"AND c.benchmark = r.benchmark AND c.base_model = r.base_model WHERE {AGENT_RUN} ORDER BY r.id",
            [[c[0] for c in wanted], [c[1] for c in wanted], [c[2] for c in wanted]]).fetchall():
        out[(suite, benchmark, base_model)].append(_CellRun(*row[:5]))
        if facts is not None:
            states[(suite, benchmark, base_model)][row[0]] = _peer_facts(row[5], row[6])
    if facts is not None:
        facts.update({cell: CellFacts(suite=cell[0], benchmark=cell[1], base_model=cell[2], runs=states[cell])
                      for cell in wanted})
    return out


@warehouse.once.read_once
def read_cell_peers(con, run: Run) -> list[Peer]:
    """The runs of ``run``'s cell (suite, benchmark, base model) to compare it with (:func:`pick_peers`): the cell's
    runs read as the choice needs them (:func:`read_cell_runs`: a cell holds ~90 runs at the real benchmark's
    size), then the chosen ones whole (``read_runs_by_id``: the static export's one read of each run when it holds
    it); two queries at most."""
    chosen = pick_peers(run, read_cell_runs(con, run.suite, run.benchmark, run.base_model))
    found = {r.id: r for r in read_runs_by_id(con, [c.id for c, _ in chosen])}
    return [Peer(run=PeerRun.of(found[c.id]), relation=relation) for c, relation in chosen if c.id in found]


class PeerFacts(Model):
    """What a run page's "Compare with" shows of a peer beyond its identity, as the live page words it:
    ``state`` (``Run.state_text``) and ``score`` (percent with one decimal, as the ``percent`` filter writes it;
    None when not scored)."""

    state: str
    score: str | None


class CellFacts(Model):
    """The state and score of every agent run of one cell (suite, benchmark, base model), by run id: the static
    export's ``cells/<suite>/<benchmark>/<base model>.json``, from which a run page fills in its peers'
    (``static/js/static_peers.js``), so a run's new score or state changes one file of its cell, not the page of
    every run that offers it."""

    suite: str
    benchmark: str
    base_model: str
    runs: dict[str, PeerFacts]


def read_cell_facts(con, suite: str, benchmark: str, base_model: str) -> CellFacts:
    """:class:`CellFacts` of one cell, in one query (every agent run of the cell: any of them can be a peer)."""
    rows = con.execute(
        f"SELECT r.id, r.state, {SCORE_SQL} FROM runs r JOIN methods m ON m.id = r.method "
        f"WHERE r.suite = ? AND r.benchmark = ? AND r.base_model = ? AND {AGENT_RUN} ORDER BY r.id",
        [suite, benchmark, base_model]).fetchall()
    return CellFacts(suite=suite, benchmark=benchmark, base_model=base_model, runs={
        run_id: _peer_facts(state, score) for run_id, state, score in rows})


def _peer_facts(state: str, score: float | None) -> PeerFacts:
    """:class:`PeerFacts` of a run's state (its stored value) and score (fraction, or None)."""
    return PeerFacts(state=STATE_TEXT.get(state, state), score=None if score is None else percent(score))


@warehouse.retrying
def cell_facts(suite: str, benchmark: str, base_model: str) -> CellFacts:
    """:func:`read_cell_facts` in its own unit of work."""
    with warehouse.connect() as con:
        return read_cell_facts(con, suite, benchmark, base_model)


@warehouse.retrying
def cell_peers(run_id: str) -> list[Peer]:
    """:func:`read_cell_peers` of one run in its own unit of work ([] for an unknown run)."""
    with warehouse.connect() as con:
        run = read_run(con, run_id)
        return read_cell_peers(con, run) if run is not None else []
