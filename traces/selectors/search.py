"""Search every trace: ``/search/?q=`` and ``/api/search?q=`` (one selector, :func:`search_page`).

**The query.** Words and ``"quoted phrases"`` (:func:`parse_query`); a step matches when its input or its output
holds every one of them (each one a case-insensitive substring, as the run page's search: DuckDB's ``lower()`` of
the query and of the text). A phrase is one needle, spaces and punctuation included.

**How it is answered** (bounded whatever the tree holds): the word index of every run (``step_words``,
``traces.search_index``) says which runs have the words every needle needs (:func:`search_across.candidate_runs`,
one statement over the words); those runs, filtered like the runs list and ordered by id, are checked a batch at
a time (:func:`search_index.lookup_many`: each run's candidate steps in one statement; a step whose words could
hold the query but need not is read and tested exactly), until a page holds ``limit`` runs with a match. Runs
whose index is not current (stored before migration 0017 or by another version of the index) and queries
without a word (``"->"``) are scanned, run by run. Per run, the matches are counted up to :data:`RUN_COUNT_CAP`
(``capped`` past it) and the first :data:`SHOWN` are shown with an excerpt around the first needle.
Pages are keyset pages on the run id (``after``); a page tests at most :data:`MAX_RUNS_TESTED` runs, and when
that many held no match the page ends early with its cursor (``next``), so a page costs a bounded amount.
"""
from __future__ import annotations

import re

from pydantic import Field

from ptbsite import warehouse

from .. import search_across, search_index
from ..schemas import STATE_TEXT, Model, Run
from ..steps import STEP_KINDS
from ..verdicts import KIND_TEXT
from .runs import read_filter_options, read_runs, run_filter

MAX_NEEDLES = 8  # words and phrases of a query used at most (the rest are ignored, and the page says so)
MAX_QUERY = 200  # characters of a query read
SHOWN = 3  # matches shown per run
RUN_COUNT_CAP = 100  # matches counted per run (``SearchRun.capped`` past it)
TEST_CHUNK = 500  # unsure candidate steps of one run tested by one statement
MAX_RUNS_TESTED = 200  # runs tested for one page at most (the page ends early past it, with its cursor)
EXCERPT_BEFORE = 100  # characters of an excerpt before the match
EXCERPT_CHARS = 300  # characters of an excerpt
VERDICT_LABELS = ("flagged", "judge_error", "clean", "not_assessed")


_NEEDLE = re.compile(r'"([^"]+)"|(\S+)')


def parse_query(q: str) -> tuple[list[str], bool]:
    """``(needles, cut)``: the words and ``"quoted phrases"`` of ``q`` (its first MAX_QUERY characters; only
    double quotes make a phrase, and a quote without its pair is a character of its word, as is ``'``), each
    needle once (case-insensitively), at most MAX_NEEDLES; ``cut``: some were left out."""
    needles: list[str] = []
    for phrase, word in _NEEDLE.findall((q or "")[:MAX_QUERY]):
        part = phrase or word
        if part.strip() and part.lower() not in (n.lower() for n in needles):
            needles.append(part)
    return needles[:MAX_NEEDLES], len(needles) > MAX_NEEDLES


# ``key=value`` filters typed among the words (the header's box has no other field): the search's parameter names
# (``search_views.search_options``; ``base-model`` too), each to its parameter.
TYPED_FILTERS = {"agent": "agent", "benchmark": "benchmark", "base_model": "base_model", "base-model": "base_model",
                 "state": "state", "flagged": "flagged", "verdict": "verdict", "kind": "kind", "tool": "tool",
                 "latest": "latest"}
FILTER_TEXT = {"agent": "Agent", "benchmark": "Benchmark", "base_model": "Base model", "state": "State",
               "flagged": "Flagged", "verdict": "Judge verdict", "kind": "Step kind", "tool": "Tool",
               "latest": "Latest runs only"}
