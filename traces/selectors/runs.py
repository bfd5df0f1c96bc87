"""Reads of runs: the runs list, one run, its long texts, evaluations, facets, references and directory.

Each public read opens one unit of work (``warehouse.connect`` under ``@warehouse.retrying``); its ``read_*``
form takes an open connection, so that a page's selector (``traces.selectors.pages``) reads everything it shows
in one.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, get_args

from ptbsite import warehouse
from ptbsite.suites import Suite, display_suite

from ..layout import BASELINE_PREFIX, LayoutError, is_baseline_dir, parse_method_name
from ..schemas import STATE_TEXT, Evaluation, Facet, Run, RunTexts
from ..verdicts import SCORED_KINDS, Verdict, VerdictRule, effective_flags, era_rule, flag_labels
from ..vocabulary import MEASURED_FACETS, METHOD_FACETS

FACET_ORDER = METHOD_FACETS + MEASURED_FACETS
# SQL condition on runs ``r``: an agent's run, not a baseline evaluation (any ``baseline*`` directory, spec 1.4).
AGENT_RUN = f"NOT starts_with(r.method, '{BASELINE_PREFIX}')"
RUN_COLUMNS = ("id, method, run_dir, suite, benchmark, base_model, base_model_hf, cluster_id, is_latest, state, "
               "state_detail, time_taken_s, budget_hours, accuracy, has_final_model, eval_attempts, trace_file, "
               "trace_format, trace_bytes, step_count, started_at, ended_at, tokens_in, tokens_out, cost_usd, "
               "trace_model, synthetic, ingested_at, dir_time, dir_time_source")
# Reruns that are shown but never the run's score: ``rerun-exploratory`` (a rerun on anything but the benchmark's
# own dataset with all of its samples: a ``--limit``, a local or JSONL dataset; traces.services.add_evaluation) and
# ``rerun-partial`` (what rows stored before that rule call a rerun with a ``--limit``).
EXPLORATORY_ORIGINS = ("rerun-exploratory", "rerun-partial")
# The run's score: its newest evaluation that is not an exploratory rerun (fraction).
def score_of(alias: str) -> str:
    """SQL of the score (fraction) of the run whose id is ``<alias>.id``: see SCORE_SQL."""
    return (f"(SELECT e.accuracy FROM evaluations e WHERE e.run_id = {alias}.id AND e.origin NOT IN ("
            + ", ".join(f"'{o}'" for o in EXPLORATORY_ORIGINS) + ") ORDER BY e.created_at DESC LIMIT 1)")


SCORE_SQL = score_of("r")
TEXT_SHOWN = 100_000  # characters of a run's prompt (and of its metrics.json) a run page and its API twin show
PROBLEMS_SHOWN = 500  # ingest problems listed on a run page and in its API twin (the count says how many)
VERDICT_COLUMNS = "judge, attempt, era, kind, value, flagged, text, note, source_file"
NEST_LIMIT = 100  # runs of a page whose verdicts are nested into the page's query (read_runs)
# The reviewers' overrides, which every run read names (nested_verdicts, read_override_rows): a read unit of runs
# passes it as ``warehouse.snapshot``'s ``unwritten`` (an empty copy while it never held a row).
OVERRIDES_TABLE = ("verdict_overrides",)
# A run's verdicts (ordered by era, judge, attempt, kind) and overrides (oldest first) as lists of structs in the run's
# own row: one query reads runs with both, joined by the planner, instead of two more with ``IN (?, ?, ...)`` lists
# of every run id (whose planning cost grew with the number of runs; issue 24).


def nested_verdicts(alias: str) -> str:
    """SQL columns ``verdict_rows, override_rows`` of the run whose id is ``<alias>.id`` (see above)."""
    return ("(SELECT list(struct_pack(" + ", ".join(f"{c.strip()} := v.{c.strip()}" for c in VERDICT_COLUMNS.split(","))
            + f") ORDER BY v.era, v.judge, v.attempt, v.kind) FROM verdicts v WHERE v.run_id = {alias}.id) AS "
            "verdict_rows, (SELECT list(struct_pack(kind := o.kind, flagged := o.flagged) ORDER BY o.created_at) "
            f"FROM verdict_overrides o WHERE o.run_id = {alias}.id) AS override_rows")


def fetch_dicts(con, sql: str, params: list | tuple = ()) -> list[dict[str, Any]]:
    """The rows of a query as dicts keyed by the query's column names (so models are built by name)."""
    cursor = con.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def read_runs(con, where: str, params: list, limit: int | None = None, *, sort: RunSort | None = None,
              after: str | None = None) -> list[Run]:
    """Runs (with agent names, score, verdicts, overrides and effective flags) matching a SQL condition on
    ``runs r`` / ``methods m``, ordered by id, or by ``sort`` (:class:`RunSort`) from the run after ``after``
    (a run id; with ``sort`` only: without it the caller's ``where`` holds the id cursor)."""
    columns = ", ".join("r." + c.strip() for c in RUN_COLUMNS.split(","))
    columns += ", m.agent_name AS agent, m.agent_key, m.scaffold"
    source = f"FROM runs r JOIN methods m ON m.id = r.method WHERE {where}"
    cut = f" LIMIT {int(limit)}" if limit else ""
    # The page first (ordered, cut), then its runs' verdicts and overrides: for a page of up to NEST_LIMIT runs (a
    # run read, a page of the runs list) nested into the rows, one query; for more (the latest runs of a suite)
    # in two more queries with the page's ids as one list parameter, which DuckDB turns into Python faster than
    # nested structs (2,520 runs: 145 against 243 CPU ms; bench/RESULTS.md). Never ``IN (?, ?, ...)``.
    nest = limit is not None and limit <= NEST_LIMIT
    if sort is None:
        page, order, page_params = f"SELECT {columns} {source} ORDER BY r.id{cut}", "p.id", params
    else:
        sql, sort_params = sort.query(columns, source, after)
        page, page_params = sql + cut, [*sort.params, *params, *sort_params]
        order = f"p.sort_key IS NULL, p.sort_key {'DESC' if sort.descending else 'ASC'}, p.id"
    # The score of the page's runs only, after the cut (in the page's own query DuckDB joined every run's).
    if nest:
        rows = fetch_dicts(con, f"SELECT p.*, {score_of('p')} AS score, {nested_verdicts('p')} FROM ({page}) p "
                                f"ORDER BY {order}", page_params)
    else:
        rows = fetch_dicts(con, f"SELECT p.*, {score_of('p')} AS score FROM ({page}) p ORDER BY {order}", page_params)
        by_run = read_verdicts(con, [r["id"] for r in rows], as_dicts=True)
        overrides = read_override_rows(con, [r["id"] for r in rows])
        for row in rows:
            row["verdict_rows"], row["override_rows"] = by_run[row["id"]], overrides.get(row["id"])
    if sort is not None:
        for row in rows:
            del row["sort_key"]
    runs = []
    suites: dict[str, Suite | None] = {}  # display names resolved once per suite, not once per run
    for row in rows:
        verdicts, overrides = row.pop("verdict_rows"), row.pop("override_rows")
        if row["suite"] not in suites:
            suites[row["suite"]] = display_suite(row["suite"])
        # Every field in one validation (setting ten fields on a built model validates each: 2,520 runs, ~25 ms)
        runs.append(Run(**row, **_verdict_fields(row["method"], verdicts or [],
                                                 {o["kind"]: o["flagged"] for o in overrides or ()}),  # latest wins
                        **_name_fields(row, suites[row["suite"]])))
    return runs


