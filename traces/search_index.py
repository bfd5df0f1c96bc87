"""The word index of trace text (``step_words``), so that a search of a long trace reads a few rows, not every step.

**What is stored.** For each batch of steps written (``traces.services.StepWriter``, ``write_runs``), one row per
(run, trace, word) with the indices of the batch's steps whose lower-cased input or output holds the word:
``step_words(run_id, trace, word, steps INTEGER[])``, in the transaction that writes the steps (a word has a row
per batch that holds it). DuckDB finds the words itself (``regexp_extract_all``, RE2) in the batch's Arrow table,
so the cost is one batch's whatever the warehouse holds (reading the run's steps back would scan every run's).
A word is a maximal run of :data:`WORD` characters (letters, marks, digits, ``_``) of DuckDB's ``lower()`` of
the text; one longer than :data:`MAX_WORD` characters is stored as the marker :data:`LONG_WORD` (``''``, never a
word). The whole text of a field cut at ``traces.vocabulary.STEP_TEXT_CAP`` is indexed too (decompressed from the
``step_texts`` chunks written with the batch). From the same rows, the inverted index across runs:
``word_runs(word, runs UBIGINT[])``, one row per word of the batch with the batch's runs that hold it (any
trace; a run id read as a number, :data:`RUN_KEY`): the search of every trace finds the runs that can hold a query in these rows (about one per word
and batch of runs written; ``traces.search_across``), not in every (run, trace, word) row (issue 27). A run
deleted or re-indexed is taken out of every list first (:func:`forget_run`); each batch of runs stored (and a
reindex, at its end) merges the rows of each word once the table holds more than :data:`MERGE_SPREAD` rows a
word (:func:`merge_word_runs`), so a search reads at most that many rows a word.

**A search** (``traces.selectors.steps.read_matches``) lower-cases the query with DuckDB's ``lower()`` (the same
function as the text, so no case rule differs) and splits it into words the same way. Where the query occurs in
a step, each of its words is, in that step's text: the whole word (a query word with a separator on both sides),
the end of a word (the query's first word, when the query starts inside a word), the start of a word (its last
word, when the query ends inside one) or a part of one (a query that is a single word). Each such constraint is
answered from the run's word list (an equality, or ``starts_with``/``ends_with``/``contains`` over the distinct
words of the trace, plus the long-word marker), the step sets are intersected, and only those candidate steps are
read and checked with the exact test (``contains(lower(text), lowered query)``). A query that is one word needs
no test: a step with a word holding it holds it (only steps with a long word are tested). The result is thus
exactly the scan's, for any query. A query without a word, or whose only words are partial ones of fewer than
:data:`MIN_PARTIAL` characters (``"a"``, ``"->"``, ``"::"``), and a run stored without the index (ingested before
migration 0017, or with another version of this module: ``runs.rules_version["search"]``, :func:`version`;
``manage.py reindex`` builds it), are answered by the scan.

**Why words, not trigrams** (``bench/index_cost.py`` on the 180 MB / 145,357-step bench trace, CPU seconds on
this machine, bench/RESULTS.md): a trigram index holds 15.4 M (step, trigram) pairs, 4.3x the 3.6 M (step,
word) pairs, and costs 5.4 s to build in Python (``set(zip(...))``), 9.8 s in DuckDB (``regexp_extract_all``)
and ~160 s with ``substring`` (quadratic on long texts), against 2.0 s for the words, with a whole ingest of the
trace at ~10 s. The words still give exact candidates inside a word: a part of a word is looked up among the
trace's distinct words (a few hundred thousand short strings, not the 46 M characters of its steps).
"""
from __future__ import annotations

import json
import sys
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

import duckdb

from . import records
from .records import StepTextRow, WordSourceRow
from .vocabulary import code_version

WORD = r"[\pL\pM\pN_]"  # one word character (RE2 syntax, in DuckDB's regexp functions)
WORDS = WORD + "+"
MAX_WORD = 100  # characters; a longer word is stored as LONG_WORD
LONG_WORD = ""
MIN_PARTIAL = 3  # characters a partial query word needs to be looked up (shorter ones match most words)
MAX_TERMS = 8  # query words looked up at most
REINDEX_BATCH = 16_384  # step indices of a stored run re-indexed by one statement
MAX_CANDIDATES = 10_000  # steps to test; past this many the scan of the trace costs less (bench/search.py)
RUN_KEY = "('0x' || {})::UBIGINT"  # a run id (16 hex characters, layout.run_id) as word_runs stores it
MERGE_SPREAD = 2.0  # word_runs rows per distinct word past which merge_word_runs rewrites it


