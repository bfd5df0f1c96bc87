"""Re-deriving a run's facets, phases and evidence marks from its stored steps, without reading its files again.

A rule change (``ingest/facets.py``, ``ingest/evidence.py``, ``ingest/rules.py``) changes what the rules find in
traces already stored. Each run records the version of each rule family it was derived with (``runs.
rules_version``, JSON ``{"evidence": ..., "facets": ...}``, :func:`current_versions`); :func:`reindex` re-derives
the runs whose stored version of a family differs from the code's, from the agent trace's steps as stored
(the whole text of a field cut at ``traces.vocabulary.STEP_TEXT_CAP`` is read back from ``step_texts``), so the
result is what a fresh ingest of the same files stores. Each run is one transaction.

Families: ``facets`` (the facets and phases tables), ``evidence`` (the steps' ``suspicious`` column), ``search``
(the word index ``step_words`` of every trace of the run, ``traces.search_index``, whose version is that module's;
a run without it, such as one stored before migration 0017, is searched by a scan; and at the end, ``step_words``
sorted by word when some of its rows are not, such as every row of a warehouse migrated to 0020:
``traces.search_across.sort_step_words``). The evidence rules also read
the suite's dataset names and instruct models; an edited suite file is not a version change: run
``reindex --all``.
"""
from __future__ import annotations

import json
import logging
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache

import pyarrow as pa

from ptbsite import warehouse
from ptbsite.suites import load_suite
from traces import search_across, search_index, vocabulary
from traces.records import FacetRow, PhaseRow
from traces.services import insert_records, refresh_latest_runs
from traces.vocabulary import STEP_TEXT_CAP
from traces.steps import Step

from . import evidence, facets, rules
from .parsers import storable

log = logging.getLogger(__name__)

FAMILIES = ("facets", "evidence", "search")


@cache
def _code_versions() -> tuple[tuple[str, str], ...]:
    return (("evidence", vocabulary.code_version(evidence, rules, facets, vocabulary)),
            ("facets", vocabulary.code_version(facets, rules, evidence, vocabulary)),
            ("search", search_index.version()))


def current_versions() -> dict[str, str]:
    """``{"evidence": version, "facets": version, "search": version}`` of the rules in the code
    (``traces.vocabulary.code_version``): facets read the call rules of ``ingest.evidence`` too (one RE2 Set holds
    both), so both versions cover the three rule modules, each starting from its own, and the shared vocabulary
    (the phase rules, the JSON reading of a tool input); ``search`` is
    ``traces.search_index.version()``."""
    return dict(_code_versions())


def versions_json(versions: dict[str, str] | None = None) -> str:
    """The ``runs.rules_version`` text of ``versions`` (default: :func:`current_versions`), keys sorted."""
    return json.dumps(versions or current_versions(), sort_keys=True)


def stale_families(stored: str | None, wanted: Iterable[str], current: dict[str, str]) -> list[str]:
    """The families of ``wanted`` whose stored version (``runs.rules_version`` text; None or unreadable: every
    family) differs from ``current``, in :data:`FAMILIES` order."""
    try:
        versions = json.loads(stored) if stored else {}
    except ValueError:
        versions = {}
    versions = versions if isinstance(versions, dict) else {}
    return [f for f in FAMILIES if f in wanted and versions.get(f) != current[f]]


@dataclass
class ReindexReport:
    """What one :func:`reindex` did: runs re-derived, runs already up to date, runs that failed (with a problem
    each), and the facet rows and marked steps now stored for the re-derived runs."""

    reindexed: int = 0
    up_to_date: int = 0
    failed: int = 0
    facets: int = 0
    marked_steps: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return (f"{self.reindexed} runs re-derived, {self.up_to_date} up to date, {self.failed} failed, "
                f"{self.facets} facets, {self.marked_steps} marked steps, {self.seconds:.1f} s")


def _whole(con, run_id: str, idx: int, name: str) -> str:
    """The whole text of one cut field of an agent step, from its zlib chunks in ``step_texts``."""
    chunks = con.execute("SELECT data FROM step_texts WHERE run_id = ? AND trace = 'agent' AND idx = ? AND field = ? "
                         "ORDER BY chunk", [run_id, idx, name]).fetchall()
    return b"".join(zlib.decompress(c[0]) for c in chunks).decode("utf-8")


