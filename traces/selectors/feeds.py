"""Reads other apps' pages are built from: the leaderboard's latest cells and tree baselines, usage per run, and the
static export's run fingerprints. Scores are fractions."""
from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import NamedTuple

from ptbsite import warehouse

from ..layout import BASELINE_FALLBACK_DIR
from ..verdicts import Verdict
from ptbsite.suites import display_suite

from .compare import pick_peers
from .runs import AGENT_RUN, VerdictPattern, agent_display, verdict_outcome, verdicts_of

@dataclass
class CellRun:
    """The latest run of one (method, benchmark, base model) cell, as the leaderboard needs it.

    ``accuracy``: the newest evaluation's score (fraction, also when flagged), None when not scored; ``flags`` maps scored verdict kinds to ``flagged``/``judge_error``/None after
    overrides; ``overridden`` says a reviewer changed a verdict; ``verdicts`` every judge's verdict and
    ``overrides`` the reviewers' (kind -> flagged), so that the leaderboard can judge the cell under another rule
    (``traces.verdicts.flags_under``).
    """

    run_id: str
    method: str
    agent_key: str
    agent_name: str
    scaffold: str
    reasoning_effort: str | None
    benchmark: str
    base_model: str
    state: str
    accuracy: float | None
    time_taken_s: int | None
    synthetic: bool
    flags: dict[str, str | None]
    overridden: bool
    results_root: str = ""
    verdicts: list[Verdict] = field(default_factory=list)
    overrides: dict[str, bool] = field(default_factory=dict)


@warehouse.retrying
def latest_cells(suite: str) -> list[CellRun]:
    """Every method's latest run per (benchmark, base model) in a suite, with score and effective flags.

    "Latest" = the highest cluster id, compared as a number (``is_latest``, set at ingest), as qol_multigpu's
    ``walk_latest_runs`` does for both the score and the verdicts; main's ``aggregate_contamination.py`` compares
    the ids as strings and can take the verdict of another attempt than the score. Baseline evaluations
    (``baseline*`` dirs) are excluded. Ordered by method, benchmark, base model.
    """
    with warehouse.connect() as con:
        return read_latest_cells(con, suite)


def read_latest_cells(con, suite: str) -> list[CellRun]:
    """:func:`latest_cells` on an open connection: one query of ``latest_runs`` (migration 0021: each latest run
    with its score, verdicts and overrides gathered at write time, ``traces.services.refresh_latest_runs``) joined
    with ``methods``, whose cost does not grow with the verdicts, overrides and evaluations stored. Agent names
    are resolved once per method; verdicts, overrides and flags once per distinct pattern of them (a few dozen at
    K=90 for 2,520 runs; ``runs.verdict_outcome``). The cells' verdicts carry what the judging rules read (judge,
    attempt, era, kind, value, flag), not the judges' words (``text``, ``note`` and ``source_file`` empty: the
    run page reads those). Cells of one pattern share their ``flags``, ``verdicts`` and ``overrides`` (callers
    must not change them)."""
    rows = con.execute(
        "SELECT r.run_id, r.method, m.agent_key, m.agent_name, m.scaffold, m.reasoning_effort, m.results_root, "
        "r.benchmark, r.base_model, r.state, r.score, r.time_taken_s, r.synthetic, r.verdicts, r.overrides "
        f"FROM latest_runs r JOIN methods m ON m.id = r.method WHERE r.suite = ? AND {AGENT_RUN}",
        [suite]).fetchall()
    # Ordered by method, benchmark, base model: one latest run per cell, so a total order; by a C key here (DuckDB's
    # ORDER BY cost ~5 CPU ms at K=90's 2,520 runs; VARCHAR and str compare alike, by code point).
    rows.sort(key=itemgetter(1, 7, 8))
    shown = display_suite(suite)
    names: dict[tuple[str, str], str] = {}
    # Per pattern of verdicts and overrides (their JSON texts as stored): the effective flags, the verdicts as the
    # judging rules read them and the overrides, built once and shared by the pattern's cells.
    outcomes: dict[tuple[str | None, str | None], tuple[dict[str, str | None], list[Verdict], dict[str, bool]]] = {}
    cells = []
    for (run_id, method, key, agent, scaffold, effort, root, benchmark, model, state, score, taken, synthetic,
         verdicts, overrides) in rows:
        if (method, agent) not in names:
            names[(method, agent)] = (agent_display(shown, method, agent) if shown else agent) or agent or method
        outcome = outcomes.get((verdicts, overrides))
        if outcome is None:
            pattern = verdict_pattern(verdicts)
            chosen = override_choices(overrides)
            flags, _, _ = verdict_outcome(pattern, tuple(chosen.items()))
            outcome = outcomes[(verdicts, overrides)] = (dict(flags), verdicts_of(pattern), chosen)
        cells.append(CellRun(  # by position, CellRun's field order (keywords cost ~1 us a run more)
            run_id, method, key, names[(method, agent)], scaffold, effort, benchmark, model, state, score, taken,
            synthetic, outcome[0], bool(outcome[2]), root or "", outcome[1], outcome[2]))
    return cells