_INDEX_SQL = (
    # Each step's words are listed with duplicates and each word's step list made distinct once (cheaper than
    # de-duplicating (step, word) pairs first: 1.8 s against 2.7 s of CPU for the 145,357-step bench trace, in
    # one statement); the lists are not sorted (a search makes sets of them).
    "SELECT run_id, trace, word, list_distinct(list(idx)) AS steps FROM ("
    f"  SELECT run_id, trace, idx, CASE WHEN length(w) > {MAX_WORD} THEN '{LONG_WORD}' ELSE w END AS word FROM ("
    f"    SELECT run_id, trace, idx, unnest(regexp_extract_all(lower(concat_ws(' ', input, output)), '{WORDS}')) "
    "     AS w FROM {source})"
    ") GROUP BY run_id, trace, word")


def index_rows(con: duckdb.DuckDBPyConnection, source: str, params: list | None = None) -> None:
    """Write the word rows of the steps in the relation ``source`` (run_id, trace, idx, input, output; its
    parameters ``params``), inside the caller's transaction: ``step_words`` and ``word_runs`` from one pass over
    the texts (the batch's word rows held as an Arrow table in between). Raises duckdb.Error."""
    words = con.execute(_INDEX_SQL.format(source=source), params or []).to_arrow_table()
    con.register("batch_words", words)
    try:
        con.execute("INSERT INTO step_words (run_id, trace, word, steps) SELECT run_id, trace, word, steps "
                    "FROM batch_words")
        con.execute(f"INSERT INTO word_runs (word, runs) SELECT word, list(DISTINCT {RUN_KEY.format('run_id')}) "
                    "FROM batch_words GROUP BY word")
    finally:
        con.unregister("batch_words")


