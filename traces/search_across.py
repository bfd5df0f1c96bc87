"""The word index (``traces.search_index``) read across runs: which runs can hold a query (its inverted index
``word_runs``, the runs of each word, a run id read as a number: ``search_index.RUN_KEY``), and each run's
candidate steps (``step_words``), for the search of every trace (``traces.selectors.search``).

A query there is several needles (words or quoted phrases), each planned by :func:`search_index.plan`; a step
holds the query when it holds every needle, so it must have the words every needle's terms need. The same
conditions on ``word`` as a one-run search (``search_index._term_sql``, the index's own) are evaluated once per
row of ``word_runs`` and aggregated by run (:func:`candidate_runs`: at most ``search_index.MERGE_SPREAD`` rows
a word, not one per run, trace and word), which also says which stored words satisfied them; for a page's runs,
those words are then looked up, not tested, in ``step_words`` and aggregated by step (:func:`lookup_many`).
``step_words`` is kept sorted by word (:func:`sort_step_words`), so that a lookup of a few words reads the row
groups holding them (zone maps), not the whole table: on the K=90 tree, a page's candidate steps cost 7-11 ms
of CPU against 17-23 ms for a scan of every row (bench/RESULTS.md).

This is a module of its own, not more of ``traces/search_index.py``: the index's version is a hash of that
module's source (:func:`search_index.version`), and a change there would send every stored run to the scan until
``manage.py reindex``; reading the index across runs, and the order of its rows, do not change what is stored.
"""
from __future__ import annotations

from collections.abc import Sequence

import duckdb

from . import search_index
from .search_index import LONG_WORD, MAX_WORD, Plan

# A run's index is current when its rules_version says so (search_index.current, here in SQL).
_CURRENT = "coalesce(json_extract_string(r.rules_version, '$.search') = ?, false)"
SORT_SPREAD = 2.0  # step_words rows per row sorted by the last rewrite past which sort_step_words rewrites it
SORT_MIN_ROWS = 122_880  # rows step_words holds before it is sorted at all (one DuckDB row group: no zone map helps)
# The spread an ingest sorts step_words at once it is done (the `ingest` command): this bounds what a
# search reads unsorted after it (a tenth of the rows). Every batch (`write_runs`), the ingest's included, merges
# word_runs and sorts step_words at SORT_SPREAD meanwhile (bench/RESULTS.md, i24i: settling them once per ingest
# instead was reverted, "Reverted after the merge").
SETTLED_SPREAD = 1.1


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


def term_words(con: duckdb.DuckDBPyConnection, plans: Sequence[Plan]) -> list[tuple[str, list[bool]]]:
    """The stored words (of ``word_runs``) that can hold some term of the plans (those with terms), each with
    ``[holds term i]`` for the terms in :func:`_conditions` order. One statement over the words of
    ``word_runs``. Raises duckdb.Error."""
    conditions = _conditions(plans)
    marks = ", ".join(f"{c} AS t{i}" for i, (c, _) in enumerate(conditions))
    values = [v for _, vs in conditions for v in vs]
    rows = con.execute(f"SELECT DISTINCT word, {marks} FROM word_runs WHERE {' OR '.join(c for c, _ in conditions)}",
                       [*values, *values]).fetchall()
    return [(r[0], [bool(t) for t in r[1:]]) for r in rows]


def _words_sql(words: list[tuple[str, list[bool]]], terms: int) -> tuple[str, list]:
    """The relation ``w(word, t0, t1, ...)`` of :func:`term_words`' answer, and its parameters."""
    columns = ", ".join(f"unnest(?::BOOLEAN[]) AS t{i}" for i in range(terms))
    return (f"(SELECT unnest(?::VARCHAR[]) AS word, {columns})",
            [[w for w, _ in words], *[[marks[i] for _, marks in words] for i in range(terms)]])


def listed_runs(con: duckdb.DuckDBPyConnection, where: str, params: list) -> list[tuple[str, bool]]:
    """``[(run id, indexed)]``: the runs matching ``where`` (a condition on ``runs r`` / ``methods m`` with its
    ``params``), ordered by id; ``indexed``: the run's word index is current (``search_index.current``). What
    :func:`candidate_runs` narrows; it depends on the warehouse only (callers may keep it per warehouse
    version). Raises duckdb.Error."""
    return [(r[0], bool(r[1])) for r in con.execute(
        f"SELECT r.id, {_CURRENT} FROM runs r JOIN methods m ON m.id = r.method WHERE {where} ORDER BY r.id",
        [search_index.version(), *params]).fetchall()]