def verdict_pattern(stored: str | None) -> VerdictPattern:
    """The (judge, attempt, era, kind, value, flagged) of a run's verdicts, ordered by era, judge, attempt, kind,
    from ``latest_runs.verdicts`` (a JSON list of objects; None: no verdict)."""
    return tuple((v["judge"], v["attempt"], v["era"], v["kind"], v["value"], v["flagged"])
                 for v in json.loads(stored)) if stored else ()


def override_choices(stored: str | None) -> dict[str, bool]:
    """{kind: flagged} of a run's overrides, the latest of each kind winning, in the order the kinds were first
    overridden, from ``latest_runs.overrides`` (a JSON list of {kind, flagged}, oldest first; None: none)."""
    chosen: dict[str, bool] = {}
    for o in json.loads(stored) if stored else ():
        chosen[o["kind"]] = o["flagged"]
    return chosen


@dataclass(frozen=True)
class TreeBaseline:
    """The zero-shot baseline a results tree carries in its ``baseline_zeroshot/`` directory (spec 1.4).

    ``scores``: (base model id, benchmark) -> the latest run's score (fraction), None where that run has none;
    ``run_ids``: the same cells' run ids.
    """

    results_root: str
    scores: dict[tuple[str, str], float | None]
    run_ids: dict[tuple[str, str], str]


@warehouse.retrying
def tree_baselines(suite: str) -> dict[str, TreeBaseline]:
    """Per results root, the base models' zero-shot scores from its ``baseline_zeroshot/`` runs.

    The latest run (highest cluster id) of each (base model, benchmark) counts, with its newest evaluation's
    score; the official instruct models' runs are left out (they are no fallback). Only the directory named
    ``baseline_zeroshot`` counts: upstream's ``aggregate_final.py`` reads ``aggregated_baseline_zeroshot.csv``,
    which ``aggregate_methods.py`` makes from it; ``baseline/`` and other ``baseline*`` dirs supply nothing.
    """
    with warehouse.connect() as con:
        return read_tree_baselines(con, suite)


def read_tree_baselines(con, suite: str) -> dict[str, TreeBaseline]:
    """:func:`tree_baselines` on an open connection (the latest runs as ``latest_runs`` holds them)."""
    rows = con.execute(
        "SELECT m.results_root, r.base_model, r.benchmark, r.run_id, r.score FROM latest_runs r "
        "JOIN methods m ON m.id = r.method JOIN base_models b ON b.suite = r.suite AND b.id = r.base_model "
        "WHERE r.suite = ? AND r.method = ? ORDER BY r.run_id", [suite, BASELINE_FALLBACK_DIR]).fetchall()
    out: dict[str, TreeBaseline] = {}
    for root, model, benchmark, run_id, accuracy in rows:
        tree = out.setdefault(root, TreeBaseline(root, {}, {}))
        tree.scores[(model, benchmark)] = accuracy
        tree.run_ids[(model, benchmark)] = run_id
    return out