def forget_run(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    """Take the run out of every ``word_runs`` list (rows left empty are deleted), inside the caller's
    transaction: before its word rows are written again, or when it is deleted. Raises duckdb.Error."""
    key = f"{RUN_KEY.format('?')}"
    con.execute(f"UPDATE word_runs SET runs = list_filter(runs, r -> r <> {key}) WHERE list_contains(runs, {key})",
                [run_id, run_id])
    con.execute("DELETE FROM word_runs WHERE len(runs) = 0")


def index_whole_texts(con: duckdb.DuckDBPyConnection, texts: Iterable[StepTextRow]) -> None:
    """Write the word rows of the whole texts of fields cut at ingest: ``texts`` are ``step_texts`` rows
    (zlib chunks), decompressed and joined in chunk order (the stored, cut text of those fields is indexed with
    its step). Raises duckdb.Error."""
    fields: dict[tuple[str, str, int, str], list[tuple[int, bytes]]] = {}
    for text in texts:
        fields.setdefault((text.run_id, text.trace, text.idx, text.field), []).append((text.chunk, text.data))
    if not fields:
        return
    sources = [WordSourceRow(run_id=run_id, trace=trace, idx=idx, input=None,
                             output=b"".join(zlib.decompress(d) for _, d in sorted(chunks)).decode("utf-8", "replace"))
               for (run_id, trace, idx, _), chunks in fields.items()]
    con.register("whole_texts", records.arrow_table(WordSourceRow, sources))
    try:
        index_rows(con, "whole_texts")
    finally:
        con.unregister("whole_texts")


def merge_word_runs(con: duckdb.DuckDBPyConnection, *, spread: float = MERGE_SPREAD) -> bool:
    """Rewrite ``word_runs`` as one row per word (the lists of its rows joined) when it holds more than
    ``spread`` rows per distinct word (HyperLogLog's estimate; each batch of runs written adds a row per word of
    its own), inside the caller's transaction; returns whether it did. The test reads the words once; a rewrite
    costs the table's size, and comes once the batches since the last one added as many rows as it holds.
    Raises duckdb.Error."""
    rows, words = _one(con, "SELECT count(*), approx_count_distinct(word) FROM word_runs", [])
    if rows <= spread * max(words, 1):
        return False
    merged = con.execute("SELECT word, list_distinct(flatten(list(runs))) AS runs FROM word_runs GROUP BY word "
                         "ORDER BY word").to_arrow_table()
    con.execute("DELETE FROM word_runs")
    con.register("merged_words", merged)
    try:
        con.execute("INSERT INTO word_runs (word, runs) SELECT word, runs FROM merged_words")
    finally:
        con.unregister("merged_words")
    return True


def reindex_run(con: duckdb.DuckDBPyConnection, run_id: str, *, batch: int = REINDEX_BATCH) -> None:
    """Replace the word rows of one stored run (every trace; its ``word_runs`` entries too) with those of its
    rows in ``steps`` and, for the fields cut at ingest, their whole texts in ``step_texts``, inside the caller's
    transaction. The steps are read ``batch`` indices at a time: one statement and the memory of one batch
    each. Raises duckdb.Error."""
    con.execute("DELETE FROM step_words WHERE run_id = ?", [run_id])
    forget_run(con, run_id)
    last = con.execute("SELECT max(idx) FROM steps WHERE run_id = ?", [run_id]).fetchone()
    for start in range(0, (last[0] if last and last[0] is not None else -1) + 1, batch):
        index_rows(con, "(SELECT run_id, trace, idx, input, output FROM steps WHERE run_id = ? AND idx >= ? "
                        "AND idx < ?)", [run_id, start, start + batch])
    names = records.columns(StepTextRow)
    index_whole_texts(con, [StepTextRow(**dict(zip(names, row, strict=True))) for row in con.execute(
        f"SELECT {', '.join(names)} FROM step_texts WHERE run_id = ?", [run_id]).fetchall()])


@cache
def version() -> str:
    """The version of the index (16 hex chars of sha256 over this module's source, as
    ``traces.vocabulary.code_version``): a run whose ``rules_version["search"]`` differs is searched by the scan."""
    return code_version(sys.modules[__name__])


@dataclass(frozen=True)
class Term:
    """One word of a query and where it must sit in a text word: ``whole`` (the word itself), ``end`` (the end
    of a word), ``start`` (its start) or ``part`` (anywhere in one); ``length`` in characters."""

    word: str
    where: str
    length: int


@dataclass(frozen=True)
class Plan:
    """A query as the search runs it: ``lowered`` (DuckDB's ``lower()`` of it, what the exact test looks for)
    and ``terms``, the word constraints to look up (None: the query is answered by the scan)."""

    lowered: str
    terms: tuple[Term, ...] | None


_ASCII_WORD = frozenset("0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")  # WORD's ASCII part


def plan(con: duckdb.DuckDBPyConnection, q: str) -> Plan:
    """The query ``q`` lowered and split into word constraints (module docstring). An ASCII query is lowered
    and split here (``str.lower`` and :data:`WORD` agree with DuckDB on ASCII); for a query with other
    characters DuckDB lowers it and says which of them are word characters (its own Unicode tables, those of
    the index), one statement. Raises duckdb.Error."""
    if q.isascii():
        lowered, wordy = q.lower(), _ASCII_WORD
    else:
        lowered = _one(con, "SELECT lower(?)", [q])[0]
        others = sorted({c for c in lowered if not c.isascii()})
        flags = _one(con, f"SELECT list_transform(?::VARCHAR[], c -> regexp_full_match(c, '{WORD}'))",
                     [others])[0] if others else []
        wordy = _ASCII_WORD | {c for c, word in zip(others, flags) if word}
    words, current = [], ""
    for c in lowered:
        if c in wordy:
            current += c
        elif current:
            words.append(current)
            current = ""
    if current:
        words.append(current)
    starts_inside, ends_inside = bool(lowered) and lowered[0] in wordy, bool(lowered) and lowered[-1] in wordy
    terms = []
    for i, word in enumerate(words):
        open_left, open_right = i == 0 and starts_inside, i == len(words) - 1 and ends_inside
        where = {(False, False): "whole", (True, False): "end", (False, True): "start", (True, True): "part"}[
            (open_left, open_right)]
        if where == "whole" or len(word) >= MIN_PARTIAL:  # len: code points, as DuckDB's length()
            terms.append(Term(word, where, len(word)))
    # Fewer terms give more candidates, never fewer matches: the longest (the most telling) are looked up.
    terms = sorted(sorted(terms, key=lambda t: -t.length)[:MAX_TERMS], key=terms.index)
    return Plan(lowered, tuple(terms) if terms else None)


def _term_sql(term: Term) -> tuple[str, list]:
    """The WHERE condition on step_words of the text words that can hold ``term``, and its parameters."""
    if term.length > MAX_WORD:  # only a long word can hold it, and long words are stored as the marker
        return "word = ?", [LONG_WORD]
    if term.where == "whole":
        return "word = ?", [term.word]
    test = {"end": "ends_with(word, ?)", "start": "starts_with(word, ?)", "part": "contains(word, ?)"}[term.where]
    return f"({test} OR word = ?)", [term.word, LONG_WORD]


def current(rules_version: str | None) -> bool:
    """Whether a run's ``rules_version`` text says its word index was built by this version of the module."""
    try:
        versions = json.loads(rules_version) if rules_version else {}
    except ValueError:
        return False
    return isinstance(versions, dict) and versions.get("search") == version()


def indexed(con: duckdb.DuckDBPyConnection, run_id: str) -> bool:
    """Whether the run's word index was built by this version of the module (:func:`current`)."""
    row = con.execute("SELECT rules_version FROM runs WHERE id = ?", [run_id]).fetchone()
    return row is not None and current(row[0])


def lookup(con: duckdb.DuckDBPyConnection, run_id: str, trace: str, plan: Plan) -> tuple[set[int], set[int]] | None:
    """``(certain, unsure)`` step indices of the trace from the word index for a query with terms: ``certain``
    steps hold the query (it is one word, and a word of theirs holds it), ``unsure`` ones have the words the
    query needs and get the exact test (the candidates of the module docstring). Steps of neither hold it. None
    when the run's index is not :func:`current` (the caller scans).

    One statement and one read of the run's word rows whatever the number of terms (on DuckLake each table read
    costs ~15 ms): each row is marked with the terms its word satisfies, and a step is a candidate when its
    words satisfy every term. Raises duckdb.Error."""
    assert plan.terms is not None
    conditions = [_term_sql(term) for term in plan.terms]
    one_word = len(plan.terms) == 1 and plan.terms[0].word == plan.lowered and plan.terms[0].length <= MAX_WORD
    # The query is one word: a text word holding it means the text does; only the long-word marker is unsure.
    sure = f"word <> '{LONG_WORD}'" if one_word else "false"
    marks = ", ".join(f"{c} AS t{i}" for i, (c, _) in enumerate(conditions))
    every = " AND ".join(f"t{i}" for i in range(len(conditions)))
    satisfied = ", ".join(f"bool_or(t{i}) AS t{i}" for i in range(len(conditions)))
    params = [run_id] + [v for _, values in conditions for v in values] + [run_id, trace] + \
        [v for _, values in conditions for v in values]
    version_text, certain, unsure = _one(con, (
        "SELECT (SELECT rules_version FROM runs WHERE id = ?), list(idx) FILTER (WHERE sure), "
        "list(idx) FILTER (WHERE NOT sure) FROM ("
        f"  SELECT idx, bool_or(sure) AS sure, {satisfied} FROM ("
        f"    SELECT unnest(steps) AS idx, {sure} AS sure, {marks} FROM step_words "
        f"    WHERE run_id = ? AND trace = ? AND ({' OR '.join(c for c, _ in conditions)}))"
        f"  GROUP BY idx) WHERE {every}"), params)
    if not current(version_text):
        return None
    return set(certain or ()), set(unsure or ())


def _one(con: duckdb.DuckDBPyConnection, sql: str, params: list) -> tuple:
    """The one row of an aggregate or constant query."""
    row = con.execute(sql, params).fetchone()
    assert row is not None
    return row


def whole_field(con: duckdb.DuckDBPyConnection, run_id: str, trace: str, idx: int, field: str) -> str:
    """The whole text of one cut field (``input`` | ``output``) of a step, from its ``step_texts`` chunks."""
    chunks = con.execute("SELECT data FROM step_texts WHERE run_id = ? AND trace = ? AND idx = ? AND field = ? "
                         "ORDER BY chunk", [run_id, trace, idx, field]).fetchall()
    return b"".join(zlib.decompress(c[0]) for c in chunks).decode("utf-8", "replace")
