"""A trace read as a stream (ingest.reader, ingest.parsers.stream_trace) stores the same rows whatever the
read block, step window and write batch: every table, row for row, for every scaffold format and state of the demo
tree and for the planted-secrets run (redaction, residual warnings, cut texts), read by worker processes with the
default sizes (the rows held and sent back to be stored in batches) and then in the storing process with a tiny read
block, step window and write batch (the rows handed to its StepWriter), so that every boundary is crossed many
times."""
from __future__ import annotations

from pathlib import Path

import pytest

from ptbsite import warehouse
from traces import services
from ingest import reader
from ingest.tree import ingest_tree
from ingest.parsers import _builder
from ingest.redaction import Redactor

VOLATILE = {"runs": {"ingested_at"}, "methods": {"ingested_at"}}
TABLES = ("methods", "runs", "steps", "step_texts", "step_words", "verdicts", "evaluations", "facets", "phases",
          "monitor")


def _dump() -> dict[str, list[tuple]]:
    out = {}
    with warehouse.connect() as con:
        for table in TABLES:
            columns = [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall() if r[0] not in VOLATILE.get(table, ())]
            out[table] = con.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY ALL").fetchall()
        # The word index has a row per word per batch written: compared as each word's steps.
        out["step_words"] = con.execute(
            "SELECT run_id, trace, word, list_sort(flatten(list(steps))) FROM step_words GROUP BY ALL "
            "ORDER BY ALL").fetchall()
    return out


def _ingest(root: Path, path: Path, settings, **kwargs):
    settings.PTB_WAREHOUSE = str(path)
    warehouse.reset_migration_cache()
    report = ingest_tree(root=root, **{"workers": 1, **kwargs})
    return report, _dump()


@pytest.fixture
def tiny_stream(monkeypatch):
    def force():
        monkeypatch.setattr(reader, "READ_BLOCK", 3001)
        monkeypatch.setattr(_builder, "STREAM_WINDOW", 2)
        monkeypatch.setattr(services, "STEP_BATCH_ROWS", 7)
    return force  # first: the default sizes


def _same(whole, streamed):
    (whole_report, whole_rows), (stream_report, stream_rows) = whole, streamed
    assert (stream_report.stored, stream_report.failed, stream_report.steps, stream_report.problems) == \
        (whole_report.stored, whole_report.failed, whole_report.steps, whole_report.problems)
    for table in TABLES:
        assert stream_rows[table] == whole_rows[table], table


def test_the_demo_tree_streamed_is_stored_as_read_whole(demo_tree, tmp_path, settings, tiny_stream):
    whole = _ingest(demo_tree.root, tmp_path / "whole.duckdb", settings, workers=2)  # rows held, sent back
    assert whole[0].stored > 12 and len(whole[1]["steps"]) > 1000
    tiny_stream()
    _same(whole, _ingest(demo_tree.root, tmp_path / "stream.duckdb", settings))


def test_the_planted_secrets_streamed_are_redacted_as_read_whole(tmp_path, settings, tiny_stream):
    from tests.test_planted_secrets import KNOWN, _write_tree

    root = tmp_path / "results"
    _write_tree(root)
    redactor = Redactor({"SOME_API_KEY": KNOWN})
    whole = _ingest(root, tmp_path / "whole.duckdb", settings, redactor=redactor, workers=2)
    assert whole[1]["step_texts"] and whole[1]["runs"][0]
    tiny_stream()
    _same(whole, _ingest(root, tmp_path / "stream.duckdb", settings, redactor=redactor))


def test_the_stream_is_taken(demo_tree, tmp_path, settings, tiny_stream, monkeypatch):
    """The comparisons above compare two sizings: the forced settings do hand every agent trace to the writer in
    tiny batches."""
    tiny_stream()
    streamed, batches = [], []
    real_stream, real_flush = reader.Ingester._read_trace, services.StepWriter.flush
    monkeypatch.setattr(reader.Ingester, "_read_trace", lambda self, rid, trace, path, *a, **k: (
        trace == "agent" and streamed.append(path)) or real_stream(self, rid, trace, path, *a, **k))
    monkeypatch.setattr(services.StepWriter, "flush", lambda self: batches.append(len(self.steps)) or real_flush(self))
    report, rows = _ingest(demo_tree.root, tmp_path / "stream.duckdb", settings)
    agent_traces = {p for p in demo_tree.root.glob("*/*/*") if p.name in reader.TRACE_NAMES}
    assert set(streamed) >= agent_traces and len(agent_traces) >= 12
    assert max(batches) == 7 and sum(batches) == sum(1 for r in rows["steps"] if r[1] == "agent")