def candidate_runs(con: duckdb.DuckDBPyConnection, plans: Sequence[Plan], listed: Sequence[tuple[str, bool]],
                   ) -> tuple[list[tuple[str, bool]], bool, list[tuple[str, list[bool]]]]:
    """``([(run id, indexed)], exact, words)``: the runs of ``listed`` (:func:`listed_runs`) that can hold the
    query, in its order. A run is listed with ``indexed`` True when its index is current and the words of every
    term occur in it (the run is listed because of them); a run whose index is not current is listed with
    ``indexed`` False (it is scanned). Without any term (``"->"``) every run is listed, as not indexed.
    ``exact``: every listed run holds the query (a single word, every run indexed). ``words``: the stored words
    that can hold some term, each with ``[holds term i]`` for the terms in :func:`_conditions` order (what
    :func:`lookup_many` looks up). One statement, one scan of ``word_runs``' words (its rows fit in a row group
    or two: no zone map would skip them). Raises duckdb.Error."""
    conditions = _conditions(plans)
    if not conditions:
        return [(rid, False) for rid, _ in listed], False, []
    marks = ", ".join(f"{c} AS t{i}" for i, (c, _) in enumerate(conditions))
    every = " AND ".join(f"bool_or(t{i})" for i in range(len(conditions)))
    terms = ", ".join(f"t{i}" for i in range(len(conditions)))
    values = [v for _, vs in conditions for v in vs]
    rows = con.execute(
        f"WITH m AS MATERIALIZED (SELECT word, runs, {marks} FROM word_runs "
        f"  WHERE {' OR '.join(c for c, _ in conditions)}) "
        f"SELECT word, [{terms}], NULL FROM (SELECT DISTINCT word, {terms} FROM m) UNION ALL "
        f"SELECT NULL, NULL, run FROM (SELECT unnest(runs) AS run, {terms} FROM m) GROUP BY run HAVING {every}",
        [*values, *values]).fetchall()
    words = [(r[0], [bool(t) for t in r[1]]) for r in rows if r[2] is None]
    hit = {r[2] for r in rows if r[2] is not None}
    found = [(rid, indexed) for rid, indexed in listed if not indexed or int(rid, 16) in hit]  # RUN_KEY in Python
    return found, one_word(plans) and all(indexed for _, indexed in found), words


def lookup_many(con: duckdb.DuckDBPyConnection, run_ids: Sequence[str], plans: Sequence[Plan],
                words: list[tuple[str, list[bool]]] | None = None,
                ) -> dict[str, tuple[set[tuple[str, int]], set[tuple[str, int]]]]:
    """Per run of ``run_ids`` (whose index is current), ``(certain, unsure)`` sets of (trace, step index): steps
    that hold the query (a one-word query: a word of theirs holds it), and steps with every word the query's
    terms need, to be tested exactly; steps of neither do not hold it (``search_index.lookup`` for many runs
    and every trace, in one statement over the rows of ``step_words`` holding the words: :func:`term_words`,
    looked up when not given). Raises duckdb.Error."""
    conditions = _conditions(plans)
    assert conditions, "a query without terms is scanned"
    out: dict[str, tuple[set[tuple[str, int]], set[tuple[str, int]]]] = {r: (set(), set()) for r in run_ids}
    if not run_ids:
        return out
    if words is None:
        words = term_words(con, plans)
    relation, values = _words_sql(words, len(conditions))
    sure = f"s.word <> '{LONG_WORD}'" if one_word(plans) else "false"
    every = " AND ".join(f"bool_or(t{i})" for i in range(len(conditions)))
    rows = con.execute(
        f"WITH w AS {relation} SELECT run_id, trace, idx, bool_or(sure) FROM (SELECT s.run_id, s.trace, "
        f"unnest(s.steps) AS idx, {sure} AS sure, w.* FROM step_words s JOIN w ON s.word = w.word "
        "WHERE s.run_id IN (SELECT unnest(?::VARCHAR[]))) "
        f"GROUP BY run_id, trace, idx HAVING {every}",
        [*values, list(run_ids)]).fetchall()
    for run_id, trace, idx, certain in rows:
        out[run_id][0 if certain else 1].add((trace, idx))
    return out


def sort_step_words(con: duckdb.DuckDBPyConnection, *, spread: float | None = None,
                    min_rows: int | None = None) -> bool:
    """Rewrite ``step_words`` sorted by (word, run) when it holds more than ``spread`` times the rows the last
    rewrite sorted (``step_words_sorted``; and at least ``min_rows``), inside the caller's transaction; returns
    whether it did (``spread`` and ``min_rows``: :data:`SORT_SPREAD` and :data:`SORT_MIN_ROWS` unless given).
    Rows written since follow unsorted, and a search reads them all (the sorted ones by their
    zone maps): a rewrite once they are as many as the sorted ones costs about twice the table's final size over
    an ingest (2.5 s of CPU for each rewrite of the K=90 tree's 2.1 M rows) and leaves at most half the table to
    read whole. ``spread=1``: whenever some row is unsorted (the end of ``manage.py reindex``). Raises
    duckdb.Error."""
    spread = SORT_SPREAD if spread is None else spread
    min_rows = SORT_MIN_ROWS if min_rows is None else min_rows
    rows = _one(con, "SELECT count(*) FROM step_words")
    done = _one(con, "SELECT coalesce(max(sorted_rows), 0) FROM step_words_sorted")
    if rows < min_rows or rows <= spread * done or rows == done:
        return False
    merged = con.execute("SELECT run_id, trace, word, steps FROM step_words ORDER BY word, run_id").to_arrow_table()
    con.execute("DELETE FROM step_words")
    con.register("sorted_words", merged)
    try:
        con.execute("INSERT INTO step_words (run_id, trace, word, steps) SELECT run_id, trace, word, steps "
                    "FROM sorted_words")
    finally:
        con.unregister("sorted_words")
    con.execute("DELETE FROM step_words_sorted")
    con.execute("INSERT INTO step_words_sorted (sorted_rows) VALUES (?)", [rows])
    return True


def _one(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    """The one number of an aggregate query."""
    row = con.execute(sql).fetchone()
    assert row is not None
    return int(row[0])