# A quoted phrase, a key=value or key="a value" token, or a word (a query's tokens, in order).
_TOKEN = re.compile(r'"[^"]*"|([A-Za-z_-]+)=(?:"([^"]*)"|(\S+))|\S+')
_YES_NO = {"1": "1", "true": "1", "yes": "1", "0": "0", "false": "0", "no": "0"}
_TOOL = re.compile(r"[\w.:/-]{1,100}")


class TypedFilter(Model):
    """A ``key=value`` token of a query read as a filter: ``param`` (the search's parameter), ``value`` (as the
    parameter takes it), ``text`` (the filter and its value in words) and ``token`` (as typed)."""

    param: str
    value: str
    text: str
    token: str


class TypedQuery(Model):
    """A query with its ``key=value`` filters taken out (:func:`split_filters`): ``q`` the words and phrases
    left, ``filters`` those read as filters, ``refused`` the tokens of a known key whose value is none of its
    values, each with why (they stay words of ``q``)."""

    q: str
    filters: list[TypedFilter] = Field(default_factory=list)
    refused: list[tuple[str, str]] = Field(default_factory=list)


def _typed_value(param: str, value: str, options: dict[str, list[tuple[str, str]]]) -> tuple[str, str] | None:
    """``(value, in words)`` of a typed filter's value when the parameter takes it (a choice of the form matched
    case-insensitively by its value or its name; for ``verdict``, a label or ``<question>:<label>``), else
    None."""
    lowered = value.strip().lower()
    if not lowered:
        return None
    if param in ("agent", "benchmark", "base_model"):
        choices = options.get({"agent": "agents", "benchmark": "benchmarks", "base_model": "base_models"}[param], [])
        for key, name in choices:
            if lowered in ((key or "").lower(), (name or "").lower()):
                return key, name or key
        return None
    if param == "state":
        return next(((k, t) for k, t in STATE_TEXT.items() if lowered in (k, t.lower())), None)
    if param in ("flagged", "latest"):
        said = _YES_NO.get(lowered)
        if said is None or (param == "latest" and said == "0"):
            return None
        return said, {"1": "yes", "0": "no"}[said] if param == "flagged" else "yes"
    if param == "kind":
        return (lowered, lowered) if lowered in STEP_KINDS else None
    if param == "verdict":
        kind, _, label = lowered.rpartition(":")
        if label not in VERDICT_LABELS or (kind and kind not in KIND_TEXT):
            return None
        words = label.replace("_", " ")
        return lowered, f"{KIND_TEXT[kind]}: {words}" if kind else words
    if param == "tool":
        return (value, value) if _TOOL.fullmatch(value) else None
    return None


def split_filters(q: str, options: dict[str, list[tuple[str, str]]]) -> TypedQuery:
    """The ``key=value`` tokens of ``q`` (``key="a value"`` too) whose key is a filter of the search
    (:data:`TYPED_FILTERS`) and whose value is one of its values (``options``: the form's choices,
    ``read_filter_options``; :func:`_typed_value`), taken out as filters; the rest of ``q`` kept as it was typed
    (quoted phrases whole, a ``=`` inside one untouched). A later token of one key wins. A known key with a value
    it does not take stays a word, and is in ``refused`` with why; an unknown key (``lr=1e-5``) is a word."""
    kept: list[str] = []
    filters: dict[str, TypedFilter] = {}
    refused: list[tuple[str, str]] = []
    for m in _TOKEN.finditer((q or "")[:MAX_QUERY]):
        key, quoted, plain = m.group(1), m.group(2), m.group(3)
        param = TYPED_FILTERS.get((key or "").lower())
        if param is None:
            kept.append(m.group(0))
            continue
        value = quoted if quoted is not None else plain or ""
        read = _typed_value(param, value, options)
        if read is None:
            kept.append(m.group(0))
            refused.append((m.group(0), f"not a value of the filter {FILTER_TEXT[param]}: searched as words"))
            continue
        filters[param] = TypedFilter(param=param, value=read[0], text=f"{FILTER_TEXT[param]}: {read[1]}",
                                     token=m.group(0))
    return TypedQuery(q=" ".join(kept) if filters else (q or "")[:MAX_QUERY], filters=list(filters.values()),
                      refused=refused)


