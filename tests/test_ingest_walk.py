"""A walk of one run's ingest visits each module once (issue 28): control flows one way, tree walker -> reader ->
parser generator -> writer, and never comes back into a module it has left for another that it called.

The measure (:func:`walk`). The ingest of a results tree holding one run (``ingest_tree(workers=1)``, so every
step of it happens in this process) runs under ``sys.setprofile``. Its profile function sees every Python call,
and every resumption of a generator, as a ``call`` event. The *modules* are the project's apps, ``ingest.*`` and
``traces.*`` (a frame's module is its ``__name__``); the shared library (``ptbsite``, the warehouse's unit of
work among it), Django, duckdb and the standard library are not counted and are looked through. At each call that
enters an app module from a frame of another app module (the nearest app frame below it), the app modules on the
stack below are listed. A **return to a module already left** is such a call whose module is already on that
stack below a frame of another app module: module A called (or resumed a generator of) B, and B, or something B
called, came back into A. That is a callback: a closure, a bound method or a generator of A handed down to B and
called there. Pulling from a generator that a module deeper down owns is not one (a suspended generator is not on
the stack), nor is calling a module twice from the same place (a walk down, twice).

The figure is the number of distinct returns, ``(module returned to, module it was called from)`` (the issue's
count, taken another way, was 16). Before this test (main at 4feaceb): 7 for a Claude Code run (1,583 such calls:
the writer calling the reader's step sink, the parsers' line generator and sink called from the builder, the reader's
block generator from the parsers and the redaction, the tree's read closure and outcome callbacks from the writer,
the reader's redact closure from ``traces.verdicts``, the facets' rule test from ``traces.vocabulary``), 5 to 6 for
the other formats; after: 0 for every format. Counting ``ptbsite`` too, 4 remain, all the warehouse's retried unit
of work, which takes a function by design (the last test pins them).
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from ingest.tree import ingest_tree

APPS = ("ingest", "traces")


def _app(frame: FrameType | None) -> str | None:
    """The app module of ``frame`` (``ingest.reader``, ``traces.services``, ...), else None."""
    if frame is None:
        return None
    name = frame.f_globals.get("__name__") or ""
    return name if name.split(".")[0] in APPS else None


def walk(work: Any) -> tuple[Any, dict[tuple[str, str], int], list[str]]:
    """Run ``work()`` under the profile function the module docstring describes; returns ``(its result,
    {(module returned to, module it was called from): times}, the app modules entered in order of first entry)``."""
    returns: dict[tuple[str, str], int] = {}
    entered: list[str] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        module = _app(frame)
        if module is None:
            return
        if module not in entered:
            entered.append(module)
        below = frame.f_back
        while below is not None and _app(below) is None:
            below = below.f_back
        caller = _app(below)
        if caller is None or caller == module:
            return
        seen = below
        while seen is not None:
            if _app(seen) == module:
                returns[(module, caller)] = returns.get((module, caller), 0) + 1
                return
            seen = seen.f_back

    sys.setprofile(profile)
    try:
        result = work()
    finally:
        sys.setprofile(None)
    return result, returns, entered


def _formats(demo_tree) -> dict[str, Path]:
    """One run directory of the demo tree per trace format, the first in tree order that has steps."""
    found: dict[str, Path] = {}
    for run in demo_tree.runs:
        if run.steps_planned and run.trace_format not in found:
            found[run.trace_format] = demo_tree.root / run.run_dir
    return found


@pytest.mark.parametrize("fmt", ["claude_code", "codex_exec", "codex_protocol", "codex_text", "gemini", "opencode"])
def test_one_runs_ingest_never_returns_to_a_module_it_left(fmt, demo_tree, fresh_warehouse, tmp_path):
    run_dir = _formats(demo_tree).get(fmt)
    assert run_dir is not None, f"the demo tree has no {fmt} run"
    root = tmp_path / "results"
    shutil.copytree(run_dir, root / run_dir.parent.name / run_dir.name)
    report, returns, entered = walk(lambda: ingest_tree(root=root, workers=1))
    assert (report.stored, report.failed) == (1, 0), report.problems
    assert report.steps > 10
    # the walk went down every stage: the walker, the reader, the parser of the format, the writer
    assert {"ingest.tree", "ingest.reader", f"ingest.parsers.{fmt}", "traces.services"} <= set(entered)
    assert returns == {}, sorted(returns.items())


def test_the_measure_sees_a_callback(monkeypatch):
    """The measure can fail: a module that hands a function of its own to another app module, which calls it, is
    counted. Here this test module (counted as an app for the check) hands ``readable`` to
    ``traces.verdicts.read_verdicts``, which calls it for every entry of the folder it reads."""
    from traces import verdicts

    monkeypatch.setattr(sys.modules[__name__], "APPS", (*APPS, "tests"))
    _, returns, entered = walk(lambda: verdicts.read_verdicts(Path(__file__).parent, readable=lambda path: False))
    assert entered[:2] == ["tests.test_ingest_walk", "traces.verdicts"]
    assert returns == {("tests.test_ingest_walk", "traces.verdicts"): len(list(Path(__file__).parent.iterdir()))}


def test_with_the_library_counted_only_its_unit_of_work_calls_back(demo_tree, fresh_warehouse, tmp_path,
                                                                     monkeypatch):
    """With ``ptbsite`` counted as well, the only returns are the warehouse's retried unit of work, which takes a
    function by design (``run_in_transaction(work)``, ``@retrying``): nothing else of the library calls back."""
    monkeypatch.setattr(sys.modules[__name__], "APPS", (*APPS, "ptbsite"))
    run_dir = _formats(demo_tree)["claude_code"]
    root = tmp_path / "results"
    shutil.copytree(run_dir, root / run_dir.parent.name / run_dir.name)
    report, returns, _ = walk(lambda: ingest_tree(root=root, workers=1))
    assert (report.stored, report.failed) == (1, 0)
    assert set(returns) == {("ingest.tree", "ptbsite.warehouse.retry"),  # @warehouse.retrying _stored
                            ("traces.services", "ptbsite.warehouse.transactions"),  # run_in_transaction(unit)
                            ("ptbsite.warehouse.retry", "ptbsite.warehouse.transactions"),
                            ("ptbsite.warehouse.transactions", "ptbsite.warehouse.retry")}