RunSortKey = Literal["date", "agent", "scaffold", "benchmark", "base_model", "state", "score", "time", "steps"]
RUN_SORTS: tuple[str, ...] = get_args(RunSortKey)
SortDirection = Literal["asc", "desc"]


@dataclass(frozen=True)
class RunSort:
    """The runs list ordered by one column (``RUN_SORTS``), as the column shows it: ``key`` the SQL value (on
    ``runs r`` / ``methods m``; names case-insensitively, in the suite file's display names), ``params`` its
    parameters; empty values last in either direction, ties by run id. Paging is by keyset on (value, id): the
    page after a run id starts after that run's place in this order."""

    key: str
    params: tuple
    descending: bool

    def query(self, columns: str, source: str, after: str | None) -> tuple[str, list]:
        """The SQL of ``SELECT columns source`` with the sort key (its ``params`` first, then ``source``'s),
        ordered, from after the run ``after``, and the parameters that follow ``source``'s. The cursor is a run
        id whose value is read in the same query: a run whose value changed between two pages moves, and an id no
        longer listed ends the list."""
        direction, op = ("DESC", "<") if self.descending else ("ASC", ">")
        sql = f"WITH listed AS (SELECT ({self.key}) AS sort_key, {columns} {source}) SELECT listed.* FROM listed"
        params: list = []
        if after is not None:
            sql += (", (SELECT sort_key AS k, id FROM listed WHERE id = ?) cur WHERE "
                    "(cur.k IS NULL AND listed.sort_key IS NULL AND listed.id > cur.id) OR (cur.k IS NOT NULL AND "
                    f"(listed.sort_key IS NULL OR listed.sort_key {op} cur.k OR "
                    "(listed.sort_key = cur.k AND listed.id > cur.id)))")
            params.append(after)
        return sql + f" ORDER BY listed.sort_key IS NULL, listed.sort_key {direction}, listed.id", params


