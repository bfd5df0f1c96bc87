"""The ingest reads only regular files inside the results root (issue 25; ``ingest.files``).

Each test builds its results tree: a good run beside the hostile entry (a symbolic link out of the root, a FIFO,
a socket, a device, a file over the size limit, a run that never finishes), ingests it into a fresh DuckDB file
and checks that the hostile entry is refused with a problem naming its path, that nothing of what it points to
is stored, and that the good run is stored all the same.
"""
from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path

import duckdb
import pytest

from traces import layout
from ingest import reader
from ingest.tree import ingest_tree

METHOD = "claude_claude-opus-4-6_10h_run1"
GOOD = "gsm8k_Qwen_Qwen3-1.7B-Base_25100001"
BAD = "gsm8k_Qwen_Qwen3-1.7B-Base_25100002"
OUTSIDE_TEXT = "OUTSIDE-THE-ROOT-7c1d: root:x:0:0:root:/root:/bin/bash"


def _trace(word: str) -> str:
    lines = ['{"type":"system","subtype":"init","model":"claude-opus-4-6","session_id":"s"}',
             json.dumps({"type": "assistant", "message": {"id": "m1", "content": [{"type": "text", "text": word}]}}),
             '{"type":"result","subtype":"success","is_error":false,"result":"done","total_cost_usd":1.0}']
    return "\n".join(lines) + "\n"


def _run(path: Path, word: str = "training the model", accuracy: float = 0.4) -> Path:
    path.mkdir(parents=True)
    (path / "solve_out.txt").write_text(_trace(word))
    (path / "metrics.json").write_text(json.dumps({"accuracy": accuracy}))
    (path / "time_taken.txt").write_text("05:00:00\n")
    (path / "prompt.txt").write_text("Train the model.\n")
    (path / "contamination_judgement.txt").write_text("no contamination detected\n")
    (path / "disallowed_model_judgement.txt").write_text("only allowed use detected\n")
    return path


@pytest.fixture
def tree(tmp_path):
    """(results root, outside folder): the root holds the good run; the outside folder a file and a whole run."""
    root = tmp_path / "results"
    _run(root / METHOD / GOOD)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "passwd").write_text(OUTSIDE_TEXT + "\n")
    (outside / "metrics.json").write_text('{"accuracy": 0.99}')
    _run(outside / "run", word=OUTSIDE_TEXT, accuracy=0.99)
    return root, outside


def _rows(path: Path, sql: str, params: list | None = None) -> list[tuple]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def _everything(path: Path) -> str:
    """Every stored text of every run, steps and verdicts, as one string."""
    parts = _rows(path, "SELECT coalesce(input, '') || output FROM steps")
    parts += _rows(path, "SELECT coalesce(prompt, '') || coalesce(metrics_json, '') || problems FROM runs")
    parts += _rows(path, "SELECT coalesce(text, '') FROM verdicts")
    return "\n".join(p[0] for p in parts)


def _run_row(path: Path, run_dir: str) -> dict:
    con = duckdb.connect(str(path), read_only=True)
    try:
        cur = con.execute("SELECT * FROM runs WHERE id = ?", [layout.run_id(METHOD, run_dir)])
        names = [d[0] for d in cur.description]
        row = cur.fetchone()
    finally:
        con.close()
    assert row is not None, run_dir
    return dict(zip(names, row, strict=True))


def _good_stored(path: Path) -> None:
    good = _run_row(path, GOOD)
    assert (good["state"], good["step_count"], good["accuracy"]) == ("scored", 3, pytest.approx(0.4))


def test_a_file_linked_out_of_the_root_is_refused_and_named(tree, fresh_warehouse):
    root, outside = tree
    bad = _run(root / METHOD / BAD)
    (bad / "solve_out.txt").unlink()
    (bad / "solve_out.txt").symlink_to(outside / "passwd")
    (bad / "metrics.json").unlink()
    (bad / "metrics.json").symlink_to(outside / "metrics.json")
    (bad / "prompt.txt").unlink()
    (bad / "prompt.txt").symlink_to("../../../outside/passwd")  # relative, leaving the root by ..
    (bad / "final_model").symlink_to(outside, target_is_directory=True)  # a checkpoint a rerun would load
    report = ingest_tree(root=root, workers=1)
    assert (report.stored, report.failed) == (2, 0), report.problems
    expected = {f"{METHOD}/{BAD}/{name}: a symbolic link to a path outside the results root: refused"
                for name in ("final_model", "metrics.json", "prompt.txt", "solve_out.txt")}
    assert expected <= set(report.problems), report.problems
    row = _run_row(fresh_warehouse, BAD)
    assert (row["step_count"], row["accuracy"], row["trace_file"], row["prompt"]) == (0, None, None, None)
    assert row["has_final_model"] is False
    assert expected <= set(json.loads(row["problems"]))
    assert "OUTSIDE-THE-ROOT" not in _everything(fresh_warehouse)
    assert "0.99" not in _everything(fresh_warehouse)
    _good_stored(fresh_warehouse)