class SearchMatch(Model):
    """One matching step: its ``trace`` (``agent`` or ``judge:<id>``), ``index``, kind, tool, ``elapsed_s``
    (seconds since the trace's first timestamp; None without clocks), ``field`` (``input`` or ``output``, where the
    excerpt is from) and ``excerpt`` (at most EXCERPT_CHARS characters of it around the first needle) with
    ``marks``: [start, end) character offsets in ``excerpt`` of every needle's occurrences."""

    trace: str
    index: int
    kind: str
    tool: str | None = None
    elapsed_s: float | None = None
    field: str
    excerpt: str
    marks: list[tuple[int, int]] = Field(default_factory=list)

    @property
    def parts(self) -> list[tuple[str, bool]]:
        """The excerpt cut at its marks: (text, marked) pieces, for the template to escape one by one."""
        out, at = [], 0
        for start, end in self.marks:
            if start > at:
                out.append((self.excerpt[at:start], False))
            out.append((self.excerpt[start:end], True))
            at = end
        if at < len(self.excerpt):
            out.append((self.excerpt[at:], False))
        return out


class SearchRun(Model):
    """A run with matches: the run (as in the runs list), ``count`` of its matching steps (every trace; at most
    RUN_COUNT_CAP, ``capped`` when there are more) and its first SHOWN ``matches`` (agent trace first, then the
    judges' traces, by index)."""

    run: Run
    count: int
    capped: bool
    matches: list[SearchMatch]


class SearchPage(Model):
    """One page of ``/search/``: ``needles`` the words and phrases searched (``needles_cut``: more were given
    than MAX_NEEDLES), ``runs`` the page's runs with matches ordered by run id, ``next`` the ``after`` cursor of
    the next page (a run id; None on the last). ``candidates``: runs the word index names for the query under the
    filters (an upper bound of the runs that match; ``exact`` when it is their number: a query of single words
    without kind or tool filter, every run indexed). ``tested``: runs this page tested. ``total``: the runs that
    match in all when it is known: ``candidates`` when ``exact``, else this page's runs when it is the first and
    the last (every candidate checked: a phrase, a kind or tool filter); None when later pages may add runs.
    ``typed``: the JSON twin's ``key=value`` words of ``q`` read as filters (the page says them in words)."""

    q: str
    needles: list[str]
    needles_cut: bool = False
    runs: list[SearchRun]
    next: str | None
    candidates: int
    exact: bool
    tested: int
    total: int | None = None
    typed: TypedQuery | None = Field(default=None, description="the key=value words of the asked q read as "
                                     "filters (as /search/ reads them, split_filters): q is then the words left; "
                                     "None when q had none")
    options: dict[str, list[tuple[str, str]]] = Field(default_factory=dict, exclude=True)


def _marks(excerpt: str, needles: list[str]) -> list[tuple[int, int]]:
    """[start, end) offsets of every case-insensitive occurrence of the needles in ``excerpt``, overlaps merged."""
    spans = sorted((m.start(), m.end()) for n in needles for m in re.finditer(re.escape(n), excerpt, re.IGNORECASE))
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _run_ok(run: Run, flagged: bool | None, verdict: str | None) -> bool:
    """The run passes the filters that depend on verdicts and overrides (``flagged``; ``verdict``: a label of
    VERDICT_LABELS some question has, or ``<question>:<label>``)."""
    if flagged is not None and run.flagged != flagged:
        return False
    if verdict:
        kind, _, label = verdict.rpartition(":")
        labels = run.verdict_labels
        if kind:
            return labels.get(kind) == label
        if label == "clean":
            return bool(labels) and all(v == "clean" for v in labels.values())
        return label in labels.values()
    return True