def _case(column: str, names: list[tuple[tuple, str]], default: str, match: tuple[str, ...]) -> tuple[str, tuple]:
    """``lower(CASE WHEN <match columns> = <key> THEN <name> ... ELSE <default> END)`` and its parameters."""
    if not names:
        return f"lower({default})", ()
    when = " AND ".join(f"{m} = ?" for m in match)
    return (f"lower(CASE {' '.join(f'WHEN {when} THEN ?' for _ in names)} ELSE {default} END)",
            tuple(v for key, name in names for v in (*key, name)))


def read_run_sort(con, sort: str, direction: SortDirection = "asc") -> RunSort:
    """The :class:`RunSort` of a column of the runs list: ``date`` (the run's own date: the trace's first
    timestamp, else the directory's time), ``agent``, ``scaffold``, ``benchmark``, ``base_model`` (display
    names), ``state`` (in words), ``score`` (the run's score), ``time`` (time_taken.txt), ``steps``.

    Raises:
        ValueError: ``sort`` is not one of RUN_SORTS, or ``direction`` neither asc nor desc.
    """
    if sort not in RUN_SORTS or direction not in ("asc", "desc"):
        raise ValueError(f"cannot sort runs by {sort!r} {direction!r}: one of {', '.join(RUN_SORTS)}, asc or desc")
    simple = {"date": "coalesce(r.started_at, r.dir_time)", "score": SCORE_SQL, "time": "r.time_taken_s",
              "steps": "r.step_count", "scaffold": "lower(m.scaffold)"}
    if sort in simple:
        key, params = simple[sort], ()
    elif sort == "state":
        key, params = _case("r.state", [((k,), t) for k, t in STATE_TEXT.items()], "r.state", ("r.state",))
    elif sort == "agent":
        rows = con.execute("SELECT DISTINCT r.suite, r.method, m.agent_name FROM runs r JOIN methods m "
                           f"ON m.id = r.method WHERE {AGENT_RUN}").fetchall()
        names = []
        for suite_id, method, stored in rows:
            suite = display_suite(suite_id)
            names.append(((suite_id, method), agent_display(suite, method, stored) if suite else stored or method))
        key, params = _case("r.method", names, "m.agent_name", ("r.suite", "r.method"))
    else:
        column = f"r.{sort}"
        names = []
        for suite_id, value in con.execute(f"SELECT DISTINCT suite, {sort} FROM runs").fetchall():
            suite = display_suite(suite_id)
            shown = (suite.benchmark_name(value) if sort == "benchmark" else suite.base_model_name(value)) if suite \
                else value
            names.append(((suite_id, value), shown))
        key, params = _case(column, names, column, ("r.suite", column))
    return RunSort(key=key, params=params, descending=direction == "desc")


def read_verdicts(con, ids: list[str], *, as_dicts: bool = False) -> dict[str, list[Any]]:
    """{run id: its verdicts} for the given runs (every id a key), ordered by era, judge, attempt, kind; as
    :class:`Verdict`, or with ``as_dicts`` as dicts of VERDICT_COLUMNS. The ids go in as one list parameter."""
    by_run: dict[str, list[Any]] = {i: [] for i in ids}
    if not ids:
        return by_run
    for row in fetch_dicts(con, f"SELECT run_id, {VERDICT_COLUMNS} FROM verdicts WHERE run_id = ANY(?::VARCHAR[]) "
                                "ORDER BY run_id, era, judge, attempt, kind", [ids]):
        by_run[row.pop("run_id")].append(row if as_dicts else Verdict(**row))
    return by_run


def read_override_rows(con, ids: list[str]) -> dict[str, list[dict]]:
    """{run id: its overrides as ``{"kind", "flagged"}``, oldest first} for the given runs that have any."""
    out: dict[str, list[dict]] = {}
    if ids:
        for run_id, kind, flagged in con.execute(
                "SELECT run_id, kind, flagged FROM verdict_overrides WHERE run_id = ANY(?::VARCHAR[]) "
                "ORDER BY created_at", [ids]).fetchall():
            out.setdefault(run_id, []).append({"kind": kind, "flagged": flagged})
    return out