def test_run_and_method_directories_linked_out_of_the_root_are_not_ingested(tree, fresh_warehouse):
    root, outside = tree
    (root / METHOD / BAD).symlink_to(outside / "run", target_is_directory=True)
    other = "claude_claude-opus-4-6_10h_run2"
    (outside / "method").mkdir()
    (outside / "run").rename(outside / "method" / GOOD)
    (root / other).symlink_to(outside / "method", target_is_directory=True)
    report = ingest_tree(root=root, workers=1)
    assert (report.stored, report.failed) == (1, 0), report.problems
    assert f"{METHOD}/{BAD}: a symbolic link to a path outside the results root: refused" in report.problems
    assert f"{other}: a symbolic link to a path outside the results root: refused" in report.problems
    assert _rows(fresh_warehouse, "SELECT run_dir FROM runs") == [(GOOD,)]
    assert "OUTSIDE-THE-ROOT" not in _everything(fresh_warehouse)


def test_links_that_stay_inside_the_root_are_followed(tree, fresh_warehouse):
    root, _ = tree
    bad = _run(root / METHOD / BAD, word="a shared trace inside the tree")
    (bad / "solve_out.txt").rename(root / "shared_trace.txt")
    (bad / "solve_out.txt").symlink_to(root / "shared_trace.txt")
    report = ingest_tree(root=root, workers=1)
    assert (report.stored, report.failed, report.problems) == (2, 0, [])
    assert _run_row(fresh_warehouse, BAD)["step_count"] == 3
    assert "a shared trace inside the tree" in _everything(fresh_warehouse)


def test_fifos_sockets_and_devices_are_refused_without_being_opened(tree, fresh_warehouse, tmp_path):
    root, _ = tree
    bad = _run(root / METHOD / BAD)
    for name in ("solve_out.txt", "metrics.json"):
        (bad / name).unlink()
        os.mkfifo(bad / name)
    (bad / "prompt.txt").unlink()
    server = socket.socket(socket.AF_UNIX)
    here = os.getcwd()
    os.chdir(bad)  # a socket's path is limited to 107 bytes: bound by its relative name
    try:
        server.bind("prompt.txt")
    finally:
        os.chdir(here)
    device = False
    (bad / "time_taken.txt").unlink()
    try:
        os.mknod(bad / "time_taken.txt", 0o600 | 0o020000, os.makedev(1, 3))  # a character device (/dev/null's)
        device = True
    except PermissionError:
        (bad / "time_taken.txt").write_text("05:00:00\n")

    # Should the ingest open a FIFO for reading, it would block until a writer comes: the watchdog is that
    # writer (it opens each FIFO and closes it, so the reader gets an end of file), and the test then fails.
    opened: list[str] = []
    finished = threading.Event()

    def watchdog() -> None:
        if finished.wait(120):
            return
        for name in ("solve_out.txt", "metrics.json"):
            try:
                os.close(os.open(bad / name, os.O_WRONLY | os.O_NONBLOCK))
                opened.append(name)
            except OSError:
                pass

    guard = threading.Thread(target=watchdog, daemon=True)
    guard.start()
    try:
        report = ingest_tree(root=root, workers=1)
    finally:
        finished.set()
        server.close()
    guard.join()
    assert opened == [], f"the ingest opened {opened} for reading"
    assert (report.stored, report.failed) == (2, 0), report.problems
    prefix = f"{METHOD}/{BAD}/"
    assert f"{prefix}solve_out.txt: a FIFO (named pipe), not a regular file: refused (never opened)" in report.problems
    assert f"{prefix}metrics.json: a FIFO (named pipe), not a regular file: refused (never opened)" in report.problems
    assert f"{prefix}prompt.txt: a socket, not a regular file: refused (never opened)" in report.problems
    if device:
        assert f"{prefix}time_taken.txt: a character device, not a regular file: refused (never opened)" \
            in report.problems
    row = _run_row(fresh_warehouse, BAD)
    assert (row["step_count"], row["trace_file"], row["accuracy"]) == (0, None, None)
    assert row["state"] != "scored"
    _good_stored(fresh_warehouse)


def test_a_trace_over_the_size_limit_is_refused(tree, fresh_warehouse, settings):
    root, _ = tree
    bad = _run(root / METHOD / BAD)
    settings.PTB_MAX_TRACE_BYTES = 2000
    (bad / "solve_out.txt").write_text(_trace("x" * 5000))
    size = (bad / "solve_out.txt").stat().st_size
    report = ingest_tree(root=root, workers=1)
    assert (report.stored, report.failed) == (2, 0), report.problems
    assert (f"{METHOD}/{BAD}/solve_out.txt: {size:,} bytes, over the 2,000 bytes the ingest reads "
            "(PTB_MAX_TRACE_BYTES): refused") in report.problems
    assert _run_row(fresh_warehouse, BAD)["step_count"] == 0
    _good_stored(fresh_warehouse)