def read_search(
    con, q: str, *, after: str | None = None, limit: int = 20, kind: str | None = None, tool: str | None = None,
    flagged: bool | None = None, verdict: str | None = None, **filters,
) -> SearchPage:
    """:func:`search_page` on an open connection."""
    needles, cut = parse_query(q)
    if kind and kind not in STEP_KINDS:
        kind = None
    where, params = run_filter(**filters)
    if not needles:
        return SearchPage(q=q, needles=needles, needles_cut=cut, runs=[], next=None, candidates=0, exact=True,
                          tested=0, total=0)
    plans = [search_index.plan(con, n) for n in needles]
    condition = " AND ".join(where)
    listed = _LISTED.get((condition, repr(params)), lambda: search_across.listed_runs(con, condition, params))
    candidates, exact, words = search_across.candidate_runs(con, plans, listed)
    exact = exact and not (kind or tool) and flagged is None and not verdict
    todo = [c for c in candidates if after is None or c[0] > after]
    found: list[tuple[Run, list[tuple[str, int]]]] = []
    seen: dict[tuple[str, str, int], tuple] = {}  # the excerpt columns of steps the exact test read
    tested, last = 0, after
    while todo and len(found) < limit and tested < MAX_RUNS_TESTED:
        size = min(max(limit, 8), MAX_RUNS_TESTED - tested)
        batch, todo = todo[:size], todo[size:]
        wanted = batch
        runs: dict[str, Run] = {}
        if flagged is not None or verdict:  # filters on verdicts and overrides: the runs first
            runs = {r.id: r for r in read_runs(con, "r.id IN (SELECT unnest(?::VARCHAR[]))", [[c[0] for c in batch]])}
            wanted = [(rid, ok) for rid, ok in batch if rid in runs and _run_ok(runs[rid], flagged, verdict)]
        hits = _matches(con, wanted, plans, needles, kind=kind, tool=tool, cap=RUN_COUNT_CAP, words=words,
                        seen=seen)
        missing = [rid for rid, steps in hits.items() if steps and rid not in runs]
        if missing:
            runs.update({r.id: r for r in read_runs(con, "r.id IN (SELECT unnest(?::VARCHAR[]))", [missing])})
        for rid, _ in batch:
            tested, last = tested + 1, rid
            if hits.get(rid) and rid in runs:
                found.append((runs[rid], hits[rid]))
            if len(found) == limit:
                break  # the batch's later runs are tested again by the next page (a keyset on the run id)
    excerpts = _excerpts(con, {run.id: steps[:SHOWN] for run, steps in found}, needles, seen)
    results = [SearchRun(run=run, count=min(len(steps), RUN_COUNT_CAP), capped=len(steps) > RUN_COUNT_CAP,
                         matches=excerpts.get(run.id, [])) for run, steps in found]
    more = last is not None and any(rid > last for rid, _ in candidates)
    total = len(candidates) if exact else len(results) if after is None and not more else None
    return SearchPage(q=q, needles=needles, needles_cut=cut, runs=results, next=last if more else None,
                      candidates=len(candidates), exact=exact, tested=tested, total=total)


def _order(key: tuple[str, int]) -> tuple[bool, str, int]:
    """Steps of a run in the order a result lists them: the agent trace first, then the judges', by index."""
    return key[0] != "agent", key[0], key[1]


def _holds_sql(needles: list[str]) -> tuple[str, list]:
    """The exact test of a step's stored texts (every needle in its input or its output, DuckDB's ``lower()``),
    and its parameters."""
    one = "(contains(lower(output), lower(?)) OR contains(lower(coalesce(input, '')), lower(?)))"
    return " AND ".join([one] * len(needles)), [n for n in needles for _ in (0, 1)]