def _verdict_fields(method: str, verdicts: list[dict[str, Any]], overrides: dict[str, bool]) -> dict[str, Any]:
    """A run's verdict fields of :class:`Run` (its verdicts as dicts of VERDICT_COLUMNS, which the model
    validates; overrides; effective flags, their labels and the era's rule, none for a baseline). The rules read
    only each verdict's judge, attempt, era, kind, value and flag, and most runs share a few such patterns, so the
    outcome is computed once per pattern (:func:`_verdict_outcome`)."""
    if is_baseline_dir(method):
        return {"verdicts": verdicts, "overrides": overrides, "flags": {}, "verdict_labels": {}, "verdict_rule": None}
    flags, labels, rule = verdict_outcome(
        tuple((v["judge"], v["attempt"], v["era"], v["kind"], v["value"], v["flagged"]) for v in verdicts),
        tuple(overrides.items()))
    return {"verdicts": verdicts, "overrides": overrides, "flags": flags, "verdict_rule": rule,
            "verdict_labels": labels}


VerdictPattern = tuple[tuple[str, str, str, str, str, bool | None], ...]


@lru_cache(maxsize=1024)
def verdicts_of(pattern: VerdictPattern) -> list[Verdict]:
    """The verdicts with these (judge, attempt, era, kind, value, flagged), without the judges' words (text "",
    no note or source file): what the judging rules read (``traces.verdicts``). Shared: callers must not change
    the list."""
    return [Verdict(judge, attempt, era, kind, value, flagged, "", None, None)
            for judge, attempt, era, kind, value, flagged in pattern]


@lru_cache(maxsize=1024)
def verdict_outcome(pattern: VerdictPattern, overrides: tuple[tuple[str, bool], ...]
                    ) -> tuple[dict[str, str | None], dict[str, str], VerdictRule]:
    """(effective flags, their labels, the era's rule) of a run whose verdicts have these (judge, attempt, era,
    kind, value, flagged) and whose reviewers overrode these (kind, flagged): the same for every run of that
    pattern, computed once per pattern. Shared: callers copy the dicts (a model validating them does)."""
    verdicts = verdicts_of(pattern)
    chosen = dict(overrides)
    rule = era_rule(verdicts)
    flags = effective_flags(verdicts, chosen, rule=rule)
    return flags, flag_labels(verdicts, chosen, flags=flags, rule=rule), rule


@lru_cache(maxsize=4096)
def _sweep_of(method: str) -> tuple[str, str, float] | None:
    try:
        name = parse_method_name(method)
    except LayoutError:
        return None
    return name.harness_agent, name.config, name.budget_hours


def agent_display(suite: Suite, method: str, stored_name: str) -> str:
    """The agent's display name for a method directory: the suite's name of the agent that lists it; for a sweep
    no list names but run with the same harness agent, model config and budget as a listed agent's methods, that
    agent's name with "(unlisted sweep)" (it is not one of that agent's seeds and is not grouped with them);
    else what ingest stored (``<config> (<harness agent>)``)."""
    listed = suite.agent_name(method)
    if listed:
        return listed
    sweep = _sweep_of(method)
    if sweep is not None:
        name = _sweep_names(suite).get(sweep)
        if name is not None:
            return f"{name} (unlisted sweep)"
    return stored_name or method


_SWEEPS: dict[int, tuple[Suite, dict[tuple[str, str, float], str]]] = {}


def _sweep_names(suite: Suite) -> dict[tuple[str, str, float], str]:
    """{(harness agent, config, budget hours): the name of the first known agent with a method of that sweep},
    built once per Suite object (``display_suite`` keeps one per version of the file), not once per run."""
    found = _SWEEPS.get(id(suite))
    if found is not None and found[0] is suite:
        return found[1]
    names: dict[tuple[str, str, float], str] = {}
    for agent in suite.known_agents():
        for m in agent.methods:
            sweep = _sweep_of(m)
            if sweep is not None:
                names.setdefault(sweep, agent.name)
    if len(_SWEEPS) > 16:
        _SWEEPS.clear()
    _SWEEPS[id(suite)] = (suite, names)
    return names


def _name_fields(row: dict[str, Any], suite: Suite | None) -> dict[str, Any]:
    """The display-name fields of :class:`Run` for a run row (its ``suite``, ``method``, ``agent``, ``benchmark``,
    ``base_model``) from its suite file (``display_suite(row["suite"])``, read once for many runs): agent, benchmark,
    base model and suite names and the seed; ids stand in where the suite is unknown."""
    if suite is None:
        return {"agent_display": row.get("agent") or row["method"], "benchmark_name": row["benchmark"],
                "base_model_name": row["base_model"], "suite_name": row["suite"]}
    return {"agent_display": agent_display(suite, row["method"], row.get("agent") or ""),
            "benchmark_name": suite.benchmark_name(row["benchmark"]),
            "base_model_name": suite.base_model_name(row["base_model"]), "suite_name": suite.name,
            "seed": suite.agent_seed(row["method"])}


