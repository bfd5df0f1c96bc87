"""Reads of runs: the runs list, one run, its long texts, evaluations, facets, references and directory.

Each public read opens one unit of work (``warehouse.connect`` under ``@warehouse.retrying``); its ``read_*``
form takes an open connection, so that a page's selector (``traces.selectors.pages``) reads everything it shows
in one.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from collections.abc import Iterable
from typing import Any, Literal

from ptbsite import warehouse
from ptbsite.suites import Suite, display_suite

from ..facets import MEASURED_FACETS, METHOD_FACETS
from ..layout import BASELINE_PREFIX, LayoutError, is_baseline_dir, parse_method_name
from ..schemas import STATE_TEXT, Evaluation, Facet, Run, RunTexts
from ..verdicts import SCORED_KINDS, Verdict, effective_flags, flag_labels

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
SCORE_SQL = ("(SELECT e.accuracy FROM evaluations e WHERE e.run_id = r.id AND e.origin NOT IN ("
             + ", ".join(f"'{o}'" for o in EXPLORATORY_ORIGINS) + ") ORDER BY e.created_at DESC LIMIT 1)")
TEXT_SHOWN = 100_000  # characters of a run's prompt (and of its metrics.json) a run page and its API twin show
PROBLEMS_SHOWN = 500  # ingest problems listed on a run page and in its API twin (the count says how many)
VERDICT_COLUMNS = "judge, attempt, era, kind, value, flagged, text, note, source_file"


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
    columns += f", m.agent_name AS agent, m.agent_key, m.scaffold, {SCORE_SQL} AS score"
    source = f"FROM runs r JOIN methods m ON m.id = r.method WHERE {where}"
    cut = f" LIMIT {int(limit)}" if limit else ""
    if sort is None:
        rows = fetch_dicts(con, f"SELECT {columns} {source} ORDER BY r.id{cut}", params)
    else:
        sql, sort_params = sort.query(columns, source, after)
        rows = fetch_dicts(con, sql + cut, [*sort.params, *params, *sort_params])
        for row in rows:
            del row["sort_key"]
    runs = [Run(**row) for row in rows]
    _attach_verdicts(con, runs)
    return runs


RUN_SORTS: tuple[str, ...] = ("date", "agent", "scaffold", "benchmark", "base_model", "state", "score", "time",
                              "steps")
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


def read_verdicts(con, ids: list[str]) -> dict[str, list[Verdict]]:
    """{run id: its verdicts} for the given runs (every id a key), ordered by era, judge, attempt, kind."""
    by_run: dict[str, list[Verdict]] = {i: [] for i in ids}
    if not ids:
        return by_run
    for row in fetch_dicts(con, f"SELECT run_id, {VERDICT_COLUMNS} FROM verdicts WHERE run_id IN "
                                f"({', '.join('?' * len(ids))}) ORDER BY run_id, era, judge, attempt, kind", ids):
        by_run[row.pop("run_id")].append(Verdict(**row))
    return by_run


def _attach_verdicts(con, runs: list[Run]) -> None:
    if not runs:
        return
    ids = [r.id for r in runs]
    by_run = read_verdicts(con, ids)
    overrides: dict[str, dict[str, bool]] = {i: {} for i in ids}
    for row in fetch_dicts(con, f"SELECT run_id, kind, flagged FROM verdict_overrides WHERE run_id IN "
                                f"({', '.join('?' * len(ids))}) ORDER BY created_at", ids):
        overrides[row["run_id"]][row["kind"]] = row["flagged"]  # the latest override of a kind wins
    for run in runs:
        run.verdicts = by_run[run.id]
        run.overrides = overrides[run.id]
        baseline = is_baseline_dir(run.method)
        run.flags = effective_flags(run.verdicts, run.overrides) if not baseline else {}
        run.verdict_labels = flag_labels(run.verdicts, run.overrides) if not baseline else {}
        attach_names(run)


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
        for agent in suite.known_agents():
            if any(_sweep_of(m) == sweep for m in agent.methods):
                return f"{agent.name} (unlisted sweep)"
    return stored_name or method


def attach_names(run: Run) -> None:
    """Fill the run's display names from its suite file (agent, benchmark, base model, suite, seed); ids stay
    where the suite does not name them."""
    suite = display_suite(run.suite)
    if suite is None:
        run.agent_display, run.benchmark_name, run.base_model_name = run.agent or run.method, run.benchmark, run.base_model
        run.suite_name = run.suite
        return
    run.agent_display = agent_display(suite, run.method, run.agent)
    run.benchmark_name = suite.benchmark_name(run.benchmark)
    run.base_model_name = suite.base_model_name(run.base_model)
    run.suite_name = suite.name
    run.seed = suite.agent_seed(run.method)


def facet_clause(spec: str) -> tuple[str, list[str]]:
    """SQL condition on ``r.id`` for a facet spec: ``<facet>`` (the run has that facet, e.g. ``grpo``) or
    ``<facet>:<value>`` (that facet with that value, e.g. ``library:trl``, ``dataset:openai/gsm8k``)."""
    name, _, value = spec.partition(":")
    if value:
        return "r.id IN (SELECT run_id FROM facets WHERE facet = ? AND value = ?)", [name, value]
    return "r.id IN (SELECT run_id FROM facets WHERE facet = ?)", [name]


def read_run_list(
    con, *, agent: str | None = None, benchmark: str | None = None, base_model: str | None = None,
    flagged: bool | None = None, state: str | None = None, latest_only: bool = False,
    after: str | None = None, limit: int | None = 50, facet: str | None = None, suite: str | None = None,
    sort: str | None = None, direction: SortDirection = "asc",
) -> tuple[list[Run], str | None]:
    """:func:`list_runs` on an open connection."""
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


def read_run(con, run_id: str) -> Run | None:
    found = read_runs(con, "r.id = ?", [run_id])
    return found[0] if found else None


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


def read_run_texts(con, run_id: str) -> RunTexts | None:
    row = con.execute(
        "SELECT left(prompt, ?), length(prompt), CASE WHEN length(metrics_json) <= ? THEN metrics_json END, "
        "problems, redaction_warnings, secrets_redacted, chars_replaced, trace_incomplete, unknown_events "
        "FROM runs WHERE id = ?", [TEXT_SHOWN, TEXT_SHOWN, run_id]
    ).fetchone()
    if row is None:
        return None
    problems = json.loads(row[3])
    return RunTexts(prompt=row[0], prompt_not_shown=(row[1] or 0) - len(row[0] or ""),
                    metrics=json.loads(row[2]) if row[2] else None, problems=problems[:PROBLEMS_SHOWN],
                    problem_count=len(problems), redaction_warnings=json.loads(row[4])[:PROBLEMS_SHOWN],
                    secrets_redacted=row[5], chars_replaced=row[6], trace_incomplete=row[7],
                    unknown_events=json.loads(row[8]) if row[8] else {})


@warehouse.retrying
def run_texts(run_id: str) -> RunTexts | None:
    """The run's long texts and what ingest did to its files (:class:`traces.schemas.RunTexts`): ``prompt`` cut
    to TEXT_SHOWN characters, ``metrics`` None when longer, at most PROBLEMS_SHOWN problems and redaction
    warnings; None for an unknown run."""
    with warehouse.connect() as con:
        return read_run_texts(con, run_id)


@warehouse.retrying
def filter_options() -> dict[str, list[tuple[str, str]]]:
    """The values the runs list can be filtered by, as (value, label) pairs: ``agents`` (key, display name),
    ``benchmarks`` and ``base_models`` of the ingested (non-baseline) runs (id, the default suite's display name),
    sorted by label."""
    with warehouse.connect() as con:
        return read_filter_options(con)


def read_filter_options(con) -> dict[str, list[tuple[str, str]]]:
    agents = con.execute("SELECT DISTINCT m.agent_key, m.agent_name FROM runs r JOIN methods m ON m.id = r.method "
                         f"WHERE {AGENT_RUN} ORDER BY m.agent_name, m.agent_key").fetchall()
    benchmarks = con.execute(f"SELECT DISTINCT r.benchmark FROM runs r WHERE {AGENT_RUN} "
                             "ORDER BY r.benchmark").fetchall()
    models = con.execute(f"SELECT DISTINCT r.base_model FROM runs r WHERE {AGENT_RUN} "
                         "ORDER BY r.base_model").fetchall()
    suite = display_suite()
    bench_name = suite.benchmark_name if suite else str
    model_name = suite.base_model_name if suite else str
    return {"agents": [(k, n) for k, n in agents],
            "benchmarks": sorted(((b, bench_name(b)) for (b,) in benchmarks), key=lambda o: o[1].lower()),
            "base_models": sorted(((m, model_name(m)) for (m,) in models), key=lambda o: o[1].lower())}


def read_evaluations(con, run_id: str) -> list[Evaluation]:
    rows = fetch_dicts(con, "SELECT id, origin, accuracy AS score, metrics_json, provenance_json, created_at "
                            "FROM evaluations WHERE run_id = ? ORDER BY created_at DESC", [run_id])
    counting = next((r["id"] for r in rows if r["origin"] not in EXPLORATORY_ORIGINS), None)
    return [Evaluation(id=r["id"], origin=r["origin"], score=r["score"], metrics=json.loads(r["metrics_json"]),
                       provenance=json.loads(r["provenance_json"]), created_at=r["created_at"],
                       counts=r["id"] == counting) for r in rows]


@warehouse.retrying
def evaluations(run_id: str) -> list[Evaluation]:
    """Every evaluation of the run, newest first (score a fraction); ``counts`` marks the one that is the run's
    score (the newest that is not an exploratory rerun, EXPLORATORY_ORIGINS)."""
    with warehouse.connect() as con:
        return read_evaluations(con, run_id)


def read_reference_scores(con, suite: str, base_model: str, benchmark: str) -> dict[str, float | None]:
    rows = dict(con.execute(
        "SELECT agent, value FROM reported_cells WHERE suite = ? AND base_model = ? AND benchmark = ? "
        "AND agent IN ('base-zeroshot', 'instruct')", [suite, base_model, benchmark]).fetchall())
    return {"base": rows.get("base-zeroshot"), "instruct": rows.get("instruct")}


@warehouse.retrying
def reference_scores(suite: str, base_model: str, benchmark: str) -> dict[str, float | None]:
    """Scores (fractions) {"base", "instruct"} of the base model (zero-shot) and its official instruct model on
    one benchmark, from the suite's published baselines (the leaderboard's ``reported_cells``), None where absent."""
    with warehouse.connect() as con:
        return read_reference_scores(con, suite, base_model, benchmark)


def read_run_facets(con, run_id: str) -> list[Facet]:
    order = {name: i for i, name in enumerate(FACET_ORDER)}
    found = [Facet(facet=r["facet"], value=r["value"], value_num=r["value_num"],
                   steps=[int(i) for i in r["steps"].split(",") if i])
             for r in fetch_dicts(con, "SELECT facet, value, value_num, steps FROM facets WHERE run_id = ?", [run_id])]
    return sorted(found, key=lambda f: (order.get(f.facet, len(order)), f.steps[:1], f.value))


@warehouse.retrying
def run_facets(run_id: str) -> list[Facet]:
    """The run's facets in rule order (methods, then measured facets as ``traces.facets`` lists them)."""
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


__all__ = ["AGENT_RUN", "EXPLORATORY_ORIGINS", "run_titles", "FACET_ORDER", "PROBLEMS_SHOWN", "RUN_SORTS", "SCORED_KINDS", "STATE_TEXT",
           "TEXT_SHOWN", "RunSort", "SortDirection", "read_run_sort",
           "checkpoint_path", "evaluations", "facet_clause", "fetch_dicts", "filter_options", "get_run", "list_runs",
           "read_evaluations", "read_filter_options", "read_reference_scores", "read_run", "read_run_facets",
           "read_run_list", "read_run_texts", "read_runs", "read_runs_with_facet", "read_verdicts", "reference_scores", "run_directory",
           "run_facets", "run_texts", "runs_with_facet"]