def _whole_holds(con, run_id: str, trace: str, idx: int, cut_in: bool, cut_out: bool, needles: list[str]) -> bool:
    """The exact test on the whole texts of a step whose input or output was cut at ingest (``step_texts``)."""
    texts = {}
    for field, cut in (("input", cut_in), ("output", cut_out)):
        if cut:
            texts[field] = search_index.whole_field(con, run_id, trace, idx, field)
    stored = con.execute("SELECT coalesce(input, ''), output FROM steps WHERE run_id = ? AND trace = ? AND idx = ?",
                         [run_id, trace, idx]).fetchone()
    if stored is None:
        return False
    both = [texts.get("input", stored[0]), texts.get("output", stored[1])]
    return all(con.execute("SELECT contains(lower(?), lower(?)) OR contains(lower(?), lower(?))",
                           [both[0], n, both[1], n]).fetchone()[0] for n in needles)


_CUT_FIELDS = "input_bytes > strlen(input), output_bytes > strlen(output)"


def _read_steps(con, keys: list[tuple[str, str, int]], columns: str, params: list) -> dict[tuple[str, str, int], tuple]:
    """``{(run, trace, index): (columns...)}`` of the steps ``keys``: ``columns`` (SQL on ``steps``, with its
    ``params``) of each. Their row ids first, from the keys of the runs' steps (no text read), then those rows by
    row id, so that only their texts are read: one statement joining ``steps`` to the keys read the texts of
    every step of the runs (the join comes after the scan): 35 against 14 ms of CPU for a phrase's 46 candidates
    on 20 runs of the K=90 tree. Row ids hold within the caller's snapshot (``search_page``); a row whose key
    is not the one asked for is left out all the same."""
    if not keys:
        return {}
    rowids = [r[0] for r in con.execute(
        "SELECT rowid FROM steps WHERE run_id IN (SELECT unnest(?::VARCHAR[])) AND (run_id, trace, idx) IN "
        "(SELECT unnest(?::VARCHAR[]), unnest(?::VARCHAR[]), unnest(?::INTEGER[]))",
        [sorted({k[0] for k in keys}), [k[0] for k in keys], [k[1] for k in keys], [k[2] for k in keys]]).fetchall()]
    wanted = set(keys)
    return {(r[0], r[1], r[2]): tuple(r[3:]) for r in con.execute(
        f"SELECT run_id, trace, idx, {columns} FROM steps WHERE rowid IN (SELECT unnest(?::BIGINT[]))",
        [*params, rowids]).fetchall() if (r[0], r[1], r[2]) in wanted}