def facet_clause(spec: str) -> tuple[str, list[str]]:
    """SQL condition on ``r.id`` for a facet spec: ``<facet>`` (the run has that facet, e.g. ``grpo``) or
    ``<facet>:<value>`` (that facet with that value, e.g. ``library:trl``, ``dataset:openai/gsm8k``)."""
    name, _, value = spec.partition(":")
    if value:
        return "r.id IN (SELECT run_id FROM facets WHERE facet = ? AND value = ?)", [name, value]
    return "r.id IN (SELECT run_id FROM facets WHERE facet = ?)", [name]


def run_filter(
    *, agent: str | None = None, benchmark: str | None = None, base_model: str | None = None,
    state: str | None = None, suite: str | None = None, latest_only: bool = False, facet: str | None = None,
) -> tuple[list[str], list]:
    """The runs list's SQL filters on ``runs r`` / ``methods m`` (agents' runs only, no baselines): the
    conditions to AND and their parameters. ``flagged`` is not among them (it depends on verdicts and overrides:
    callers test ``Run.flagged`` on the runs read)."""
    where, params = [AGENT_RUN], []
    for column, value in (("r.benchmark", benchmark), ("r.base_model", base_model), ("r.state", state),
                          ("r.suite", suite)):
        if value:
            where.append(f"{column} = ?")
            params.append(value)
    if agent:
        where.append("(m.agent_key = ? OR m.id = ?)")
        params += [agent, agent]
    if latest_only:
        where.append("r.is_latest")
    if facet:
        clause, values = facet_clause(facet)
        where.append(clause)
        params += values
    return where, params


def read_run_list(
    con, *, agent: str | None = None, benchmark: str | None = None, base_model: str | None = None,
    flagged: bool | None = None, state: str | None = None, latest_only: bool = False,
    after: str | None = None, limit: int | None = 50, facet: str | None = None, suite: str | None = None,
    sort: str | None = None, direction: SortDirection = "asc",
) -> tuple[list[Run], str | None]:
    """:func:`list_runs` on an open connection."""
    where, params = run_filter(agent=agent, benchmark=benchmark, base_model=base_model, state=state, suite=suite,
                               latest_only=latest_only, facet=facet)
    order = read_run_sort(con, sort, direction) if sort else None
    if after and order is None:
        where.append("r.id > ?")
        params.append(after)
    condition = " AND ".join(where)
    cursor = (after or None) if order is not None else None
    if limit is None:
        runs = [r for r in read_runs(con, condition, params, sort=order, after=cursor)
                if flagged is None or r.flagged == flagged]
        more = False
    elif flagged is None:
        runs = read_runs(con, condition, params, limit + 1, sort=order, after=cursor)
        more = len(runs) > limit
        runs = runs[:limit]
    else:
        # The flag depends on verdicts and overrides: filter after attaching them, page by page.
        runs, more = [], False
        for candidate in read_runs(con, condition, params, sort=order, after=cursor):
            if candidate.flagged == flagged:
                if len(runs) == limit:
                    more = True
                    break
                runs.append(candidate)
    return runs, (runs[-1].id if more and runs else None)


@warehouse.retrying
def list_runs(
    *, agent: str | None = None, benchmark: str | None = None, base_model: str | None = None,
    flagged: bool | None = None, state: str | None = None, latest_only: bool = False,
    after: str | None = None, limit: int | None = 50, facet: str | None = None, suite: str | None = None,
    sort: str | None = None, direction: SortDirection = "asc",
) -> tuple[list[Run], str | None]:
    """Runs matching the filters, ordered by id (or by ``sort``), one page at a time.

    Args:
        agent: a leaderboard agent key (``methods.agent_key``) or a method name.
        flagged: True for runs a judge flagged (after overrides), False for the others.
        after: the last run id of the previous page (keyset cursor).
        facet: a facet spec (``grpo``, ``library:trl``; :func:`facet_clause`): only runs with that facet.
        suite: only runs of that suite.
        limit: runs per page; None for every matching run in one page (the static export's runs list).
        sort: a column of RUN_SORTS (:func:`read_run_sort`), ``direction`` asc or desc; None: by id. The cursor
            stays a run id: the next page starts after that run's place in the order (keyset on value, id).

    Returns:
        (runs, next cursor or None).

    Raises:
        ValueError: an unknown ``sort`` or ``direction``.
    """
    with warehouse.connect() as con:
        return read_run_list(con, agent=agent, benchmark=benchmark, base_model=base_model, flagged=flagged,
                             state=state, latest_only=latest_only, after=after, limit=limit, facet=facet, suite=suite,
                             sort=sort, direction=direction)


# Runs read already, that read_run answers from memory (see runs_read_once); None: every read_run queries.
_READ_ONCE: ContextVar[dict[str, Run] | None] = ContextVar("runs_read_once", default=None)