@dataclass(frozen=True)
class AgentRunsUsage:
    """The usage of one agent's latest runs (baselines excluded), aggregated in SQL: ``runs`` how many; ``tokens``
    (in + out) and ``costs`` (USD) of those whose trace has them, in run id order; ``gaps`` the runs without
    tokens or without a cost, counted by (trace format, state, whether tokens are missing)."""

    agent_key: str
    runs: int
    tokens: list[int]
    costs: list[float]
    gaps: dict[tuple[str | None, str, bool], int]


def read_usage_by_agent(con, suite: str) -> dict[str, AgentRunsUsage]:
    """Per agent key, :class:`AgentRunsUsage` of its latest runs in a suite (``latest_runs``): two grouped queries,
    one row per agent and per kind of gap, so the caller's work does not grow with the runs (K=90: 2,520 runs, 63 agents; a record per run
    was built before)."""
    where = f"FROM latest_runs r JOIN methods m ON m.id = r.method WHERE r.suite = ? AND {AGENT_RUN}"
    out = {key: AgentRunsUsage(key, runs, tokens or [], costs or [], {}) for key, runs, tokens, costs in con.execute(
        "SELECT m.agent_key, count(*), "
        "list(r.tokens_in + r.tokens_out ORDER BY r.run_id) FILTER (WHERE r.tokens_in + r.tokens_out IS NOT NULL), "
        f"list(r.cost_usd ORDER BY r.run_id) FILTER (WHERE r.cost_usd IS NOT NULL) {where} GROUP BY m.agent_key "
        "ORDER BY min(r.run_id)",  # each agent where its first run is (the order the per-run read gave)
        [suite]).fetchall()}
    for key, trace_format, state, no_tokens, count in con.execute(
            f"SELECT m.agent_key, r.trace_format, r.state, r.tokens_in + r.tokens_out IS NULL, count(*) {where} "
            "AND (r.tokens_in + r.tokens_out IS NULL OR r.cost_usd IS NULL) GROUP BY ALL", [suite]).fetchall():
        out[key].gaps[(trace_format, state, no_tokens)] = count
    return out


def run_fingerprints() -> dict[str, str]:
    """{run id: sha256 hex} for every non-baseline run, over what its pages show beyond the trace itself: its own
    part and the identity of each run its page offers to compare with (its peers,
    ``traces.selectors.compare.pick_peers``: links, names, relation, seed, which attempt counts;
    :func:`run_fingerprint_parts`). The peers' state and score are not on the static page (it reads them from its
    cell's file, ``compare.cell_facts``), so a peer's new score leaves the fingerprint as it was; nor are the other
    runs of its cell (at the real benchmark's size a cell holds ~90 runs, a run page ~15 peers). A run whose
    fingerprint did not change renders to the same bytes."""
    return run_fingerprint_parts().combined()


class FingerprintRow(NamedTuple):
    """What :func:`read_fingerprint_rows` reads of an agent run: what choosing its peers reads (method, its
    agent's key, cluster id, latest flag), its cell, ``own`` (md5 hex of what its own pages show), ``ident`` (md5
    hex of what a peer list shows of it) and ``content``, the content hash of its files."""

    method: str
    agent_key: str
    cluster_id: int
    is_latest: bool
    suite: str
    benchmark: str
    base_model: str
    own: str
    ident: str
    content: str


# The tables :func:`read_fingerprint_rows` reads, each with the column that names the run a changed row is of
# (None: ``methods``, whose rows are the runs' methods).
FINGERPRINT_TABLES: dict[str, str | None] = {"runs": "id", "evaluations": "run_id", "verdicts": "run_id",
                                             "verdict_overrides": "run_id", "methods": None}


