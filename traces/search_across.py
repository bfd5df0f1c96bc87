"""The word index (``traces.search_index``) read across runs: which runs can hold a query (its inverted index
``word_runs``, the runs of each word, a run id read as a number: ``search_index.RUN_KEY``), and each run's
candidate steps (``step_words``), for the search of every trace (``traces.selectors.search``).

A query there is several needles (words or quoted phrases), each planned by :func:`search_index.plan`; a step
holds the query when it holds every needle, so it must have the words every needle's terms need. The same
conditions on ``word`` as a one-run search (``search_index._term_sql``, the index's own) are evaluated once per
row of ``word_runs`` and aggregated by run (:func:`candidate_runs`: at most ``search_index.MERGE_SPREAD`` rows
a word, not one per run, trace and word), then once per row of ``step_words`` and aggregated by step, for a page's runs
(:func:`lookup_many`).

This is a module of its own, not more of ``traces/search_index.py``: the index's version is a hash of that
module's source (:func:`search_index.version`), and a change there would send every stored run to the scan until
``manage.py reindex``; reading the index across runs does not change what is stored.
"""
from __future__ import annotations

from collections.abc import Sequence

import duckdb

from . import search_index
from .search_index import LONG_WORD, MAX_WORD, Plan

# A run's index is current when its rules_version says so (search_index.current, here in SQL).
_CURRENT = "coalesce(json_extract_string(r.rules_version, '$.search') = ?, false)"


def _conditions(plans: Sequence[Plan]) -> list[tuple[str, list]]:
    """The word conditions of every term of every plan that has terms (those without are tested, not looked
    up)."""
    return [search_index._term_sql(term) for p in plans if p.terms for term in p.terms]  # the index's own SQL


def one_word(plans: Sequence[Plan]) -> bool:
    """The query is a single needle of one word: a step whose word holds it holds it (no exact test needed,
    except for steps with a long word)."""
    if len(plans) != 1 or not plans[0].terms or len(plans[0].terms) != 1:
        return False
    term = plans[0].terms[0]
    return term.word == plans[0].lowered and term.length <= MAX_WORD


def candidate_runs(con: duckdb.DuckDBPyConnection, plans: Sequence[Plan], where: str,
                   params: list) -> tuple[list[tuple[str, bool]], bool]:
    """``([(run id, indexed)], exact)``: the runs matching ``where`` (a condition on ``runs r`` / ``methods m``
    with its ``params``) that can hold the query, ordered by id. ``indexed``: the run's index is current, and the
    words of every term occur in it (the run is listed because of them); a run whose index is not current is
    listed with ``indexed`` False (it is scanned). Without any term (``"->"``) every run matching ``where`` is
    listed, as not indexed. ``exact``: every listed run holds the query (a single word, every run indexed).
    One statement over ``word_runs``. Raises duckdb.Error."""
    conditions = _conditions(plans)
    version = search_index.version()
    if not conditions:
        rows = con.execute(f"SELECT r.id FROM runs r JOIN methods m ON m.id = r.method WHERE {where} ORDER BY r.id",
                           params).fetchall()
        return [(r[0], False) for r in rows], False
    marks = ", ".join(f"{c} AS t{i}" for i, (c, _) in enumerate(conditions))
    every = " AND ".join(f"bool_or(t{i})" for i in range(len(conditions)))
    values = [v for _, vs in conditions for v in vs]
    rows = con.execute(
        f"WITH hit AS (SELECT run FROM (SELECT unnest(runs) AS run, {marks} FROM word_runs "
        f"  WHERE {' OR '.join(c for c, _ in conditions)}) GROUP BY run HAVING {every}), "
        f"listed AS (SELECT r.id, {_CURRENT} AS indexed FROM runs r JOIN methods m ON m.id = r.method WHERE {where}) "
        f"SELECT id, indexed FROM listed WHERE NOT indexed OR {search_index.RUN_KEY.format('id')} IN "
        "(SELECT run FROM hit) ORDER BY id",
        [*values, *values, version, *params]).fetchall()
    listed = [(r[0], bool(r[1])) for r in rows]
    return listed, one_word(plans) and all(indexed for _, indexed in listed)


def lookup_many(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str],
                plans: Sequence[Plan]) -> dict[str, tuple[set[tuple[str, int]], set[tuple[str, int]]]]:
    """Per run of ``run_ids`` (whose index is current), ``(certain, unsure)`` sets of (trace, step index): steps
    that hold the query (a one-word query: a word of theirs holds it), and steps with every word the query's
    terms need, to be tested exactly; steps of neither do not hold it (``search_index.lookup`` for many runs
    and every trace, in one statement). Raises duckdb.Error."""
    conditions = _conditions(plans)
    assert conditions, "a query without terms is scanned"
    out: dict[str, tuple[set[tuple[str, int]], set[tuple[str, int]]]] = {r: (set(), set()) for r in run_ids}
    if not run_ids:
        return out
    sure = f"word <> '{LONG_WORD}'" if one_word(plans) else "false"
    marks = ", ".join(f"{c} AS t{i}" for i, (c, _) in enumerate(conditions))
    every = " AND ".join(f"bool_or(t{i})" for i in range(len(conditions)))
    values = [v for _, vs in conditions for v in vs]
    rows = con.execute(
        f"SELECT run_id, trace, idx, bool_or(sure) FROM (SELECT run_id, trace, unnest(steps) AS idx, {sure} AS sure, "
        f"{marks} FROM step_words WHERE run_id IN (SELECT unnest(?::VARCHAR[])) AND "
        f"({' OR '.join(c for c, _ in conditions)})) GROUP BY run_id, trace, idx HAVING {every}",
        [*values, list(run_ids), *values]).fetchall()
    for run_id, trace, idx, certain in rows:
        out[run_id][0 if certain else 1].add((trace, idx))
    return out
