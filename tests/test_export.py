"""``export_static``: the public site as files: deterministic, incremental, public only, no broken link."""
from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlsplit

import duckdb
import pytest
from django.core.management import call_command

from leaderboard import selectors as board
from export.exporter import STEPS_PER_PAGE, ExportError, Exporter, TracePages, export_site
from ptbsite import warehouse
from traces import selectors

pytestmark = pytest.mark.django_db

_LINK = re.compile(r'\s(?:href|src)="([^"]*)"')


def local_links(outdir: Path) -> list[tuple[Path, Path, str]]:
    """(page, target file, fragment) for every local href/src in every exported HTML page."""
    found = []
    for page in sorted(outdir.rglob("*.html")):
        for url in _LINK.findall(page.read_text()):
            url = url.replace("&amp;", "&")
            parts = urlsplit(url)
            if parts.scheme or parts.netloc or url.startswith("#"):
                continue
            assert not url.startswith("/"), f"{page}: absolute link {url}"
            found.append((page, (page.parent / unquote(parts.path)).resolve(), parts.fragment))
    return found


def assert_no_broken_link(outdir: Path) -> int:
    """Every local link's file exists, and a ``#step-N`` fragment names a step on that page; returns the count."""
    links = local_links(outdir)
    pages: dict[Path, str] = {}
    for page, target, fragment in links:
        assert target.is_file(), f"{page.relative_to(outdir)} links to missing {target}"
        assert target.is_relative_to(outdir.resolve()), f"{page}: link leaves the export: {target}"
        if fragment.startswith("step-"):
            text = pages.setdefault(target, target.read_text())
            assert f'id="{fragment}"' in text, f"{page.relative_to(outdir)}: no #{fragment} in {target}"
    return len(links)