def _matches(con, runs: list[tuple[str, bool]], plans: list, needles: list[str], *, kind: str | None,
             tool: str | None, cap: int, words: list | None = None,
             seen: dict[tuple[str, str, int], tuple] | None = None) -> dict[str, list[tuple[str, int]]]:
    """Per run, its first ``cap + 1`` matching steps (trace, index) in :func:`_order`: indexed runs from the word
    index (``search_across.lookup_many``, with the query's ``words`` when the caller has them; unsure candidates
    tested in order, TEST_CHUNK a statement, until ``cap + 1`` are known), the others scanned. Only steps of
    ``kind`` and ``tool`` when given. The statements that test steps read their excerpt columns too
    (:data:`_EXCERPT_COLUMNS`), kept in ``seen`` by (run, trace, index) for :func:`_excerpts`."""
    holds, holds_params = _holds_sql(needles)
    out: dict[str, list[tuple[str, int]]] = {}
    has_terms = any(p.terms for p in plans)
    indexed = [rid for rid, ok in runs if ok and has_terms]
    looked = search_across.lookup_many(con, indexed, plans, words) if indexed else {}
    allowed: dict[str, set[tuple[str, int]]] | None = None
    if (kind or tool) and indexed:
        filt = " AND ".join(c for c, v in (("kind = ?", kind), ("tool = ?", tool)) if v)
        allowed = {rid: set() for rid in indexed}
        for rid, trace, idx in con.execute(
                f"SELECT run_id, trace, idx FROM steps WHERE run_id IN (SELECT unnest(?::VARCHAR[])) AND {filt}",
                [indexed, *[v for v in (kind, tool) if v]]).fetchall():
            allowed[rid].add((trace, idx))
    # Each run's candidates in result order, tested a chunk at a time: one statement per round for every run that
    # still needs more (most pages need one round).
    state: dict[str, tuple[list[tuple[str, int]], set, set]] = {}
    for rid in indexed:
        certain, unsure = looked[rid]
        if allowed is not None:
            certain, unsure = certain & allowed[rid], unsure & allowed[rid]
        state[rid] = (sorted(certain | unsure, key=_order), certain, unsure)
    at = dict.fromkeys(indexed, 0)
    hits: dict[str, list[tuple[str, int]]] = {rid: [] for rid in indexed}
    while True:
        chunks: dict[str, list[tuple[str, int]]] = {}
        tests: list[tuple[str, str, int]] = []
        for rid in indexed:
            ordered, _, unsure = state[rid]
            if at[rid] >= len(ordered) or len(hits[rid]) > cap:
                continue
            chunk, tested = [], 0
            while at[rid] < len(ordered) and tested < TEST_CHUNK:
                key = ordered[at[rid]]
                chunk.append(key)
                if key in unsure:
                    tests.append((rid, *key))
                    tested += 1
                at[rid] += 1
            chunks[rid] = chunk
        if not chunks:
            break
        good: set[tuple[str, str, int]] = set()
        if tests:
            for (rid, trace, idx), (ok, cut_in, cut_out, *excerpt) in _read_steps(
                    con, tests, f"{holds}, {_CUT_FIELDS}, {_EXCERPT_COLUMNS}",
                    [*holds_params, *[needles[0]] * 4]).items():
                if ok or ((cut_in or cut_out) and _whole_holds(con, rid, trace, idx, cut_in, cut_out, needles)):
                    good.add((rid, trace, idx))
                    if seen is not None:
                        seen[(rid, trace, idx)] = tuple(excerpt)
        for rid, chunk in chunks.items():
            certain = state[rid][1]
            hits[rid] += [k for k in chunk if k in certain or (rid, *k) in good]
    for rid in indexed:
        out[rid] = hits[rid][:cap + 1]
    for rid, ok in runs:
        if ok and has_terms:
            continue
        filt = "".join(f" AND {c}" for c, v in (("kind = ?", kind), ("tool = ?", tool)) if v)
        filt_params = [v for v in (kind, tool) if v]
        found = {(t, i) for t, i in con.execute(
            f"SELECT trace, idx FROM steps WHERE run_id = ?{filt} AND {holds} "
            "ORDER BY trace <> 'agent', trace, idx LIMIT ?", [rid, *filt_params, *holds_params, cap + 1]).fetchall()}
        for trace, idx, cut_in, cut_out in con.execute(
                f"SELECT trace, idx, {_CUT_FIELDS} FROM steps WHERE run_id = ?{filt} AND "
                "(input_bytes > strlen(input) OR output_bytes > strlen(output))", [rid, *filt_params]).fetchall():
            if (trace, idx) not in found and _whole_holds(con, rid, trace, idx, cut_in, cut_out, needles):
                found.add((trace, idx))
        out[rid] = sorted(found, key=_order)[:cap + 1]
    return out


# A step's kind, tool, elapsed_s and the windows of its output and input around the first needle (four times the
# needle as parameters): what an excerpt needs (_excerpts).
_EXCERPT_COLUMNS = (
    "kind, tool, elapsed_s, "
    f"strpos(lower(output), lower(?)) AS op, substring(output, greatest(1, strpos(lower(output), lower(?)) - "
    f"{EXCERPT_BEFORE}), {EXCERPT_CHARS}) AS ow, "
    "strpos(lower(coalesce(input, '')), lower(?)) AS ip, substring(coalesce(input, ''), greatest(1, "
    f"strpos(lower(coalesce(input, '')), lower(?)) - {EXCERPT_BEFORE}), {EXCERPT_CHARS}) AS iw")