@contextmanager
def runs_read_once(runs: Iterable[Run]) -> Iterator[None]:
    """Within the block (in this thread's context), :func:`read_run` of one of ``runs`` answers a copy of it
    instead of querying the warehouse: the static export reads every run once (the runs list's one query) and
    renders all of a run's pages, whose selectors each read the run, from that read."""
    token = _READ_ONCE.set({run.id: run for run in runs})
    try:
        yield
    finally:
        _READ_ONCE.reset(token)


def read_run(con, run_id: str) -> Run | None:
    known = _READ_ONCE.get()
    if known is not None and run_id in known:
        return known[run_id].model_copy(deep=True)
    found = read_runs(con, "r.id = ?", [run_id], 1)  # one query (verdicts nested)
    return found[0] if found else None


def read_runs_by_id(con, run_ids: list[str]) -> list[Run]:
    """The runs of ``run_ids`` that exist, in no particular order: those :func:`runs_read_once` holds as copies, the
    others in one query."""
    known = _READ_ONCE.get() or {}
    found = [known[i].model_copy(deep=True) for i in run_ids if i in known]
    rest = [i for i in run_ids if i not in known]
    return found + (read_runs(con, "r.id IN (SELECT unnest(?::VARCHAR[]))", [rest]) if rest else [])


@warehouse.retrying
def get_runs(run_ids: list[str]) -> dict[str, Run]:
    """{run id: Run} of those of ``run_ids`` that exist, in ``run_ids``' order, each as :func:`get_run` reads it, in
    one unit of work of three queries (the runs, their verdicts, their overrides: ``read_runs``), with
    ``verdict_overrides`` read as an empty copy when it never held a row (``warehouse.rows_in_memory``)."""
    if not run_ids:
        return {}
    with warehouse.snapshot(unwritten=OVERRIDES_TABLE) as con:
        found = {run.id: run for run in read_runs(con, "r.id IN (SELECT unnest(?::VARCHAR[]))", [list(run_ids)])}
    return {run_id: found[run_id] for run_id in run_ids if run_id in found}


@warehouse.retrying
def get_run(run_id: str) -> Run | None:
    """One run with its verdicts, overrides and effective flags, or None."""
    with warehouse.connect() as con:
        return read_run(con, run_id)


@warehouse.retrying
def run_titles(run_ids: Iterable[str]) -> dict[str, str]:
    """Run id -> its :attr:`Run.title` ("<agent> on <benchmark> with <base model>", display names), for the ids
    that name a run, in one unit of work (a job list names its jobs' runs so)."""
    with warehouse.connect() as con:
        return {rid: run.title for rid in dict.fromkeys(run_ids) if (run := read_run(con, rid)) is not None}


@warehouse.once.read_once
def read_run_texts(con, run_id: str) -> RunTexts | None:
    return read_run_texts_of(con, [run_id]).get(run_id)


def read_run_texts_of(con, run_ids: list[str]) -> dict[str, RunTexts]:
    """{run id: :func:`run_texts`} of the runs of ``run_ids`` that exist, in one query."""
    out = {}
    for row in con.execute(
        "SELECT id, left(prompt, ?), length(prompt), CASE WHEN length(metrics_json) <= ? THEN metrics_json END, "
        "problems, redaction_warnings, secrets_redacted, chars_replaced, trace_incomplete, unknown_events "
        "FROM runs WHERE id = ANY(?::VARCHAR[])", [TEXT_SHOWN, TEXT_SHOWN, run_ids]
    ).fetchall():
        run_id, row = row[0], row[1:]
        problems = json.loads(row[3])
        out[run_id] = RunTexts(prompt=row[0], prompt_not_shown=(row[1] or 0) - len(row[0] or ""),
                               metrics=json.loads(row[2]) if row[2] else None, problems=problems[:PROBLEMS_SHOWN],
                               problem_count=len(problems), redaction_warnings=json.loads(row[4])[:PROBLEMS_SHOWN],
                               secrets_redacted=row[5], chars_replaced=row[6], trace_incomplete=row[7],
                               unknown_events=json.loads(row[8]) if row[8] else {})
    return out


@warehouse.retrying
def run_texts(run_id: str) -> RunTexts | None:
    """The run's long texts and what ingest did to its files (:class:`traces.schemas.RunTexts`): ``prompt`` cut
    to TEXT_SHOWN characters, ``metrics`` None when longer, at most PROBLEMS_SHOWN problems and redaction
    warnings; None for an unknown run."""
    with warehouse.connect() as con:
        return read_run_texts(con, run_id)