def stored_steps(con, run_id: str) -> list[Step]:
    """The run's agent-trace steps as the rules read them: index, kind, time (naive UTC), tool, call id, and the
    whole input of tool calls and output of tool results (other kinds' texts are not read by any rule)."""
    rows = con.execute(
        "SELECT idx, kind, time, tool, CASE WHEN kind = 'tool_call' THEN input END, "
        "CASE WHEN kind = 'tool_result' THEN output END, call_id, input_bytes, output_bytes "
        "FROM steps WHERE run_id = ? AND trace = 'agent' ORDER BY idx", [run_id]).fetchall()
    steps = []
    for idx, kind, moment, tool, text_in, text_out, call_id, in_bytes, out_bytes in rows:
        if kind == "tool_call" and in_bytes is not None and in_bytes > STEP_TEXT_CAP:
            text_in = _whole(con, run_id, idx, "input")
        if kind == "tool_result" and out_bytes is not None and out_bytes > STEP_TEXT_CAP:
            text_out = _whole(con, run_id, idx, "output")
        steps.append(Step(index=idx, kind=kind, time=moment, tool=tool, input=text_in, output=text_out or "",
                          call_id=call_id))
    return steps


def derive(steps: list[Step], context: evidence.EvidenceContext, run_id: str) -> Derived:
    """The facets, phases and evidence marks of one agent trace, as the ingest derives them
    (``ingest.reader``): calls classified once and shared, rows made storable."""
    calls = facets.tool_calls(steps)
    marks = {i: ",".join(ids) for i, ids in evidence.call_marks(calls, context).items()}
    facet_rows = [FacetRow(run_id=run_id, facet=storable(f.facet)[0], value=storable(f.value)[0],
                           value_num=f.value_num, steps=",".join(map(str, f.steps)))
                  for f in facets.extract(steps, calls=calls)]
    phase_rows = [PhaseRow(run_id=run_id, phase=storable(p.phase)[0], start_s=p.start_s, end_s=p.end_s,
                           step_from=p.step_from, step_to=p.step_to) for p in facets.phases(steps, calls=calls)]
    return Derived(facet_rows, phase_rows, marks)


@dataclass
class Derived:
    """What :func:`derive` finds: facet and phase rows, and the evidence marks (step index -> "rule,ids")."""

    facets: list[FacetRow] = field(default_factory=list)
    phases: list[PhaseRow] = field(default_factory=list)
    marks: dict[int, str] = field(default_factory=dict)


def _reindex_run(run_id: str, families: list[str], context: evidence.EvidenceContext,
                 current: dict[str, str]) -> Derived:
    """Re-derive ``families`` of one run in one transaction; returns what :func:`derive` found."""

    def write(con) -> Derived:
        stored = con.execute("SELECT rules_version FROM runs WHERE id = ?", [run_id]).fetchone()
        rules_families = [f for f in families if f != "search"]
        found = derive(stored_steps(con, run_id), context, run_id) if rules_families else Derived()
        if "search" in families:
            search_index.reindex_run(con, run_id)
        if "facets" in families:
            con.execute("DELETE FROM facets WHERE run_id = ?", [run_id])
            con.execute("DELETE FROM phases WHERE run_id = ?", [run_id])
            insert_records(con, FacetRow, found.facets)
            insert_records(con, PhaseRow, found.phases)
            refresh_latest_runs(con, run_ids=[run_id])  # the analysis reads them there
        if "evidence" in families:
            # Judge traces are never marked (the ingest marks the agent's calls only).
            con.execute("UPDATE steps SET suspicious = NULL WHERE run_id = ? AND suspicious IS NOT NULL", [run_id])
            if found.marks:
                marks = pa.table({"idx": pa.array(list(found.marks), type=pa.int32()),
                                  "suspicious": pa.array(list(found.marks.values()), type=pa.string())})
                con.register("reindex_marks", marks)
                try:
                    con.execute("UPDATE steps SET suspicious = m.suspicious FROM reindex_marks m WHERE "
                                "steps.run_id = ? AND steps.trace = 'agent' AND steps.idx = m.idx", [run_id])
                finally:
                    con.unregister("reindex_marks")
        try:
            versions = json.loads(stored[0]) if stored and stored[0] else {}
        except ValueError:
            versions = {}
        versions = versions if isinstance(versions, dict) else {}
        versions.update({f: current[f] for f in families})
        con.execute("UPDATE runs SET rules_version = ? WHERE id = ?", [versions_json(versions), run_id])
        return found

    return warehouse.run_in_transaction(write)