def read_fingerprint_rows(con, run_ids: Collection[str] | None = None) -> dict[str, FingerprintRow]:
    """{run id: :class:`FingerprintRow`} of every non-baseline run (``run_ids``: of those of them only), sorted by
    id, in one query on ``con``. The own part covers the run's content hash (its files, hence its steps),
    directory, latest flag and state, its method's names, its evaluations, verdicts and overrides; the identity its
    directory, latest flag, method and the method's agent (its display name and seed follow from them and the
    suite files, which the export's code fingerprint covers)."""
    only = "" if run_ids is None else " AND r.id IN (SELECT unnest(CAST(? AS VARCHAR[])))"
    rows = con.execute(f"""
        SELECT r.id, r.method, m.agent_key, r.cluster_id, r.is_latest, r.suite, r.benchmark, r.base_model,
            md5(concat_ws('|', r.content_hash, r.run_dir, r.is_latest, r.state, r.state_detail, r.accuracy,
            m.agent_name, m.agent_key, m.scaffold,
            (SELECT string_agg(concat_ws(',', e.id, e.origin, e.accuracy, e.provenance_json, e.created_at), ';'
                    ORDER BY e.created_at, e.id) FROM evaluations e WHERE e.run_id = r.id),
            (SELECT string_agg(concat_ws(',', v.judge, v.attempt, v.era, v.kind, v.value, v.flagged, v.text,
                    v.note, v.source_file), ';' ORDER BY v.era, v.judge, v.attempt, v.kind)
               FROM verdicts v WHERE v.run_id = r.id),
            (SELECT string_agg(concat_ws(',', o.kind, o.flagged, o.created_at), ';' ORDER BY o.created_at, o.kind)
               FROM verdict_overrides o WHERE o.run_id = r.id))),
            md5(concat_ws('|', r.run_dir, r.is_latest, r.method, m.agent_name, m.agent_key)), r.content_hash
        FROM runs r JOIN methods m ON m.id = r.method WHERE {AGENT_RUN}{only} ORDER BY r.id
    """, [] if run_ids is None else [sorted(run_ids)]).fetchall()
    return {row[0]: FingerprintRow(*row[1:]) for row in rows}


@warehouse.retrying
def run_fingerprint_parts() -> RunFingerprintParts:
    """:class:`RunFingerprintParts` of every non-baseline run (:func:`read_fingerprint_rows`), nothing kept."""
    with warehouse.connect() as con:
        return RunFingerprintParts(read_fingerprint_rows(con))