def test_a_sparse_trace_of_three_gigabytes_is_refused_at_once(tree, fresh_warehouse):
    """The default limit (2,000,000,000 bytes): a sparse file of 3 GB is neither read nor hashed."""
    root, _ = tree
    bad = _run(root / METHOD / BAD)
    with open(bad / "solve_out.txt", "r+b") as handle:
        handle.truncate(3 * 1024 ** 3)
    started = time.process_time()
    report = ingest_tree(root=root, workers=1)
    cpu = time.process_time() - started
    assert (report.stored, report.failed) == (2, 0), report.problems
    assert (f"{METHOD}/{BAD}/solve_out.txt: {3 * 1024 ** 3:,} bytes, over the 2,000,000,000 bytes the ingest "
            "reads (PTB_MAX_TRACE_BYTES): refused") in report.problems
    assert cpu < 30, f"{cpu:.1f} CPU seconds: the file was read"
    _good_stored(fresh_warehouse)


def test_a_streamed_trace_without_newlines_is_refused_in_bounded_memory(tree, fresh_warehouse, monkeypatch):
    root, _ = tree
    bad = _run(root / METHOD / BAD)
    (bad / "solve_out.txt").write_bytes(b"\0" * (3 * reader.READ_BLOCK))
    monkeypatch.setattr(reader, "MAX_LINE_BYTES", reader.READ_BLOCK)
    report = ingest_tree(root=root, workers=1)
    assert (report.stored, report.failed) == (1, 1), report.problems
    assert any(p.startswith(f"{root / METHOD / BAD}: not stored: solve_out.txt has a line longer than")
               for p in report.problems), report.problems
    _good_stored(fresh_warehouse)


def test_a_run_over_the_time_limit_in_the_pool_is_reported_and_the_others_stored(tree, fresh_warehouse, settings,
                                                                                 monkeypatch):
    """A pathological run (stand-in: ``Ingester.parse_run`` sleeping for one run, patched before the pool's
    processes fork; no real trace is known that hangs the parsers) is stopped at PTB_INGEST_RUN_SECONDS."""
    root, _ = tree
    _run(root / METHOD / BAD)
    third = "gsm8k_Qwen_Qwen3-1.7B-Base_25100003"
    _run(root / METHOD / third)
    real = reader.Ingester.parse_run

    def slow(self, method, run_dir, **kwargs):
        if run_dir.name == BAD:
            time.sleep(600)
        return real(self, method, run_dir, **kwargs)

    monkeypatch.setattr(reader.Ingester, "parse_run", slow)
    settings.PTB_INGEST_RUN_SECONDS = 3
    started = time.monotonic()
    report = ingest_tree(root=root, workers=2)
    assert time.monotonic() - started < 120
    assert (report.stored, report.failed) == (2, 1), report.problems
    assert (f"{root / METHOD / BAD}: not stored: reading it took longer than PTB_INGEST_RUN_SECONDS (3 s); its "
            "worker was stopped") in report.problems
    assert sorted(r[0] for r in _rows(fresh_warehouse, "SELECT run_dir FROM runs")) == [GOOD, third]


def test_a_streamed_run_over_the_time_limit_is_reported_and_not_stored(tree, fresh_warehouse, settings,
                                                                      monkeypatch):
    root, _ = tree
    _run(root / METHOD / BAD)
    settings.PTB_INGEST_RUN_SECONDS = 0
    report = ingest_tree(root=root, workers=1)
    assert (report.stored, report.failed) == (0, 2), report.problems
    assert f"{root / METHOD / BAD}: not stored: reading it took longer than PTB_INGEST_RUN_SECONDS (0 s)" \
        in report.problems


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_run_page_names_each_refused_file(tree, fresh_warehouse, live_server, page):
    """What a visitor sees of a run with refused files: the run page's problems name each one by its path under
    the results root, and nothing it pointed to (screenshots at 1440 and 390 px in test-artifacts/pages/)."""
    from .conftest import ARTIFACTS

    root, outside = tree
    bad = _run(root / METHOD / BAD)
    (bad / "solve_out.txt").unlink()
    (bad / "solve_out.txt").symlink_to(outside / "passwd")
    (bad / "metrics.json").unlink()
    os.mkfifo(bad / "metrics.json")
    report = ingest_tree(root=root, workers=1)
    assert (report.stored, report.failed) == (2, 0), report.problems
    shots = ARTIFACTS / "pages"
    shots.mkdir(parents=True, exist_ok=True)
    for width in (1440, 390):
        page.set_viewport_size({"width": width, "height": 900})
        response = page.goto(f"{live_server.url}/runs/{layout.run_id(METHOD, BAD)}/")
        assert response is not None and response.status == 200
        page.locator("#ingest-problems summary").click()
        shown = page.locator("#ingest-problems").inner_text()
        assert f"{METHOD}/{BAD}/solve_out.txt: a symbolic link to a path outside the results root: refused" in shown
        assert f"{METHOD}/{BAD}/metrics.json: a FIFO (named pipe), not a regular file: refused (never opened)" \
            in shown
        assert "OUTSIDE-THE-ROOT" not in page.content() and str(outside) not in page.content()
        page.screenshot(path=shots / f"run-refused-files-{width}.png", full_page=True)