@warehouse.retrying
def filter_options() -> dict[str, list[tuple[str, str]]]:
    """The values the runs list can be filtered by, as (value, label) pairs: ``agents`` (key, the display name
    its runs show, :func:`agent_display`: an unlisted sweep is "<listed agent> (unlisted sweep)", not its stored
    ``<config> (<harness agent>)``), ``benchmarks`` and ``base_models`` of the ingested (non-baseline) runs (id,
    the default suite's display name), each sorted by label, case aside."""
    with warehouse.connect() as con:
        return read_filter_options(con)


def read_filter_options(con) -> dict[str, list[tuple[str, str]]]:
    # One scan of the runs for the three lists (each query on a DuckLake table has a fixed cost of its own).
    methods, bench_ids, model_ids = con.execute(
        "SELECT list(DISTINCT struct_pack(k := m.agent_key, n := m.agent_name, s := r.suite, m := r.method)), "
        f"list(DISTINCT r.benchmark), list(DISTINCT r.base_model) FROM runs r JOIN methods m ON m.id = r.method "
        f"WHERE {AGENT_RUN}").fetchone()
    # A key's label is the name its runs show (the runs list's and search results' rows, the leaderboard's): the
    # first of its methods by name names it (every method of a key shows one name).
    named: dict[Any, Any] = {}  # agent key: its label (either NULL in a hand-made warehouse)
    for t in sorted(methods or (), key=lambda t: (t["k"] is None, t["k"] or "", t["m"] or "")):
        if t["k"] in named:
            continue
        suite_of = display_suite(t["s"]) if t["s"] else None
        named[t["k"]] = agent_display(suite_of, t["m"], t["n"] or "") if suite_of and t["m"] else t["n"]
    agents = sorted(named.items(),  # by name (case aside) then key, names NULL last (SQL's order)
                    key=lambda a: (a[1] is None, (a[1] or "").lower(), a[0] is None, a[0] or ""))
    benchmarks = [(b,) for b in sorted(b for b in bench_ids or () if b is not None)]
    models = [(m,) for m in sorted(m for m in model_ids or () if m is not None)]
    suite = display_suite()
    bench_name = suite.benchmark_name if suite else str
    model_name = suite.base_model_name if suite else str
    return {"agents": [(k, n) for k, n in agents],
            "benchmarks": sorted(((b, bench_name(b)) for (b,) in benchmarks), key=lambda o: o[1].lower()),
            "base_models": sorted(((m, model_name(m)) for (m,) in models), key=lambda o: o[1].lower())}


@warehouse.once.read_once
def read_evaluations(con, run_id: str) -> list[Evaluation]:
    return read_evaluations_of(con, [run_id])[run_id]


def read_evaluations_of(con, run_ids: list[str]) -> dict[str, list[Evaluation]]:
    """{run id: :func:`evaluations`} of ``run_ids`` (every id a key), in one query."""
    by_run: dict[str, list[dict[str, Any]]] = {run_id: [] for run_id in run_ids}
    for r in fetch_dicts(con, "SELECT run_id, id, origin, accuracy AS score, metrics_json, provenance_json, created_at "
                              "FROM evaluations WHERE run_id = ANY(?::VARCHAR[]) ORDER BY run_id, created_at DESC",
                         [run_ids]):
        by_run[r["run_id"]].append(r)
    out = {}
    for run_id, rows in by_run.items():
        counting = next((r["id"] for r in rows if r["origin"] not in EXPLORATORY_ORIGINS), None)
        out[run_id] = [Evaluation(id=r["id"], origin=r["origin"], score=r["score"],
                                  metrics=json.loads(r["metrics_json"]), provenance=json.loads(r["provenance_json"]),
                                  created_at=r["created_at"], counts=r["id"] == counting) for r in rows]
    return out


@warehouse.retrying
def evaluations(run_id: str) -> list[Evaluation]:
    """Every evaluation of the run, newest first (score a fraction); ``counts`` marks the one that is the run's
    score (the newest that is not an exploratory rerun, EXPLORATORY_ORIGINS)."""
    with warehouse.connect() as con:
        return read_evaluations(con, run_id)


@warehouse.once.read_once
def read_reference_scores(con, suite: str, base_model: str, benchmark: str) -> dict[str, float | None]:
    rows = dict(con.execute(
        "SELECT agent, value FROM reported_cells WHERE suite = ? AND base_model = ? AND benchmark = ? "
        "AND agent IN ('base-zeroshot', 'instruct')", [suite, base_model, benchmark]).fetchall())
    return {"base": rows.get("base-zeroshot"), "instruct": rows.get("instruct")}


