"""Reads of a trace's steps: pages (keyset pagination on (run, trace, idx)), whole texts, the export's step index
and whole steps, cursors.

``after`` is the last index seen, so a page of a 20,000-step trace costs what a page of a 200-step one does.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass

from collections.abc import Hashable, Iterable
from typing import Any

from ptbsite import warehouse
from ptbsite.warehouse.once import kept_key

from pydantic import computed_field

from .. import search_index
from ..schemas import EvidenceStep, Model, Run, Step, StepPage
from ..vocabulary import TEXT_CHUNK
from .runs import fetch_dicts

# One page of steps shows at most this many characters of step text in all (inputs and outputs together): each
# field gets PAGE_TEXT_CHARS / (2 * steps per page), at least MIN_FIELD_CHARS, so a page of 50 steps shows up to
# 10,000 characters of each input and output, one of 500 steps 1,000. With the page's fixed markup that bounds a
# page in bytes whatever the trace holds (tests/test_trace_integrity.py measures it).
PAGE_TEXT_CHARS = 1_000_000
MIN_FIELD_CHARS = 1_000
MAX_TEXT_RANGE = 1024 * 1024  # bytes of a step's whole text one request serves at most
EVIDENCE_CHARS = 1000
EVIDENCE_LIMIT = 200  # evidence steps listed on a run page and in its API twin (evidence_count says how many)


def field_chars(limit: int) -> int:
    """Characters of each step input and output a page of ``limit`` steps shows (see PAGE_TEXT_CHARS)."""
    return max(MIN_FIELD_CHARS, PAGE_TEXT_CHARS // (2 * max(1, limit)))


def _step_filter(run_id: str, trace: str, kind: str | None, tool: str | None) -> tuple[str, list]:
    where, params = ["run_id = ?", "trace = ?"], [run_id, trace]
    if kind:
        where.append("kind = ?")
        params.append(kind)
    if tool:
        where.append("tool = ?")
        params.append(tool)
    return " AND ".join(where), params


# The exact test of a search (two parameters: the lowered query) and the rows whose stored text was cut at ingest.
_HOLDS = "(contains(lower(output), ?) OR contains(lower(coalesce(input, '')), ?))"
_CUT = "(input_bytes > strlen(input) OR output_bytes > strlen(output))"


def read_matches(
    con, run_id: str, *, trace: str = "agent", kind: str | None = None, tool: str | None = None,
    q: str | None = None, after: int = -1, upto: int | None = None, limit: int, descending: bool = False,
    use_index: bool = True,
) -> list[int]:
    """The indices of the trace's steps in ``(after, upto]`` whose kind and tool are ``kind`` and ``tool`` (when
    given) and whose whole input or output holds ``q`` (case-insensitive: DuckDB's ``lower()`` of both; the
    whole text of a field cut at ingest is read from ``step_texts``), in index order (``descending``: from the
    end), at most ``limit`` of them.

    The search reads the candidate steps of the word index (``traces.search_index``) when it can answer for the
    query and the run, else scans the trace (``use_index=False`` forces the scan); both give the same list."""
    where, params = _step_filter(run_id, trace, kind, tool)
    where += " AND idx > ?" + (" AND idx <= ?" if upto is not None else "")
    params += [after] + ([upto] if upto is not None else [])
    order = "DESC" if descending else "ASC"
    if not q:
        return [r[0] for r in con.execute(f"SELECT idx FROM steps WHERE {where} ORDER BY idx {order} LIMIT ?",
                                          [*params, limit]).fetchall()]
    plan = search_index.plan(con, q)
    text = plan.lowered
    found = search_index.lookup(con, run_id, trace, plan) if use_index and plan.terms is not None else None
    if found is not None and len(found[1]) <= search_index.MAX_CANDIDATES:
        certain, unsure = ({i for i in ids if i > after and (upto is None or i <= upto)} for ids in found)
        if kind or tool:  # the steps of that kind and tool, a read of small columns only
            allowed = {r[0] for r in con.execute(f"SELECT idx FROM steps WHERE {where}", params).fetchall()}
            certain, unsure = certain & allowed, unsure & allowed
        tested = _tested(con, run_id, trace, sorted(unsure), text)
        hits = certain | {idx for idx, holds, _, _ in tested if holds}
        cut = [(idx, in_cut, out_cut) for idx, holds, in_cut, out_cut in tested if not holds and (in_cut or out_cut)]
    else:
        hits = {r[0] for r in con.execute(f"SELECT idx FROM steps WHERE {where} AND {_HOLDS} ORDER BY idx {order} "
                                          "LIMIT ?", [*params, text, text, limit]).fetchall()}
        cut = [r for r in con.execute(f"SELECT idx, {_CUT_FIELDS} FROM steps WHERE {where} AND {_CUT}",
                                      params).fetchall() if r[0] not in hits]
    # A field cut at ingest holds the query perhaps only past the cut (its stored text does not): its whole text
    # is tested (rare rows).
    for idx, in_cut, out_cut in cut:
        if any(con.execute("SELECT contains(lower(?), ?)", [search_index.whole_field(con, run_id, trace, idx, field),
                                                             text]).fetchone()[0]
               for field, is_cut in (("input", in_cut), ("output", out_cut)) if is_cut):
            hits.add(idx)
    return sorted(hits, reverse=descending)[:limit]


# Rows by index: a semi join on the indices, so that only those rows' texts are read. A test of their text goes in
# the SELECT list, not the WHERE clause, which DuckDB would push into the scan of every row of the trace.
_BY_INDEX = "run_id = ? AND trace = ? AND idx IN (SELECT unnest(?::INTEGER[]))"
_CUT_FIELDS = "input_bytes > strlen(input), output_bytes > strlen(output)"  # whether each field was cut


def _tested(con, run_id: str, trace: str, indices: list[int], text: str) -> list[tuple[int, bool, bool, bool]]:
    """``(idx, its stored input or output holds the lowered text, input cut, output cut)`` of the step
    ``indices``, in one statement."""
    if not indices:
        return []
    return con.execute(f"SELECT idx, {_HOLDS}, {_CUT_FIELDS} FROM steps WHERE {_BY_INDEX}",
                       [text, text, run_id, trace, indices]).fetchall()


MATCH_COUNT_CAP = 10_000  # a filtered page counts its matches up to this many (``StepPage.capped`` says so)


@warehouse.once.read_once
def read_steps_page(
    con, run_id: str, *, trace: str = "agent", after: int = -1, limit: int = 50, kind: str | None = None,
    tool: str | None = None, q: str | None = None, budget_hours: float | None = None,
    step_count: int | None = None, before: int | None = None,
) -> StepPage:
    """:func:`steps_page` on an open connection. ``step_count``: the trace's stored number of steps
    (``runs.step_count`` for the agent trace), used as the page's total when no filter is set, so no page counts
    the trace's rows. ``before``: only steps with an index below it (a page read backwards: the steps before the
    first one shown); ``total`` still counts the whole trace's matches.

    Keyset paging that prunes: step indices of a trace are dense from 0, so an unfiltered page is first read from
    the index window ``(after, after + limit + 1]``; only when that window does not fill the page is the rest of
    the trace read (``idx >`` the window's end). The first page of a 60,000-step trace thus reads what its last
    page reads. A filtered page (kind, tool, text search) finds the indices of its matches with
    :func:`read_matches` (at most MATCH_COUNT_CAP + 1: the count, ``capped`` past it; a text search from the word
    index when it can) and reads the page's rows by index."""
    where, params = _step_filter(run_id, trace, None, None)
    count_where, count_params = where, list(params)
    if before is not None:
        where, params = f"{where} AND idx < ?", [*params, before]
    filtered = bool(kind or tool or q)
    chars = field_chars(limit)
    columns = _PAGE_COLUMNS
    select = f"SELECT {columns} FROM steps WHERE {where} "
    capped = False
    if filtered:
        # The matches' indices (at most MATCH_COUNT_CAP + 1: their number is the count), then the page by index.
        hits = read_matches(con, run_id, trace=trace, kind=kind, tool=tool, q=q, limit=MATCH_COUNT_CAP + 1)
        capped, total = len(hits) > MATCH_COUNT_CAP, min(len(hits), MATCH_COUNT_CAP)
        if before is not None:
            hits = [i for i in hits if i < before]
        wanted = [i for i in hits if i > after][:limit + 1]
        if capped and len(wanted) <= limit:  # a page beyond the counted matches
            wanted = read_matches(con, run_id, trace=trace, kind=kind, tool=tool, q=q, after=after, limit=limit + 1,
                                  upto=None if before is None else before - 1)
        rows = fetch_dicts(con, f"SELECT {columns} FROM steps WHERE {_BY_INDEX} ORDER BY idx",
                           [chars, chars, run_id, trace, wanted]) if wanted else []
    else:
        window = limit + 1
        rows = fetch_dicts(con, select + "AND idx > ? AND idx <= ? ORDER BY idx LIMIT ?",
                           [chars, chars, *params, after, after + window, limit + 1])
        if len(rows) <= limit:
            rows += fetch_dicts(con, select + "AND idx > ? ORDER BY idx LIMIT ?",
                                [chars, chars, *params, after + window, limit + 1 - len(rows)])
    if not filtered:
        total = step_count if step_count is not None else con.execute(
            f"SELECT count(*) FROM steps WHERE {count_where}", count_params).fetchone()[0]
    return _page_of(rows, limit, total, budget_hours, capped)


# A page's columns, with two parameters: the characters of each field shown (field_chars).
_PAGE_COLUMNS = (
    "idx AS index, time, elapsed_s, kind, tool, left(input, ?) AS input, left(output, ?) AS output, "
    "is_error, tokens_in, tokens_out, line, suspicious, call_id, label, "
    "coalesce(input_bytes, strlen(input)) AS input_bytes, coalesce(output_bytes, strlen(output)) AS output_bytes")


def _page_of(rows: list[dict], limit: int, total: int, budget_hours: float | None, capped: bool) -> StepPage:
    """The StepPage of ``rows`` (of _PAGE_COLUMNS, in order; one more than ``limit`` when a next page follows)."""
    budget_s = budget_hours * 3600 if budget_hours else None
    steps = [Step(**{**r, "suspicious": r["suspicious"].split(",") if r["suspicious"] else [],
                     "remaining_s": (budget_s - r["elapsed_s"]) if (budget_s and r["elapsed_s"] is not None) else None})
             for r in rows[:limit]]
    return StepPage(steps=steps, next=steps[-1].index if len(rows) > limit else None, total=total, capped=capped)


def read_first_pages_of(con, wanted: dict[str, tuple[list[Run], tuple[int, ...]]]) -> dict[tuple[str, int],
                                                                                      dict[str, StepPage]]:
    """{(trace, limit): {run id: the first page of ``limit`` steps of its ``trace``, unfiltered}} of each trace's
    runs and page sizes (``wanted``: {trace: (runs, limits)}), as ``read_steps_page(con, run.id, trace=trace,
    limit=limit, budget_hours=run.budget_hours, step_count=run.step_count if trace == "agent" else None)`` reads
    each, in two or three queries for them all: the index window of each trace's largest page, with each field cut
    to the smallest page's characters (:func:`field_chars`: a page of fewer steps shows more of each, and cutting
    ``left(text, n)`` to fewer characters is ``left(text, m)``); the rest of those the window does not fill; the
    counts that are not stored. The static export's run page and its twin read the agent trace's first 200 and 50
    steps, and each judge trace's first 200: one read instead of one per trace and size."""
    wanted = {trace: (runs, limits) for trace, (runs, limits) in wanted.items() if limits}
    pairs = {(run.id, trace) for trace, (runs, _) in wanted.items() for run in runs}
    most = {trace: max(limits) for trace, (_, limits) in wanted.items()}
    out: dict[tuple[str, int], dict[str, StepPage]] = {(trace, limit): {} for trace, (_, limits) in wanted.items()
                                                       for limit in limits}
    if not pairs:
        return out
    ids, traces = sorted({run_id for run_id, _ in pairs}), sorted(most)
    chars, window = field_chars(min(min(limits) for _, limits in wanted.values())), max(most.values()) + 1
    rows: dict[tuple[str, str], list[dict]] = {pair: [] for pair in pairs}
    for r in fetch_dicts(con, f"SELECT run_id, trace AS trace_name, {_PAGE_COLUMNS} FROM steps WHERE run_id = "
                              "ANY(?::VARCHAR[]) AND trace = ANY(?::VARCHAR[]) AND idx > -1 AND idx <= ? ORDER BY "
                              "run_id, trace, idx", [chars, chars, ids, traces, -1 + window]):
        found = rows.get((r.pop("run_id"), r.pop("trace_name")))
        if found is not None:
            found.append(r)
    short = {pair for pair, found in rows.items() if len(found) <= most[pair[1]]}
    if short:
        for r in fetch_dicts(con, f"SELECT * EXCLUDE (k) FROM (SELECT run_id, trace AS trace_name, {_PAGE_COLUMNS}, "
                                  "row_number() OVER (PARTITION BY run_id, trace ORDER BY idx) AS k FROM steps WHERE "
                                  "run_id = ANY(?::VARCHAR[]) AND trace = ANY(?::VARCHAR[]) AND idx > ?) WHERE k <= ? "
                                  "ORDER BY run_id, trace_name, index",
                             [chars, chars, sorted({p[0] for p in short}), sorted({p[1] for p in short}), -1 + window,
                              window]):
            pair = (r.pop("run_id"), r.pop("trace_name"))
            if pair in short and len(rows[pair]) <= most[pair[1]]:
                rows[pair].append(r)
    stored = {run.id: run.step_count for run in wanted.get("agent", ([], ()))[0] if run.step_count is not None}
    counted = sorted(pair for pair in pairs if pair[1] != "agent" or pair[0] not in stored)
    totals = dict.fromkeys(counted, 0)
    if counted:
        totals.update({(run_id, trace): n for run_id, trace, n in con.execute(
            "SELECT run_id, trace, count(*) FROM steps WHERE run_id = ANY(?::VARCHAR[]) AND trace = ANY(?::VARCHAR[]) "
            "GROUP BY run_id, trace", [sorted({p[0] for p in counted}), sorted({p[1] for p in counted})]).fetchall()
            if (run_id, trace) in totals})
    for trace, (runs, limits) in wanted.items():
        for limit in limits:
            cut = field_chars(limit)
            for run in runs:
                page = rows[(run.id, trace)][:limit + 1]
                if cut < chars:
                    page = [{**r, "input": r["input"] if r["input"] is None else r["input"][:cut],
                             "output": r["output"] if r["output"] is None else r["output"][:cut]} for r in page]
                total = stored[run.id] if trace == "agent" and run.id in stored else totals[(run.id, trace)]
                out[(trace, limit)][run.id] = _page_of(page, limit, total, run.budget_hours, False)
    return out


@warehouse.retrying
def steps_page(
    run_id: str, *, trace: str = "agent", after: int = -1, limit: int = 50, kind: str | None = None,
    tool: str | None = None, q: str | None = None, budget_hours: float | None = None,
) -> StepPage:
    """One page of a trace's steps with index > ``after``, filtered by kind, tool and a case-insensitive text
    search ``q`` over input and output (server-side). Each input and output is cut to :func:`field_chars`
    characters for ``limit`` steps (``*_not_shown`` says how many bytes are left out), so a page is bounded in
    size whatever the trace holds. ``remaining_s``: seconds left of ``budget_hours``."""
    with warehouse.connect() as con:
        return read_steps_page(con, run_id, trace=trace, after=after, limit=limit, kind=kind, tool=tool, q=q,
                               budget_hours=budget_hours)


class TextRange(Model):
    """Bytes ``[offset, end)`` of a step field's whole text (UTF-8, cut at character boundaries), decoded as
    ``text``; ``total_bytes`` is the whole text's size; ``next_offset`` the ``offset`` of the next range (None at
    the end). ``run_id``, ``trace``, ``index`` and ``field`` name the text."""

    run_id: str
    trace: str
    index: int
    field: str
    offset: int
    end: int
    total_bytes: int
    text: str

    @computed_field  # type: ignore[prop-decorator]
    @property
    def next_offset(self) -> int | None:
        return self.end if self.end < self.total_bytes else None


@warehouse.retrying
def step_text(run_id: str, *, trace: str, index: int, field: str, offset: int = 0,
              length: int = MAX_TEXT_RANGE) -> TextRange | None:
    """A range of the WHOLE text of one step's ``field`` (``input`` | ``output``), also when ingest stored it
    cut (``traces.vocabulary.STEP_TEXT_CAP``): bytes from ``offset`` (UTF-8; moved forward to a character start),
    at most ``length`` (capped at MAX_TEXT_RANGE; the end moved back to a character start). Reads only the
    compressed chunks of ``step_texts`` that hold the range. None for an unknown step; an absent input is "".

    Raises:
        ValueError: ``field`` is neither ``input`` nor ``output``.
    """
    if field not in ("input", "output"):
        raise ValueError("field must be input or output")
    offset, length = max(0, offset), max(0, min(length, MAX_TEXT_RANGE))
    with warehouse.connect() as con:
        row = con.execute(
            f"SELECT {field}, coalesce({field}_bytes, strlen({field})) FROM steps WHERE run_id = ? AND trace = ? "
            "AND idx = ?", [run_id, trace, index]).fetchone()
        if row is None:
            return None
        stored = (row[0] or "").encode("utf-8", "surrogatepass")
        total = row[1] or 0
        base, data = 0, stored
        if total > len(stored) and offset < total:
            first, last = offset // TEXT_CHUNK, min(offset + length + 4, total - 1) // TEXT_CHUNK
            chunks = con.execute(
                "SELECT chunk, data FROM step_texts WHERE run_id = ? AND trace = ? AND idx = ? AND field = ? "
                "AND chunk BETWEEN ? AND ? ORDER BY chunk", [run_id, trace, index, field, first, last]).fetchall()
            if len(chunks) == last - first + 1:
                base, data = first * TEXT_CHUNK, b"".join(zlib.decompress(c[1]) for c in chunks)
            else:  # the whole text is not stored (cannot happen for rows ingested since issue 13): what there is
                total = len(stored)
    start = min(offset, total)
    while start < total and start - base < len(data) and 0x80 <= data[start - base] < 0xC0:
        start += 1  # a continuation byte: the character began before the range
    end = min(start + length, total)
    while start < end < total and end - base < len(data) and 0x80 <= data[end - base] < 0xC0:
        end -= 1  # do not cut the last character
    return TextRange(run_id=run_id, trace=trace, index=index, field=field, offset=start, end=end, total_bytes=total,
                     text=data[start - base:end - base].decode("utf-8", "replace"))


def read_previous_cursor(
    con, run_id: str, *, after: int, limit: int, trace: str = "agent", kind: str | None = None,
    tool: str | None = None, q: str | None = None,
) -> int | None:
    """The ``after`` cursor of the page of ``limit`` steps before the page that starts after ``after`` (-1 when
    that is the first page), None when the page after ``after`` is itself the first. Same filters as steps_page."""
    if after < 0:
        return None
    if q:  # the (limit + 1)-th match counting back from the cursor, as the search finds them
        before = read_matches(con, run_id, trace=trace, kind=kind, tool=tool, q=q, upto=after, limit=limit + 1,
                              descending=True)
        return before[limit] if len(before) > limit else -1
    where, params = _step_filter(run_id, trace, kind, tool)
    # The index window before the cursor first (as read_steps_page), the whole trace before it only if needed.
    window = (limit + 1) * (8 if (kind or tool) else 1)
    row = con.execute(f"SELECT idx FROM steps WHERE {where} AND idx <= ? AND idx > ? ORDER BY idx DESC LIMIT 1 "
                      "OFFSET ?", [*params, after, after - window, limit]).fetchone()
    if row is None:
        row = con.execute(f"SELECT idx FROM steps WHERE {where} AND idx <= ? ORDER BY idx DESC LIMIT 1 OFFSET ?",
                          [*params, after, limit]).fetchone()
    return row[0] if row else -1


@warehouse.once.read_once
def read_has_steps_before(con, run_id: str, *, before: int, trace: str = "agent", kind: str | None = None,
                          tool: str | None = None, q: str | None = None) -> bool:
    """Whether the trace has a step matching the filters with an index below ``before`` (the "Earlier steps"
    control of a page opened further in)."""
    if before <= 0:
        return False
    if q:  # as the search finds its matches (the word index when it can)
        return bool(read_matches(con, run_id, trace=trace, kind=kind, tool=tool, q=q, upto=before - 1, limit=1))
    where, params = _step_filter(run_id, trace, kind, tool)
    return con.execute(f"SELECT 1 FROM steps WHERE {where} AND idx < ? LIMIT 1", [*params, before]).fetchone() is not None


@dataclass
class IndexedStep:
    """One step as the static export lays out a trace: its index and elapsed seconds (None without a clock), for
    the step pages and the in-browser jump to a step or a time."""

    index: int
    elapsed_s: float | None


@warehouse.retrying
def step_index(run_id: str, *, trace: str = "agent") -> list[IndexedStep]:
    """Every step of a trace in order (index, elapsed seconds)."""
    with warehouse.connect() as con:
        return read_step_index(con, run_id, trace=trace)


@warehouse.once.read_once
def read_step_index(con, run_id: str, *, trace: str = "agent") -> list[IndexedStep]:
    """:func:`step_index` on an open connection."""
    return [IndexedStep(idx, elapsed) for idx, elapsed in con.execute(
        "SELECT idx, elapsed_s FROM steps WHERE run_id = ? AND trace = ? ORDER BY idx", [run_id, trace]).fetchall()]


def read_step_indices_and_tools_of(con, run_ids: list[str]) -> tuple[dict[tuple[str, str], list[IndexedStep]],
                                                                      dict[str, list[str]]]:
    """({(run id, trace): :func:`read_step_index`} of every trace of ``run_ids``, {run id: :func:`read_tools_used` of
    its agent trace}), in one query
    (the static export's read ahead: each DuckLake query costs 5-20 CPU ms of catalog work whatever it returns)."""
    out: dict[tuple[str, str], list[IndexedStep]] = {}
    tools: dict[str, set[str]] = {run_id: set() for run_id in run_ids}
    for run_id, trace, idx, elapsed, tool in con.execute(
            "SELECT run_id, trace, idx, elapsed_s, tool FROM steps WHERE run_id = ANY(?::VARCHAR[]) "
            "ORDER BY run_id, trace, idx", [run_ids]).fetchall():
        out.setdefault((run_id, trace), []).append(IndexedStep(idx, elapsed))
        if tool is not None and trace == "agent":
            tools[run_id].add(tool)
    return out, {run_id: sorted(used) for run_id, used in tools.items()}


@dataclass
class WholeStep:
    """One step with its WHOLE input and output (also past ``traces.vocabulary.STEP_TEXT_CAP``, from
    ``step_texts``), as the static export's search index takes it; an absent input is ""."""

    index: int
    kind: str
    tool: str | None
    input: str
    output: str


WHOLE_STEPS_BATCH = 64  # steps one whole_steps call reads: each holds up to 2 x STEP_TEXT_CAP stored, more if cut


@warehouse.once.read_once
def read_whole_steps(con, run_id: str, *, trace: str = "agent", after: int = -1,
                     limit: int = WHOLE_STEPS_BATCH) -> list[WholeStep]:
    """:func:`whole_steps` on an open connection."""
    rows = con.execute(
        f"SELECT {_WHOLE_COLUMNS} FROM steps WHERE run_id = ? AND trace = ? AND idx > ? ORDER BY idx LIMIT ?",
        [run_id, trace, after, limit]).fetchall()
    cut = [r[0] for r in rows if r[5] or r[6]]
    whole: dict[tuple[int, str], list[bytes]] = {}
    if cut:  # the whole texts of the steps ingest stored cut, chunk by chunk in order
        for idx, field_name, data in con.execute(
                "SELECT idx, field, data FROM step_texts WHERE run_id = ? AND trace = ? AND list_contains(?, idx) "
                "ORDER BY idx, field, chunk", [run_id, trace, cut]).fetchall():
            whole.setdefault((idx, field_name), []).append(zlib.decompress(data))
    return _whole(rows, whole)


# A whole step's stored columns: index, kind, tool, input, output, whether ingest stored input / output cut.
_WHOLE_COLUMNS = ("idx, kind, tool, coalesce(input, ''), coalesce(output, ''), "
                  "coalesce(input_bytes, 0) > strlen(coalesce(input, '')), "
                  "coalesce(output_bytes, 0) > strlen(coalesce(output, ''))")


def _whole(rows: list[tuple], whole: dict[tuple[int, str], list[bytes]]) -> list[WholeStep]:
    """WholeSteps of ``rows`` (_WHOLE_COLUMNS), a field stored cut taken whole from its ``step_texts`` chunks
    (``whole``: {(index, field): chunks in order}; a field without chunks is what the steps table holds)."""

    def text(idx: int, field_name: str, stored: str) -> str:
        chunks = whole.get((idx, field_name))
        return b"".join(chunks).decode("utf-8", "replace") if chunks else stored

    return [WholeStep(index=idx, kind=kind, tool=tool, input=text(idx, "input", stored_in) if input_cut else stored_in,
                      output=text(idx, "output", stored_out) if output_cut else stored_out)
            for idx, kind, tool, stored_in, stored_out, input_cut, output_cut in rows]


def read_whole_steps_ahead(con, run_ids: list[str]) -> dict[str, dict[Hashable, Any]]:
    """Every step of every trace of ``run_ids`` with its whole input and output, as ``warehouse.once`` keeps
    :func:`read_whole_steps`' answers when a trace is paged from its start by WHOLE_STEPS_BATCH (``after``: the
    last index of the page before; then the empty page after the last), with each run's :func:`read_trace_names`
    and every trace's :func:`read_step_index` taken from the same rows, {run id: {kept key: answer}}: two queries
    for them all (the steps, the whole texts of those stored cut) where paging costs one per 64 steps and the names
    and indices one each. The static export's search reads every step of every run."""
    rows: dict[str, dict[str, list[tuple]]] = {run_id: {"agent": []} for run_id in run_ids}
    indices: dict[tuple[str, str], list[IndexedStep]] = {}
    cut: set[tuple[str, str, int]] = set()
    for run_id, trace, elapsed, *row in con.execute(
            f"SELECT run_id, trace, elapsed_s, {_WHOLE_COLUMNS} FROM steps WHERE run_id = ANY(?::VARCHAR[]) "
            "ORDER BY run_id, trace, idx", [run_ids]).fetchall():
        rows[run_id].setdefault(trace, []).append(tuple(row))
        indices.setdefault((run_id, trace), []).append(IndexedStep(row[0], elapsed))
        if row[5] or row[6]:
            cut.add((run_id, trace, row[0]))
    whole: dict[tuple[str, str], dict[tuple[int, str], list[bytes]]] = {}
    if cut:
        for run_id, trace, idx, field_name, data in con.execute(
                "SELECT run_id, trace, idx, field, data FROM step_texts WHERE run_id = ANY(?::VARCHAR[]) "
                "ORDER BY run_id, trace, idx, field, chunk", [sorted({c[0] for c in cut})]).fetchall():
            if (run_id, trace, idx) in cut:
                whole.setdefault((run_id, trace), {}).setdefault((idx, field_name), []).append(zlib.decompress(data))
    out: dict[str, dict[Hashable, Any]] = {}
    all_names = trace_names_of(run_ids, indices)
    for run_id, traces in rows.items():
        names = all_names[run_id]
        kept: dict[Hashable, Any] = {kept_key(read_trace_names, run_id): names}
        for trace in {"agent", *names}:
            kept[kept_key(read_step_index, run_id, trace=trace)] = indices.get((run_id, trace), [])
        for trace, found in traces.items():
            after = -1
            for start in range(0, len(found), WHOLE_STEPS_BATCH):
                page = _whole(found[start:start + WHOLE_STEPS_BATCH], whole.get((run_id, trace), {}))
                kept[kept_key(read_whole_steps, run_id, trace=trace, after=after)] = page
                after = page[-1].index
            kept[kept_key(read_whole_steps, run_id, trace=trace, after=after)] = []
        out[run_id] = kept
    return out


@warehouse.retrying
def whole_steps(run_id: str, *, trace: str = "agent", after: int = -1,
                limit: int = WHOLE_STEPS_BATCH) -> list[WholeStep]:
    """Up to ``limit`` steps of a trace with index > ``after``, in index order, each with its whole input and output
    (keyset pages: pass the last index read as ``after``; an empty list at the end). A text whose ``step_texts``
    chunks are missing (rows stored before issue 13) is what the steps table holds."""
    with warehouse.connect() as con:
        return read_whole_steps(con, run_id, trace=trace, after=after, limit=limit)


@warehouse.once.read_once
def read_step_at_time(con, run_id: str, seconds: float, *, trace: str = "agent") -> int | None:
    row = con.execute(
        "SELECT min(idx) FROM steps WHERE run_id = ? AND trace = ? AND elapsed_s >= ?", [run_id, trace, seconds]
    ).fetchone()
    if row[0] is None:
        row = con.execute("SELECT max(idx) FROM steps WHERE run_id = ? AND trace = ?", [run_id, trace]).fetchone()
    return row[0]


@warehouse.retrying
def step_at_time(run_id: str, seconds: float, *, trace: str = "agent") -> int | None:
    """The index of the first step at or after ``seconds`` of elapsed time, else the last step's."""
    with warehouse.connect() as con:
        return read_step_at_time(con, run_id, seconds, trace=trace)


@warehouse.once.read_once
def read_trace_names(con, run_id: str) -> list[str]:
    """The run's trace names, ``agent`` first, then the others sorted (:func:`trace_names_of`)."""
    return trace_names_of([run_id], con.execute("SELECT DISTINCT run_id, trace FROM steps WHERE run_id = ?",
                                                [run_id]).fetchall())[run_id]


def trace_names_of(run_ids: list[str], traces: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """{run id: :func:`trace_names`} of ``run_ids`` (every id a key) from the (run id, trace) pairs of their steps
    (``traces``: each pair at least once, as :func:`read_trace_names` reads them or the keys of
    :func:`read_step_indices_and_tools_of`' first answer, which then needs no query of its own)."""
    names: dict[str, set[str]] = {run_id: set() for run_id in run_ids}
    for run_id, trace in traces:
        names[run_id].add(trace)
    return {run_id: sorted(found, key=lambda n: (n != "agent", n)) for run_id, found in names.items()}


@warehouse.retrying
def trace_names(run_id: str) -> list[str]:
    """The traces stored for a run: ``agent`` first, then judges (``judge:codex``, ``judge:gpt5_4``, ...)."""
    with warehouse.connect() as con:
        return read_trace_names(con, run_id)


@warehouse.once.read_once
def read_tools_used(con, run_id: str, trace: str = "agent") -> list[str]:
    """Distinct tool names of a trace, for the tool filter."""
    return [row[0] for row in con.execute("SELECT DISTINCT tool FROM steps WHERE run_id = ? AND trace = ? "
                                          "AND tool IS NOT NULL ORDER BY tool", [run_id, trace]).fetchall()]


@warehouse.once.read_once
def read_evidence(con, run_id: str, limit: int = EVIDENCE_LIMIT) -> tuple[list[EvidenceStep], int]:
    """(the first ``limit`` evidence steps, how many there are) of the run's agent trace."""
    return read_evidence_of(con, [run_id], limit)[run_id]


def read_evidence_of(con, run_ids: list[str], limit: int = EVIDENCE_LIMIT) -> dict[str, tuple[list[EvidenceStep], int]]:
    """{run id: :func:`read_evidence`} of ``run_ids`` (every id a key), in one query."""
    found: dict[str, tuple[list[EvidenceStep], int]] = {run_id: ([], 0) for run_id in run_ids}
    for r in fetch_dicts(con, f"SELECT run_id, index, rules, input, n FROM (SELECT run_id, idx AS index, "
                              f"suspicious AS rules, left(input, {EVIDENCE_CHARS}) AS input, row_number() OVER "
                              "(PARTITION BY run_id ORDER BY idx) AS k, count(*) OVER (PARTITION BY run_id) AS n "
                              "FROM steps WHERE run_id = ANY(?::VARCHAR[]) AND trace = 'agent' AND suspicious IS NOT "
                              "NULL) WHERE k <= ? ORDER BY run_id, index", [run_ids, max(limit, 1)]):
        steps, _ = found[r["run_id"]]
        if len(steps) < limit:
            steps.append(EvidenceStep(index=r["index"], rules=r["rules"].split(","), input=r["input"]))
        found[r["run_id"]] = (steps, r["n"])
    return found


@warehouse.retrying
def evidence_steps(run_id: str, limit: int = EVIDENCE_LIMIT) -> list[EvidenceStep]:
    """The first ``limit`` agent-trace steps an evidence rule marked suspicious, in order, with ``input`` cut to
    EVIDENCE_CHARS characters (the list names and links the step; the step itself is on its page)."""
    with warehouse.connect() as con:
        return read_evidence(con, run_id, limit)[0]


@warehouse.retrying
def evidence_count(run_id: str) -> int:
    """How many agent-trace steps an evidence rule marked suspicious."""
    with warehouse.connect() as con:
        return read_evidence(con, run_id, 0)[1]