def _digest(outdir: Path) -> dict[str, str]:
    return {str(p.relative_to(outdir)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(outdir.rglob("*")) if p.is_file()}


@pytest.fixture
def export_warehouse(demo_warehouse_state, tmp_path, settings) -> Path:
    """A copy of the demo warehouse (published data and the 12-run demo tree) this test may change."""
    _, source = demo_warehouse_state
    path = tmp_path / "export.duckdb"
    shutil.copy(source, path)
    settings.PTB_WAREHOUSE = str(path)
    warehouse.reset_migration_cache()
    return path


@pytest.fixture
def exported(export_warehouse, tmp_path) -> Path:
    outdir = tmp_path / "site"
    report = export_site(outdir)
    assert report.runs_written == len(selectors.run_fingerprints()) > 0
    return outdir


def test_the_export_has_every_view_run_and_json_twin(exported, client):
    assert (exported / "index.html").is_file()
    # issue 17: the trace viewer's highlighting styles travel with the pages that link them
    assert ".hl .kn" in (exported / "static/css/highlight.css").read_text()
    models = [m.id for m in board.leaderboard().base_models]
    assert len(models) == 4
    for model in models:
        page = (exported / f"base_model/{model}/index.html").read_text()
        assert f'data-view="{model}"' in page
        assert (exported / f"api/leaderboard/{model}.json").read_bytes() == \
            client.get(f"/api/leaderboard?base_model={model}").content
        assert (exported / f"plots/per-benchmark/base_model/{model}/index.html").is_file()
    for source in ("runs", "all"):
        assert (exported / f"source/{source}/flags/ignore/index.html").is_file()
    for chart in ("time-vs-score", "time-spent", "budget-and-effort"):
        assert (exported / f"plots/{chart}/index.html").is_file()
        assert (exported / f"api/plots/{chart}.json").read_bytes() == client.get(f"/api/plots/{chart}").content
    runs_json = json.loads((exported / "api/runs.json").read_text())
    assert runs_json["next"] is None
    assert {r["id"] for r in runs_json["runs"]} == set(selectors.run_fingerprints())
    for run in runs_json["runs"]:
        assert (exported / f"api/runs/{run['id']}.json").read_bytes() == client.get(f"/api/runs/{run['id']}").content
        assert f'data-run="{run["id"]}"' in (exported / "runs/index.html").read_text()
        assert (exported / f"runs/{run['id']}/index.html").is_file()


def test_long_traces_are_split_into_linked_step_pages_and_indexed(exported, client):
    run = max(selectors.list_runs(limit=None)[0], key=lambda r: r.step_count)
    assert run.step_count > STEPS_PER_PAGE
    pages = -(-run.step_count // STEPS_PER_PAGE)
    folder = exported / "runs" / run.id
    assert sorted(p.name for p in (folder / "steps").iterdir()) == sorted(f"{n}.html" for n in range(2, pages + 1))
    first, second = (folder / "index.html").read_text(), (folder / "steps/2.html").read_text()
    assert 'id="step-0"' in first and f'id="step-{STEPS_PER_PAGE - 1}"' in first
    assert f'id="step-{STEPS_PER_PAGE}"' in second and 'id="step-0"' not in second
    assert 'href="steps/2.html" rel="next"' in first
    assert 'href="../index.html" rel="prev"' in second
    live = client.get(f"/api/runs/{run.id}/steps?after={STEPS_PER_PAGE - 1}&limit={STEPS_PER_PAGE}").content
    assert (exported / f"api/runs/{run.id}/steps/2.json").read_bytes() == live
    index = json.loads((folder / "search.json").read_text())
    assert [s[0] for s in index["steps"]] == list(range(run.step_count))
    assert all(s[4] == s[0] // STEPS_PER_PAGE + 1 for s in index["steps"])
    assert all(len(s[5]) <= index["chars"] and s[5] == s[5].lower() for s in index["steps"])


def test_the_same_warehouse_exports_the_same_bytes(export_warehouse, tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    export_site(first)
    export_site(second)
    assert _digest(first) == _digest(second)


def test_export_is_incremental(exported, export_warehouse):
    before = _digest(exported)
    again = export_site(exported)
    assert (again.runs_written, again.files_written, again.runs_removed) == (0, 0, 0)
    assert again.runs_skipped == len(selectors.run_fingerprints())
    assert _digest(exported) == before

    run = max(selectors.list_runs(limit=None)[0], key=lambda r: r.step_count)
    con = duckdb.connect(str(export_warehouse))
    try:
        con.execute("INSERT INTO evaluations VALUES ('rerun-1', ?, 'rerun', 0.5, '{}', '{\"by\": \"test\"}', "
                    "TIMESTAMP '2031-01-01 00:00:00')", [run.id])
    finally:
        con.close()
    changed = export_site(exported)
    assert changed.runs_written == 1 and changed.runs_skipped == again.runs_skipped - 1
    assert '<strong id="run-score">50.0</strong>' in (exported / f"runs/{run.id}/index.html").read_text()
    assert '"score": 50.0' in (exported / f"api/runs/{run.id}.json").read_text()

    con = duckdb.connect(str(export_warehouse))
    try:
        con.execute("DELETE FROM runs WHERE id = ?", [run.id])
    finally:
        con.close()
    removed = export_site(exported)
    assert (removed.runs_written, removed.runs_removed) == (0, 1)
    assert not (exported / f"runs/{run.id}").exists() and not (exported / f"api/runs/{run.id}.json").exists()
    assert_no_broken_link(exported)


def test_nothing_but_the_public_site_is_exported(exported):
    assert not (exported / "admin").exists() and not (exported / "reruns").exists()
    for path in exported.rglob("*.html"):
        text = path.read_text()
        for needle in ("Re-evaluate", "/reruns/", "/admin/", "Redaction warnings", "csrfmiddlewaretoken"):
            assert needle not in text, (path, needle)
        assert not re.search(r"<[^>]*\shx-[a-z]+=", text), path  # htmx swaps need the server


def test_no_exported_link_is_broken(exported):
    assert assert_no_broken_link(exported) > 1000


def test_the_command_reports_runs_files_size_and_time(export_warehouse, tmp_path, capsys):
    call_command("export_static", str(tmp_path / "site"))
    out = capsys.readouterr().out
    assert re.search(r"\d+ runs \(\d+ written, 0 unchanged, 0 removed\); \d+ files \(\d+ written\), [\d.]+ MB; "
                     r"[\d.]+ s", out), out


def test_a_link_the_export_cannot_serve_is_an_error(export_warehouse, tmp_path):
    exporter = Exporter(tmp_path)
    assert exporter.localize("?base_model=Qwen3-4B-Base", "/", "index.html", None) == \
        "base_model/Qwen3-4B-Base/index.html"
    assert exporter.localize("/runs/?agent=a&benchmark=b", "/plots/", "plots/index.html", None) == \
        "../runs/index.html?agent=a&benchmark=b"
    for url in ("/admin/", "/?sort=average&dir=desc", "/runs/abc/?q=pip", "/api/docs"):
        with pytest.raises(ExportError):
            exporter.localize(url, "/", "index.html", None)


def test_step_pages_know_where_each_step_is():
    pages = TracePages.of(list(range(450)))
    assert pages.cursors == [-1, STEPS_PER_PAGE - 1, 2 * STEPS_PER_PAGE - 1]
    assert [pages.page_of_step(i) for i in (0, 199, 200, 449, 10_000)] == [1, 1, 2, 3, 3]
    assert pages.page_of_cursor(STEPS_PER_PAGE - 1) == 2
    assert TracePages.of([]).cursors == [-1]
