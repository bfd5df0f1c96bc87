"""A run's date is its own (issue 17): the trace's first timestamp, else the run directory's time recorded at ingest
(``timestamp.txt``, else its files' earliest modification time), never the ingest time, which pages label
"ingested"; on the run page, its evaluations, the runs list (a sortable When column) and the API."""
from __future__ import annotations

import html
import os
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest

from ptbsite import warehouse
from traces import layout
from ingest.tree import ingest_tree
from ingest.reader import dir_time

from .conftest import RERUN_METHOD, write_run
from .test_facets_ingest import TRACE_A

TIMED = "gsm8k_Qwen_Qwen3-1.7B-Base_17000101"      # a trace with timestamps: 2026-04-05 10:00:00 to 12:50:00
UNTIMED = "gsm8k_Qwen_Qwen3-4B-Base_17000102"      # a plain-text trace: no timestamps
FILES_START = datetime(2026, 3, 2, 9, 30, tzinfo=timezone.utc)   # prompt.txt, the first file the harness wrote
FILES_SCORED = datetime(2026, 3, 2, 19, 0, tzinfo=timezone.utc)  # the other files, metrics.json among them

pytestmark = pytest.mark.django_db


def _touch(path: Path, moment: datetime) -> None:
    os.utime(path, (moment.timestamp(), moment.timestamp()))


@pytest.fixture
def dated_runs(tmp_path: Path, fresh_warehouse: Path) -> dict:
    """Two scored runs ingested into a fresh warehouse: one whose trace has timestamps, one whose trace has none
    and whose files carry known modification times. Returns {"root", "timed", "untimed"} (run ids)."""
    root = tmp_path / "results"
    timed = write_run(root, checkpoint=None, run_dir=TIMED)
    (timed / "solve_out.txt").write_text(TRACE_A)
    untimed = write_run(root, checkpoint=None, run_dir=UNTIMED)
    (untimed / "prompt.txt").write_text("Post-train Qwen3-4B for GSM8K.\n")
    for path in untimed.iterdir():
        if path.is_file():
            _touch(path, FILES_START if path.name == "prompt.txt" else FILES_SCORED)
    report = ingest_tree(root=root)
    assert report.stored == 2, report.problems
    return {"root": root, "timed": layout.run_id(RERUN_METHOD, TIMED),
            "untimed": layout.run_id(RERUN_METHOD, UNTIMED)}