def read_all_reference_scores(con) -> dict[tuple[str, str, str], dict[str, float | None]]:
    """:func:`reference_scores` of every cell that has one, by (suite, base model, benchmark), in one query."""
    out: dict[tuple[str, str, str], dict[str, float | None]] = {}
    for suite, base_model, benchmark, agent, value in con.execute(
            "SELECT suite, base_model, benchmark, agent, value FROM reported_cells "
            "WHERE agent IN ('base-zeroshot', 'instruct')").fetchall():
        cell = out.setdefault((suite, base_model, benchmark), {"base": None, "instruct": None})
        cell["base" if agent == "base-zeroshot" else "instruct"] = value
    return out


@warehouse.retrying
def reference_scores(suite: str, base_model: str, benchmark: str) -> dict[str, float | None]:
    """Scores (fractions) {"base", "instruct"} of the base model (zero-shot) and its official instruct model on
    one benchmark, from the suite's published baselines (the leaderboard's ``reported_cells``), None where absent."""
    with warehouse.connect() as con:
        return read_reference_scores(con, suite, base_model, benchmark)


@warehouse.once.read_once
def read_run_facets(con, run_id: str) -> list[Facet]:
    return read_run_facets_of(con, [run_id])[run_id]


def read_run_facets_of(con, run_ids: list[str]) -> dict[str, list[Facet]]:
    """{run id: :func:`run_facets`} of ``run_ids`` (every id a key), in one query."""
    order = {name: i for i, name in enumerate(FACET_ORDER)}
    found: dict[str, list[Facet]] = {run_id: [] for run_id in run_ids}
    for r in fetch_dicts(con, "SELECT run_id, facet, value, value_num, steps FROM facets "
                              "WHERE run_id = ANY(?::VARCHAR[])", [run_ids]):
        found[r["run_id"]].append(Facet(facet=r["facet"], value=r["value"], value_num=r["value_num"],
                                        steps=[int(i) for i in r["steps"].split(",") if i]))
    return {run_id: sorted(facets, key=lambda f: (order.get(f.facet, len(order)), f.steps[:1], f.value))
            for run_id, facets in found.items()}


@warehouse.retrying
def run_facets(run_id: str) -> list[Facet]:
    """The run's facets in rule order (methods, then measured facets as ``traces.vocabulary`` lists them)."""
    with warehouse.connect() as con:
        return read_run_facets(con, run_id)


@warehouse.retrying
def runs_with_facet(suite: str, spec: str) -> set[str]:
    """Ids of the suite's runs that have the facet ``spec`` (see :func:`facet_clause`)."""
    with warehouse.connect() as con:
        return read_runs_with_facet(con, suite, spec)


def read_runs_with_facet(con, suite: str, spec: str) -> set[str]:
    """:func:`runs_with_facet` on an open connection."""
    clause, values = facet_clause(spec)
    return {r[0] for r in con.execute(f"SELECT r.id FROM runs r WHERE r.suite = ? AND {clause}",
                                      [suite, *values]).fetchall()}


@warehouse.retrying
def run_directory(run_id: str) -> Path | None:
    """The run's directory in its results tree, ``<methods.results_root>/<runs.method>/<runs.run_dir>``, or None
    for an unknown run. The path is where ingest found the run; it may since have moved (not checked here)."""
    with warehouse.connect() as con:
        row = con.execute(
            "SELECT m.results_root, r.method, r.run_dir FROM runs r JOIN methods m ON m.id = r.method WHERE r.id = ?",
            [run_id]).fetchone()
    return Path(row[0]) / row[1] / row[2] if row else None


def checkpoint_path(run_id: str) -> Path | None:
    """Where the run's checkpoint is: ``<run directory>/final_model`` (spec 1.2), or None for an unknown run.

    The directory may not exist (the agent left none, or the tree moved); the evaluation reports that.
    """
    run_dir = run_directory(run_id)
    return run_dir / "final_model" if run_dir else None


__all__ = ["AGENT_RUN", "EXPLORATORY_ORIGINS", "run_titles", "FACET_ORDER", "PROBLEMS_SHOWN", "RUN_SORTS", "RunSortKey", "SCORED_KINDS", "STATE_TEXT",
           "TEXT_SHOWN", "RunSort", "SortDirection", "read_run_sort",
           "checkpoint_path", "evaluations", "facet_clause", "fetch_dicts", "filter_options", "get_run", "list_runs",
           "read_all_reference_scores", "read_evaluations", "read_evaluations_of", "read_filter_options",
           "read_reference_scores", "read_run", "read_run_facets", "read_run_facets_of", "read_run_list", "read_run_texts",
           "read_run_texts_of", "read_runs", "read_runs_with_facet", "read_verdicts", "reference_scores", "run_directory",
           "run_facets", "run_texts", "runs_with_facet"]