def _excerpts(con, steps: dict[str, list[tuple[str, int]]], needles: list[str],
              seen: dict[tuple[str, str, int], tuple] | None = None) -> dict[str, list[SearchMatch]]:
    """Per run, the SearchMatch of each of its (trace, index): an excerpt of the field holding the first needle
    (its stored text; the whole text when the needle is only past the stored cut), every run in one statement;
    the steps in ``seen`` (their :data:`_EXCERPT_COLUMNS`, read by the exact test) are not read again."""
    first = needles[0]
    known = seen or {}
    keys = [(rid, t, i) for rid, pairs in steps.items() for t, i in pairs]
    if not keys:
        return {}
    todo = [k for k in keys if k not in known]
    by_key = {**known, **_read_steps(con, todo, _EXCERPT_COLUMNS, [first] * 4)}
    out: dict[str, list[SearchMatch]] = {rid: [] for rid in steps}
    for run_id, trace, index in keys:
        row = by_key.get((run_id, trace, index))
        if row is None:
            continue
        kind, tool, elapsed, op, ow, ip, iw = row
        if op:
            field, text = "output", ow
        elif ip:
            field, text = "input", iw
        else:  # past the stored cut: the whole text's window
            field, text = "output", ""
            for name in ("output", "input"):
                whole = search_index.whole_field(con, run_id, trace, index, name)
                found = whole.lower().find(first.lower())
                if found >= 0:
                    start = max(0, found - EXCERPT_BEFORE)
                    field, text = name, whole[start:start + EXCERPT_CHARS]
                    break
        out[run_id].append(SearchMatch(trace=trace, index=index, kind=kind, tool=tool, elapsed_s=elapsed,
                                       field=field, excerpt=text, marks=_marks(text, needles)))
    return out


# The form's filter choices depend on the warehouse only: read once per warehouse version (a scan of every run).
_OPTIONS: warehouse.memo.PerVersion[dict[str, list[tuple[str, str]]]] = warehouse.memo.PerVersion(maxsize=2)
# The runs a search's filters allow, with whether their word index is current (search_across.listed_runs): they
# depend on the warehouse only, read once per warehouse version and filters (a scan of every run and its JSON
# rules_version: 3-5 ms of CPU a search on the K=90 tree).
_LISTED: warehouse.memo.PerVersion[list[tuple[str, bool]]] = warehouse.memo.PerVersion(maxsize=16)


@warehouse.retrying
def search_page(q: str, *, with_options: bool = False, **options) -> SearchPage:
    """The runs whose steps hold every word and phrase of ``q`` (module docstring), one page of ``limit`` runs
    after the run id ``after``, under the runs list's filters (``agent``, ``benchmark``, ``base_model``,
    ``state``, ``suite``, ``latest_only``, ``facet``, ``flagged``, ``verdict``) and the steps' ``kind`` and
    ``tool``; ``with_options``: with the filter choices of the runs list (the page's form; once per warehouse
    version, ``warehouse.memo``: callers must not change them). One unit of work."""
    with warehouse.snapshot() as con:  # one snapshot: the row ids of its steps hold between statements
        page = read_search(con, q, **options)
        if with_options:
            page.options = _OPTIONS.get("options", lambda: read_filter_options(con))
        return page


@warehouse.retrying
def filter_options() -> dict[str, list[tuple[str, str]]]:
    """The search form's filter choices (``{"agents"|"benchmarks"|"base_models": [(value, name)]}``, the runs
    list's: ``read_filter_options``), read once per warehouse version (callers must not change them)."""
    with warehouse.snapshot() as con:
        return _OPTIONS.get("options", lambda: read_filter_options(con))