@warehouse.retrying
def _runs(run_ids: list[str] | None) -> list[tuple[str, str, str, str | None]]:
    with warehouse.connect() as con:
        sql = "SELECT id, suite, benchmark, rules_version FROM runs"
        if run_ids is not None:
            return con.execute(sql + " WHERE list_contains(?, id) ORDER BY id", [run_ids]).fetchall()
        return con.execute(sql + " ORDER BY id").fetchall()


def reindex(*, families: Iterable[str] = FAMILIES, force: bool = False, run_ids: list[str] | None = None,
            progress: Callable[[str], None] | None = None) -> ReindexReport:
    """Re-derive the ``families`` (of :data:`FAMILIES`) of every stored run whose stored version differs from
    the code's (``force``: every run), or of the runs ``run_ids`` only; returns what was done.

    Each run is one transaction (its facets and phases replaced, its agent steps' marks rewritten, its
    ``rules_version`` updated for the re-derived families); a run that fails is reported and the others go on.

    Raises:
        ValueError: a family not in :data:`FAMILIES`. warehouse.WarehouseUnavailable: the run list could not
        be read.
    """
    started = time.monotonic()
    wanted = list(families)
    unknown = [f for f in wanted if f not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown rule families {', '.join(unknown)}: use {', '.join(FAMILIES)}")
    current = current_versions()
    report = ReindexReport()
    contexts: dict[str, dict[str, evidence.EvidenceContext]] = {}
    with warehouse.hold_open():
        for run_id, suite_id, benchmark, stored in _runs(run_ids):
            todo = [f for f in FAMILIES if f in wanted] if force else stale_families(stored, wanted, current)
            if not todo:
                report.up_to_date += 1
                continue
            try:
                if suite_id not in contexts:
                    contexts[suite_id] = suite_contexts(suite_id)
                found = _reindex_run(run_id, todo, contexts[suite_id][benchmark], current)
            except Exception as exc:  # noqa: BLE001 - one broken run must not stop the others
                report.failed += 1
                report.problems.append(f"run {run_id}: not re-derived: {type(exc).__name__}: {exc}")
                log.exception("reindex of %s failed", run_id)
                continue
            report.reindexed += 1
            report.facets += len(found.facets) if "facets" in todo else 0
            report.marked_steps += len(found.marks) if "evidence" in todo else 0
            if progress:
                done = ([f"{len(found.facets)} facets"] if "facets" in todo else []) + \
                    ([f"{len(found.marks)} marked steps"] if "evidence" in todo else []) + \
                    (["word index rebuilt"] if "search" in todo else [])
                progress(f"{run_id}: {', '.join(todo)}: {', '.join(done)}")
        # Each run re-indexed added rows of its own words to both indexes, unsorted; and a warehouse migrated to
        # 0020 has step_words unsorted: the search family's reindex sorts it.
        if report.reindexed or ("search" in wanted and _unsorted()):
            warehouse.run_in_transaction(_merge_and_sort)
    report.seconds = time.monotonic() - started
    return report


@warehouse.retrying
def _unsorted() -> bool:
    """Whether some rows of ``step_words`` are not sorted (``search_across.sort_step_words``)."""
    with warehouse.connect() as con:
        row = con.execute("SELECT (SELECT count(*) FROM step_words) <> (SELECT coalesce(max(sorted_rows), 0) "
                          "FROM step_words_sorted)").fetchone()
        return bool(row and row[0])


def _merge_and_sort(con) -> None:
    """The end of a reindex: ``word_runs`` merged once its rows spread too far (``search_index.merge_word_runs``)
    and ``step_words`` sorted by word whenever a row is not (``search_across.sort_step_words``)."""
    search_index.merge_word_runs(con)
    search_across.sort_step_words(con, spread=1.0, min_rows=0)


def suite_contexts(suite_id: str) -> dict[str, evidence.EvidenceContext]:
    """``{benchmark id: EvidenceContext}`` of a suite: each benchmark's dataset names and the suite's instruct
    model ids (what the evidence rules read besides the trace). Raises what ``load_suite`` raises."""
    suite = load_suite(suite_id)
    instruct = tuple(m["instruct_hf_id"] for m in suite["base_models"])
    return {b["id"]: evidence.EvidenceContext(tuple(b.get("datasets", [])), instruct) for b in suite["benchmarks"]}