@dataclass(frozen=True)
class RunFingerprintParts:
    """What the static export's increments read, for every non-baseline run: ``rows`` {run id: its
    :class:`FingerprintRow`}, sorted by id (:func:`read_fingerprint_rows`), and ``kept`` {run id: (its row, its
    fingerprint)} of an earlier read by the same code (:meth:`combined`), reused for the runs whose fingerprint
    cannot have changed since (peers and fingerprints are computed again only where a row changed, came or went).
    ``owns`` {run id: md5 hex of what its own pages show}, ``idents`` {run id: md5 hex of what a peer list shows of
    it}, ``cells`` {(suite, benchmark, base model): its runs' ids} and ``contents`` {run id: the content hash of
    its files} (:func:`run_content_hashes`, from the same read) follow from the rows; ``peers`` {run id: its
    peers' ids, in its page's order} (:meth:`peers_of`)."""

    rows: dict[str, FingerprintRow]
    kept: dict[str, tuple[FingerprintRow, str]] = field(default_factory=dict)

    @functools.cached_property
    def owns(self) -> dict[str, str]:
        return {run_id: row.own for run_id, row in self.rows.items()}

    @functools.cached_property
    def idents(self) -> dict[str, str]:
        return {run_id: row.ident for run_id, row in self.rows.items()}

    @functools.cached_property
    def contents(self) -> dict[str, str]:
        return {run_id: row.content for run_id, row in self.rows.items()}

    @functools.cached_property
    def cells(self) -> dict[tuple[str, str, str], list[str]]:
        cells: dict[tuple[str, str, str], list[str]] = {}
        for run_id, row in self.rows.items():
            cells.setdefault((row.suite, row.benchmark, row.base_model), []).append(run_id)
        return dict(sorted(cells.items()))

    @functools.cached_property
    def peers(self) -> dict[str, list[str]]:
        return self.peers_of(self.rows)

    def peers_of(self, run_ids: Iterable[str]) -> dict[str, list[str]]:
        """{run id: its peers' ids, in its page's order} of ``run_ids`` (``compare.pick_peers`` over its cell)."""
        mates: dict[tuple[str, str, str], dict[str, _Cellmate]] = {}
        out: dict[str, list[str]] = {}
        for run_id in sorted(set(run_ids) & self.rows.keys()):
            row = self.rows[run_id]
            cell = (row.suite, row.benchmark, row.base_model)
            if cell not in mates:
                mates[cell] = {r: _Cellmate(r, self.rows[r].method, self.rows[r].agent_key, self.rows[r].cluster_id,
                                            self.rows[r].is_latest) for r in self.cells[cell]}
            out[run_id] = [p.id for p, _ in pick_peers(mates[cell][run_id], mates[cell].values())]
        return out

    def combined(self) -> dict[str, str]:
        """{run id: sha256 hex} (:func:`run_fingerprints`): its own part and each peer's identity; ``kept``'s for
        the runs whose fingerprint cannot have changed: those of a cell whose runs and rows are all as kept, and in a
        cell whose runs changed only their own part (``own``, ``content``: a new trace, score or verdict), the
        others (no peer list changed, nor any peer's identity). Computed once (the same dict each call)."""
        return self._combined

    @functools.cached_property
    def _combined(self) -> dict[str, str]:
        fresh: set[str] = set()
        for cell, run_ids in self.cells.items():
            if self._kept_cells.get(cell) != run_ids:
                fresh.update(run_ids)  # a run came or went
                continue
            moved = [r for r in run_ids if self.kept[r][0] != self.rows[r]]
            if any(_listed(self.kept[r][0]) != _listed(self.rows[r]) for r in moved):
                fresh.update(run_ids)  # what choosing peers reads, or what a peer list shows, changed
            else:
                fresh.update(moved)
        peers = self.peers_of(fresh)
        return {run_id: hashlib.sha256(";".join([f"{run_id}:{row.own}", *sorted(
                    f"{p}:{self.rows[p].ident}" for p in peers[run_id])]).encode()).hexdigest()
                if run_id in peers else self.kept[run_id][1]
                for run_id, row in self.rows.items()}

    @functools.cached_property
    def _kept_cells(self) -> dict[tuple[str, str, str], list[str]]:
        cells: dict[tuple[str, str, str], list[str]] = {}
        for run_id, (row, _) in sorted(self.kept.items()):
            cells.setdefault((row.suite, row.benchmark, row.base_model), []).append(run_id)
        return cells

    def cell_fingerprints(self) -> dict[tuple[str, str, str], str]:
        """{cell: sha256 hex over its runs' own parts}: a cell's facts (``compare.cell_facts``: each run's state
        and score) can have changed only where this did."""
        return {cell: hashlib.sha256(";".join(f"{r}:{self.rows[r].own}" for r in run_ids).encode()).hexdigest()
                for cell, run_ids in self.cells.items()}


@dataclass(frozen=True, slots=True)
class _Cellmate:
    """An agent run as ``compare.pick_peers`` reads it (:meth:`RunFingerprintParts.peers_of`)."""

    id: str
    method: str
    agent_key: str
    cluster_id: int
    is_latest: bool


def _listed(row: FingerprintRow) -> tuple:
    """What of a run its cell's other runs' fingerprints depend on: what choosing peers reads and its identity."""
    return row.method, row.agent_key, row.cluster_id, row.is_latest, row.ident


@warehouse.retrying
def run_content_hashes() -> dict[str, str]:
    """{run id: the content hash of its files} for every non-baseline run: what its steps were read from, so the
    static export's search index (every step's text) is rebuilt only when one of these changes."""
    with warehouse.connect() as con:
        return dict(con.execute(
            f"SELECT r.id, r.content_hash FROM runs r JOIN methods m ON m.id = r.method WHERE {AGENT_RUN} "
            "ORDER BY r.id").fetchall())