def test_the_run_directory_dates_a_run_without_timestamps(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    assert dir_time(run) == (None, None)
    (run / "output.log").write_text("RUNNING TASK\n")
    (run / "prompt.txt").write_text("Post-train.\n")
    _touch(run / "output.log", FILES_SCORED)
    _touch(run / "prompt.txt", FILES_START)
    assert dir_time(run) == (datetime(2026, 3, 2, 9, 30), "file times")
    # A baseline's timestamp.txt (ISO 8601 with its offset) wins over file times.
    (run / "timestamp.txt").write_text("2026-02-10T08:15:00+01:00\n")
    assert dir_time(run) == (datetime(2026, 2, 10, 7, 15), "timestamp.txt")
    (run / "timestamp.txt").write_text("not a time\n")
    assert dir_time(run)[1] == "file times"


def test_the_api_serves_the_runs_own_date_and_the_ingest_time_apart(client, dated_runs):
    timed = client.get(f"/api/runs/{dated_runs['timed']}").json()
    assert timed["run_date"] == "2026-04-05T10:00:00Z" and timed["run_date_source"] == "trace"
    untimed = client.get(f"/api/runs/{dated_runs['untimed']}").json()
    assert untimed["started_at"] is None
    assert untimed["run_date"] == untimed["dir_time"] == "2026-03-02T09:30:00Z"
    assert untimed["run_date_source"] == untimed["dir_time_source"] == "file times"
    ingested = datetime.fromisoformat(untimed["ingested_at"])
    assert abs((datetime.now(timezone.utc) - ingested).total_seconds()) < 600
    listed = {r["id"]: r for r in client.get("/api/runs").json()["runs"]}
    assert listed[dated_runs["untimed"]]["run_date"] == "2026-03-02T09:30:00Z"


def test_the_run_page_says_when_the_run_ran_and_when_it_was_ingested(client, dated_runs):
    untimed = client.get(f"/api/runs/{dated_runs['untimed']}").json()
    ingested = datetime.fromisoformat(untimed["ingested_at"]).strftime("%Y-%m-%d %H:%M")
    page = client.get(f"/runs/{dated_runs['untimed']}/").content.decode()
    when = re.sub(r"<[^>]+>|\s+", " ", page.split('id="run-date">', 1)[1].split("</dd>", 1)[0]).split()
    assert html.unescape(" ".join(when)) == ("2026-03-02 09:30 UTC (the run directory's file times: the first file "
                                             f"the harness wrote) ingested {ingested} UTC")
    row = page.split('<tr data-origin="original">', 1)[1].split("</tr>", 1)[0]
    # When: the run's date; Ingested: the ingest, labelled (it showed metrics.json's time, 19:00, as "ingested").
    assert re.search(r'<td class="when"><span title="[^"]*file times[^"]*">2026-03-02 09:30</span></td>', row)
    assert f'<td class="muted ingested">ingested {ingested}</td>' in row and "2026-03-02 19:00" not in row
    timed = client.get(f"/runs/{dated_runs['timed']}/").content.decode()
    assert 'title="from the trace&#x27;s first timestamp">2026-04-05 10:00 UTC</time>' in timed


def test_the_runs_list_shows_and_sorts_by_the_runs_date(client, dated_runs):
    page = client.get("/runs/?sort=date&dir=asc").content.decode()
    dates = re.findall(r'<td class="when"><time datetime="([^"]+)"[^>]*>([^<]+)</time>', page)
    assert [shown for _, shown in dates] == ["2026-03-02", "2026-04-05"]
    assert 'aria-sort="ascending"><a href="?sort=date&amp;dir=desc" rel="nofollow">When<span class="sort-arrow"' \
        in page
    newest = client.get("/api/runs?sort=date&dir=desc").json()["runs"]
    assert [r["id"] for r in newest] == [dated_runs["timed"], dated_runs["untimed"]]


def test_runs_stored_before_the_migration_get_their_date_at_the_next_ingest(client, dated_runs):
    with warehouse.connect() as con:
        con.execute("UPDATE runs SET dir_time = NULL, dir_time_source = NULL")
    assert client.get(f"/api/runs/{dated_runs['untimed']}").json()["run_date"] is None
    report = ingest_tree(root=dated_runs["root"])
    assert (report.stored, report.unchanged) == (0, 2)  # nothing changed: nothing re-read
    untimed = client.get(f"/api/runs/{dated_runs['untimed']}").json()
    assert (untimed["run_date"], untimed["run_date_source"]) == ("2026-03-02T09:30:00Z", "file times")


def test_every_demo_run_is_dated_by_its_own_start(client, demo_ingested):
    """The generator's ground truth: each run's container start (``DemoRun.started_at``). A run whose trace has
    timestamps is dated by its first one (within minutes of the start); the others by prompt.txt's time, which
    the generator sets to the start as the harness writes it."""
    report, _, _ = demo_ingested
    sources = set()
    for demo in report.runs:
        run = client.get(f"/api/runs/{layout.run_id(*demo.run_dir.split('/'))}").json()
        start = datetime.fromisoformat(demo.started_at)
        date = datetime.fromisoformat(run["run_date"])
        sources.add(run["run_date_source"])
        if run["run_date_source"] == "file times":
            assert date == start, demo.run_dir
        else:
            assert run["run_date_source"] == "trace" and 0 <= (date - start).total_seconds() < 600, demo.run_dir
        assert run["ingested_at"] != run["run_date"]
    assert sources == {"trace", "file times"}
