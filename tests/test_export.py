"""``export_static``: the public site as files: deterministic, incremental, public only, no broken link."""
from __future__ import annotations

import gc
import gzip
import hashlib
import json
import os
import re
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

import duckdb
import pytest
from django.core.management import call_command

from leaderboard import selectors as board
from export.exporter import (PENDING, STEPS_PER_PAGE, ExportError, Exporter, ExportReport, TracePages, code_digest,
                             code_files, code_key, export_site, spared_heap)
from export.search import unfinished
from ptbsite import warehouse
from traces import selectors
from ingest.tree import ingest_tree
from traces.schemas import STATE_TEXT
from traces.vocabulary import STEP_TEXT_CAP

from .test_trace_integrity import INIT, RESULT, tool_call, tool_result, write_run

pytestmark = pytest.mark.django_db

_LINK = re.compile(r'\s(?:href|src|data-cell)="([^"]*)"')


def local_links(outdir: Path) -> list[tuple[Path, Path, str]]:
    """(page, target file, fragment) for every local href/src (and a run page's cell file, ``data-cell``) in every
    exported HTML page."""
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


def _write(warehouse_file: Path, *statements: tuple[str, list]) -> None:
    """Run ``(sql, params)`` statements on the export's DuckDB file (a change the next export must notice), and
    publish a new warehouse version as every write of the site does (results kept per version, such as the
    analysis, are then computed again)."""
    with closing(duckdb.connect(str(warehouse_file))) as con:
        for sql, params in statements:
            con.execute(sql, params)
        # Every write of the site keeps latest_runs (traces.services.refresh_latest_runs): here, all of it.
        con.execute("DELETE FROM latest_runs")
        con.execute("INSERT INTO latest_runs SELECT * FROM latest_run_rows")
    warehouse.version.bump(str(warehouse_file))


def _digest(outdir: Path) -> dict[str, str]:
    return {str(p.relative_to(outdir)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(outdir.rglob("*")) if p.is_file()}


def _fragments(folder: Path) -> list[dict]:
    found = []
    for path in sorted((folder / "fragment").iterdir()):
        data = gzip.decompress(path.read_bytes())
        assert data.startswith(b"pagefind_dcd"), path
        found.append(json.loads(data.removeprefix(b"pagefind_dcd")))
    return found


def search_fragments(outdir: Path) -> list[dict]:
    """Every step the export's search finds, as one record per step {url, content, meta, filters}.

    Pagefind 1.5.2 stores a record (one exported page of steps, export/search.py) as a fragment file: gzip of
    ``pagefind_dcd`` + JSON {url, content, meta, filters, anchors}; each step is the words after its heading (an
    anchor ``step-N`` at a word location, the heading's one word ``·``) up to the next. Read from the base bundle
    and from the runs' indexes ``pagefind/shards.json`` merges, without the base records of the runs it lists as
    stale (the search page leaves those out with Pagefind's ``not`` filter) and without steps holding no word
    (no search finds them); in bundle and file name order."""
    shards = json.loads((outdir / "pagefind/shards.json").read_text())
    found = []
    for folder in [outdir / "pagefind", *(outdir / "pagefind" / path for path in shards["merge"])]:
        for fragment in _fragments(folder):
            if set(fragment["filters"].get("base", [])) & set(shards["stale"]):
                continue
            words = fragment["content"].split(" ")
            steps = {s[0]: s for s in json.loads(fragment["meta"]["steps"])}
            anchors = sorted(fragment["anchors"], key=lambda a: a["location"])
            ends = [a["location"] for a in anchors[1:]] + [len(words)]
            for anchor, end in zip(anchors, ends, strict=True):
                assert words[anchor["location"]] == "\u00b7", fragment["url"]
                content = " ".join(words[anchor["location"] + 1:end])
                if not re.search(r"[^\W_]", content):
                    continue
                index, kind, tool = steps[int(anchor["id"].removeprefix("step-"))]
                filters = {k: v for k, v in fragment["filters"].items() if k not in ("base", "kind", "tool")}
                found.append({"url": f"{fragment['url']}#{anchor['id']}", "content": content,
                              "meta": {"title": fragment["meta"]["title"], "run": fragment["meta"]["run"],
                                       "trace": fragment["meta"]["trace"], "step": str(index), "kind": kind,
                                       **({"tool": tool} if tool else {})},
                              "filters": {**filters, "kind": [kind], **({"tool": [tool]} if tool else {})}})
    return found


# Two runs the search tests add to the demo warehouse. DEEP_WORD is in one step only, of the first run: a tool
# output of ~320 KB, past the 256 KiB the steps table keeps (only step_texts has it). OTHER_WORD is only in the
# second run, beside text that is markup if parsed as HTML.
DEEP_WORD = "frobnicatrix"
OTHER_WORD = "glimmerquokka"
# Markup and entities as trace text: shown as written (a "&lt;" stays "&lt;", it is no "<"), never as markup.
HOSTILE = '<img src=x onerror="document.title=1"> &amp; &lt;i&gt; <b>bold</b>'
SEARCH_METHOD = "claude_claude-sonnet-4-5_10h_search"


@dataclass
class SearchRuns:
    """The runs :func:`add_search_runs` ingested: run ids, the index of the step holding each word, and the long
    step's whole output."""

    deep_run: str
    deep_step: int
    other_run: str
    other_step: int
    long_output: str


def _long_output() -> str:
    line = "epoch 3 step 1234 loss 0.4321 lr 1e-05 grad_norm 0.98\n"
    before = line * (280_000 // len(line))  # the word starts past STEP_TEXT_CAP (262,144 bytes)
    return before + f"note {DEEP_WORD} here\n" + line * (40_000 // len(line))


def add_search_runs(root: Path) -> SearchRuns:
    """Write two runs under ``root`` and ingest them into the current warehouse (see DEEP_WORD)."""
    long_output = _long_output()
    assert long_output.index(DEEP_WORD) > STEP_TEXT_CAP and len(long_output) > 300_000
    short = [line for i in range(120) for line in (tool_call(f"toolu_{i}", f"echo step {i}"),
                                                   tool_result(f"toolu_{i}", f"step {i} ok"))]
    deep = "\n".join([INIT, *short, tool_call("toolu_log", "cat train.log"), tool_result("toolu_log", long_output),
                      RESULT]) + "\n"
    other = "\n".join([INIT, tool_call("toolu_1", "grep -r needle ."),
                       tool_result("toolu_1", f"found {OTHER_WORD} {HOSTILE} in data.txt"), RESULT]) + "\n"
    deep_run = write_run(root, deep, method=SEARCH_METHOD, run_dir="gsm8k_Qwen_Qwen3-1.7B-Base_17990001")
    other_run = write_run(root, other, method=SEARCH_METHOD, run_dir="humaneval_Qwen_Qwen3-4B-Base_17990002")
    report = ingest_tree(root=root)
    assert (report.stored, report.failed) == (2, 0), report.problems

    def step_with(run_id: str, word: str) -> int:
        found = [s.index for s in selectors.whole_steps(run_id, limit=10_000) if word in s.output]
        assert len(found) == 1
        return found[0]

    return SearchRuns(deep_run, step_with(deep_run, DEEP_WORD), other_run, step_with(other_run, OTHER_WORD),
                      long_output)


@dataclass
class ExportedSite:
    """The demo warehouse with :func:`add_search_runs`' two runs (``added``), exported into ``outdir``."""

    warehouse: Path
    outdir: Path
    added: SearchRuns
    report: ExportReport


@pytest.fixture
def exported(shared_site) -> Path:
    assert shared_site.report.runs_written == len(selectors.run_fingerprints()) > 0
    return shared_site.outdir


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


def test_the_export_has_each_judging_rule_and_its_twins(exported, client):
    """Issue 26: the leaderboard from runs, its twin, the usage plot and its twin under each judging rule, with and
    without reviewers' overrides, each file as the live site serves it; the pages' rule chips lead to them."""
    for rule in ("era", "any", "majority", "ignore"):
        for reviews, suffix in (("1", ""), ("0", "-reviews0")):
            assert (exported / f"api/leaderboard/runs/{rule}{suffix}.json").read_bytes() == client.get(
                f"/api/leaderboard?source=runs&verdicts={rule}&reviews={reviews}").content, (rule, reviews)
            twin = "api/plots/usage-vs-score" + ("" if (rule, reviews) == ("era", "1") else f"/{rule}{suffix}") + ".json"
            served = client.get(f"/api/plots/usage-vs-score?verdicts={rule}&reviews={reviews}")
            assert (exported / twin).read_bytes() == served.content, twin
            assert (served.json()["verdicts"], served.json()["reviews"]) == (rule, reviews == "1")
            if (rule, reviews) == ("ignore", "0"):
                board_page = "source/runs/flags/ignore/index.html"  # the raw view keeps its old name
            elif (rule, reviews) == ("era", "1"):
                board_page = "source/runs/index.html"
            else:
                board_page = ("source/runs/" + (f"verdicts/{rule}/" if rule != "era" else "")
                              + ("reviews/0/" if reviews == "0" else "") + "index.html")
            text = (exported / board_page).read_text()
            assert 'id="judging-rules"' in text and f'class="chip active" data-verdicts="{rule}"' in text, board_page
            usage = "plots/usage-vs-score/" + ("" if (rule, reviews) == ("era", "1") else
                                               f"verdicts/{rule}/{'reviews/0/' if reviews == '0' else ''}") + "index.html"
            page = (exported / usage).read_text()
            assert f'id="judging-notice" data-verdicts="{rule}"' in page, usage
            assert f'class="chip active" aria-current="true" data-verdicts="{rule}"' in page, usage
    anyone = (exported / "source/runs/verdicts/any/index.html").read_text()
    assert 'data-verdicts="any"' in anyone and "Rank Δ" in anyone and 'id="judging-notice"' in anyone
    usage = (exported / "plots/usage-vs-score/index.html").read_text()
    assert 'href="verdicts/majority/index.html"' in usage and 'href="verdicts/era/reviews/0/index.html"' in usage


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
    jump = json.loads((folder / "jump.json").read_text())
    assert [s[0] for s in jump["steps"]] == list(range(run.step_count))
    assert all(s[2] == s[0] // STEPS_PER_PAGE + 1 for s in jump["steps"])
    elapsed = {s.index: s.elapsed_s for s in selectors.step_index(run.id)}
    assert [s[1] for s in jump["steps"]] == [None if elapsed[i] is None else round(elapsed[i]) for i in elapsed]
    assert not (folder / "search.json").exists()


@pytest.fixture
def search_exported(shared_site) -> tuple[Path, SearchRuns]:
    """(OUTDIR, the search runs): the demo warehouse with :func:`add_search_runs`' two runs, exported."""
    outdir, report = shared_site.outdir, shared_site.report
    assert report.search_records == len(search_fragments(outdir)) > 0
    return outdir, shared_site.added


def test_every_step_of_every_run_is_one_search_record_with_its_whole_text(search_exported):
    outdir, added = search_exported
    fragments = search_fragments(outdir)
    # One record per step of every trace of every exported run, agent and judge traces alike, except the steps
    # without a word (Pagefind drops those: no search could find them).
    expected = set()
    for run_id in selectors.run_fingerprints():
        for trace in selectors.trace_names(run_id):
            for step in selectors.whole_steps(run_id, trace=trace, limit=100_000):
                if re.search(r"[^\W_]", f"{step.input} {step.output}"):
                    expected.add((run_id, trace, str(step.index)))
    assert {(f["meta"]["run"], f["meta"]["trace"], f["meta"]["step"]) for f in fragments} == expected
    assert len(fragments) == len(expected) > 2000
    assert any(f["meta"]["trace"].startswith("judge:") for f in fragments)

    # The long step is indexed whole (input, then its ~320 KB output), not cut at the display cap, and links to
    # the step page that holds it: page 2 (steps 200-399) of the agent trace.
    deep = [f for f in fragments if DEEP_WORD in f["content"]]
    assert len(deep) == 1
    deep = deep[0]
    step = selectors.whole_steps(added.deep_run, after=added.deep_step - 1, limit=1)[0]
    assert step.output == added.long_output  # read back whole from step_texts
    # (Pagefind stores the text with its whitespace runs made single spaces)
    assert deep["content"].split() == f"{step.input}\n{step.output}".split()
    assert STEPS_PER_PAGE <= added.deep_step < 2 * STEPS_PER_PAGE
    assert deep["url"] == f"runs/{added.deep_run}/steps/2.html#step-{added.deep_step}"
    run = selectors.get_run(added.deep_run)
    assert deep["meta"] == {"title": run.title, "run": added.deep_run, "trace": "agent",
                            "step": str(added.deep_step), "kind": "tool_result", "tool": "Bash"}
    assert deep["filters"]["run"] == [added.deep_run] and deep["filters"]["benchmark"] == ["GSM8K"]
    # the stored (display) text does not hold the word: only the whole text does
    assert DEEP_WORD not in selectors.steps_page(added.deep_run, after=added.deep_step - 1, limit=1).steps[0].output

    other = [f for f in fragments if OTHER_WORD in f["content"]]
    assert [f["url"] for f in other] == [f"runs/{added.other_run}/index.html#step-{added.other_step}"]
    assert HOSTILE in other[0]["content"]  # stored as text; the search page never parses it as HTML

    # Every file of the bundle is whole (Pagefind's own writes are checked before its binary is let go).
    bundle = outdir / "pagefind"
    assert unfinished(bundle, sorted(p.relative_to(bundle).as_posix() for p in bundle.rglob("*")
                                     if p.suffix.startswith(".pf_") or p.name.startswith("wasm.")
                                     or p.name == "pagefind-entry.json")) == []

    # Every record links to an exported page that has its step's anchor.
    pages: dict[str, str] = {}
    for f in fragments:
        file, _, anchor = f["url"].partition("#")
        text = pages.setdefault(file, (outdir / file).read_text())
        assert f'id="{anchor}"' in text, f["url"]


def _search_meta(outdir: Path) -> tuple[list[bytes], bytes]:
    """Pagefind's files that list filter values in hash map order (export/search.py), as (each filter file's
    decompressed bytes sorted, the meta file's bytes sorted with the filter files' names blanked): equal for two
    bundles of the same records whatever that order."""
    filters = sorted(outdir.glob("pagefind/filter/*.pf_filter"))
    [meta] = outdir.glob("pagefind/pagefind.*.pf_meta")
    data = gzip.decompress(meta.read_bytes())
    for path in filters:
        assert path.stem.encode() in data
        data = data.replace(path.stem.encode(), b"filter")
    return sorted(bytes(sorted(gzip.decompress(p.read_bytes()))) for p in filters), bytes(sorted(data))


def test_the_search_index_follows_incremental_exports(site_copy):
    outdir, added, export_warehouse = site_copy.outdir, site_copy.added, site_copy.warehouse
    export_site(outdir)  # the copy's warehouse has another version token: its site pages are rendered once more
    again = export_site(outdir)
    assert (again.runs_written, again.files_written, again.search_records) == (0, 0, 0)

    # The run's files changed (as a re-ingest stores them): the index is rebuilt with the step's new text.
    _write(export_warehouse,
           ("UPDATE steps SET output = 'now zanzibarquill only' WHERE run_id = ? AND idx = ?",
            [added.other_run, added.other_step]),
           ("UPDATE runs SET content_hash = 'changed' WHERE id = ?", [added.other_run]))
    changed = export_site(outdir)
    assert changed.runs_written == 1 and changed.search_records == len(search_fragments(outdir))
    texts = {f["url"]: f["content"] for f in search_fragments(outdir)}
    assert texts[f"runs/{added.other_run}/index.html#step-{added.other_step}"] == "now zanzibarquill only"
    assert not any(OTHER_WORD in text for text in texts.values())

    _write(export_warehouse, ("DELETE FROM runs WHERE id = ?", [added.other_run]))
    removed = export_site(outdir)
    assert (removed.runs_written, removed.runs_removed) == (0, 1)
    walked = [p.stat().st_size for p in outdir.rglob("*") if p.is_file()]  # the tree's size kept (Exporter.grew)
    assert (removed.files, removed.bytes) == (len(walked), sum(walked))
    fragments = search_fragments(outdir)
    assert removed.search_records == len(fragments)  # the files of the records no longer indexed are gone
    assert not any(OTHER_WORD in f["content"] or added.other_run in f["url"] for f in fragments)
    assert [f["url"] for f in fragments if DEEP_WORD in f["content"]] == [
        f"runs/{added.deep_run}/steps/2.html#step-{added.deep_step}"]
    assert not list(outdir.glob(".pagefind-*"))  # the build folder is removed
    assert json.loads((outdir / ".export-manifest.json").read_text())["search"]


def test_the_same_warehouse_exports_the_same_bytes(export_warehouse, tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    export_site(first)
    export_site(second)
    ordered = re.compile(r"^pagefind/(filter/.*|pagefind\..*\.pf_meta|pagefind-entry\.json)$|^\.export-manifest\.json$")
    a, b = _digest(first), _digest(second)
    assert {k: v for k, v in a.items() if not ordered.match(k)} == {k: v for k, v in b.items() if not ordered.match(k)}
    # Pagefind's filter and meta files hold the same content, in an order of its own (their sizes too: the
    # manifest's tree size may differ in bytes, and its static copies' keys are of each site's own files (their
    # paths, inodes, times), nothing else of it)
    assert _search_meta(first) == _search_meta(second)
    manifests = [json.loads((site / ".export-manifest.json").read_text()) for site in (first, second)]
    assert manifests[0]["tree"][0] == manifests[1]["tree"][0]
    assert manifests[0]["static"].keys() == manifests[1]["static"].keys()
    assert [{k: v for k, v in m.items() if k not in ("tree", "static")} for m in manifests][0] == \
        [{k: v for k, v in m.items() if k not in ("tree", "static")} for m in manifests][1]
    assert len([k for k in a if ordered.match(k)]) == len([k for k in b if ordered.match(k)]) > 2


def test_export_is_incremental(site_copy):
    exported, export_warehouse = site_copy.outdir, site_copy.warehouse
    export_site(exported)  # the copy's warehouse has another version token: its site pages are rendered once more
    before = _digest(exported)
    again = export_site(exported)
    assert (again.runs_written, again.files_written, again.runs_removed) == (0, 0, 0)
    assert again.runs_skipped == len(selectors.run_fingerprints())
    assert _digest(exported) == before

    run = max(selectors.list_runs(limit=None)[0], key=lambda r: r.step_count)
    _write(export_warehouse, ("INSERT INTO evaluations VALUES ('rerun-1', ?, 'rerun', 0.5, '{}', '{\"by\": \"test\"}', "
                              "TIMESTAMP '2031-01-01 00:00:00')", [run.id]))
    assert again.search_records == 0  # the search bundle is not rebuilt either
    changed = export_site(exported)
    # The run alone: the pages that offer it to compare with read its new score from its cell's file.
    assert changed.runs_written == 1 and changed.runs_skipped == again.runs_skipped - 1
    # the tree's size from the manifest's and what the export wrote and removed, as a walk of the tree finds it
    walked = [p.stat().st_size for p in exported.rglob("*") if p.is_file()]
    assert (changed.files, changed.bytes) == (len(walked), sum(walked))
    assert changed.search_records == 0  # a new evaluation changes the run's pages, not its steps
    assert '<strong id="run-score">50.0</strong>' in (exported / f"runs/{run.id}/index.html").read_text()
    assert '"score": 50.0' in (exported / f"api/runs/{run.id}.json").read_text()
    cell = json.loads((exported / f"cells/{run.suite}/{run.benchmark}/{run.base_model}.json").read_text())
    assert cell["runs"][run.id] == {"state": run.state_text, "score": "50.0"}

    # Removed: the pages that offered it list their peers again; its cell's file no longer holds it.
    offering = [r for r in selectors.run_fingerprints() if run.id in [p.run.id for p in selectors.cell_peers(r)]]
    _write(export_warehouse, ("DELETE FROM runs WHERE id = ?", [run.id]))
    removed = export_site(exported)
    assert (removed.runs_written, removed.runs_refreshed, removed.runs_removed) == (len(offering), len(offering), 1)
    cell = json.loads((exported / f"cells/{run.suite}/{run.benchmark}/{run.base_model}.json").read_text())
    assert run.id not in cell["runs"]
    assert not (exported / f"runs/{run.id}").exists() and not (exported / f"api/runs/{run.id}.json").exists()
    walked = [p.stat().st_size for p in exported.rglob("*") if p.is_file()]
    assert (removed.files, removed.bytes) == (len(walked), sum(walked))
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
    # the export's own search page keeps the query it reads in the browser, and only that
    assert exporter.localize("/search/?run=r1&q=loss", "/runs/r1/", "runs/r1/index.html", None) == \
        "../../search/index.html?run=r1&q=loss"
    for url in ("/admin/", "/?sort=average&dir=desc", "/runs/abc/?q=pip", "/api/docs", "/search/?sort=score"):
        with pytest.raises(ExportError):
            exporter.localize(url, "/", "index.html", None)


def test_a_search_bundle_file_cut_short_is_seen_as_unfinished(tmp_path):
    whole = gzip.compress(b"pagefind_dcd" + b'{"url": "runs/a/index.html#step-1"}' * 100)
    (tmp_path / "fragment").mkdir()
    for name, data in {"fragment/whole.pf_fragment": whole, "fragment/cut.pf_fragment": whole[:len(whole) // 2],
                       "fragment/empty.pf_fragment": b"", "pagefind.en_1.pf_meta": whole,
                       "pagefind-entry.json": b'{"languages": {"en": {"hash": "en_1", "page_count": 1}}}'}.items():
        (tmp_path / name).write_bytes(data)
    names = ["fragment/cut.pf_fragment", "fragment/empty.pf_fragment", "fragment/whole.pf_fragment",
             "pagefind-entry.json", "pagefind.en_1.pf_meta"]
    assert unfinished(tmp_path, names) == ["fragment/cut.pf_fragment", "fragment/empty.pf_fragment"]
    (tmp_path / "pagefind-entry.json").write_bytes(b'{"languages": {"en": {"hash": "en_2", "page_')
    assert unfinished(tmp_path, ["pagefind-entry.json"]) == ["pagefind-entry.json"]  # cut, and names no meta


def test_step_pages_know_where_each_step_is():
    pages = TracePages.of(list(range(450)))
    assert pages.cursors == [-1, STEPS_PER_PAGE - 1, 2 * STEPS_PER_PAGE - 1]
    assert [pages.page_of_step(i) for i in (0, 199, 200, 449, 10_000)] == [1, 1, 2, 3, 3]
    assert pages.page_of_cursor(STEPS_PER_PAGE - 1) == 2
    assert TracePages.of([]).cursors == [-1]


def test_the_comparisons_a_run_page_links_to_are_exported(exported):
    """Issue 27, then issue 24 (branch i24c2): each run page's "Compare with" links lead to the one comparison page,
    ``compare/index.html?runs=<run>,<peer>``, which builds the comparison in the browser from the runs' side files
    (``runs/<id>/compare.json``, one per run, written with its pages); no comparison is pre-rendered per pair."""
    linked = 0
    for run in selectors.list_runs(limit=None)[0]:
        page = (exported / f"runs/{run.id}/index.html").read_text()
        side = json.loads((exported / f"runs/{run.id}/compare.json").read_text())
        assert side["run_id"] == run.id and side["title"] == run.title
        assert side["href"] == f"../runs/{run.id}/index.html"
        assert [s["index"] for s in side["steps"]] == list(range(min(run.step_count, side["limit"] + 1)))
        for step in side["steps"]:  # a step's link: its page of the run, relative to compare/index.html
            assert (exported / "compare" / step["href"].split("#")[0]).resolve().is_file()
        assert any(a["budget_s"] == run.budget_hours * 3600 for a in side["axes"])
        for peer in selectors.cell_peers(run.id):
            assert f'href="../../compare/index.html?runs={run.id}%2C{peer.run.id}"' in page
            linked += 1
    assert linked >= 2
    assert (exported / "compare/index.html").is_file()
    assert [p.name for p in (exported / "compare").iterdir()] == ["index.html"]  # no compare/<a>-<b>/ folders
    assert (exported / "static/js/static_compare.js").is_file()


def test_a_run_fingerprint_covers_the_identity_of_the_runs_its_page_offers_not_their_scores(export_warehouse,
                                                                                           monkeypatch):
    """Issue 24: at the real size a cell holds ~90 runs and a run page ~15 peers. A run's fingerprint covers what
    its page shows of each peer by identity (its directory, which attempt counts, its agent), not the peer's state
    and score (the static page reads those from its cell's file), nor the runs of its cell it does not offer."""
    from traces.selectors import compare

    fingerprints = selectors.run_fingerprints()
    runs = [r for r in selectors.list_runs(limit=None)[0] if r.id in fingerprints]
    pairs = [(a, b) for a in runs for b in runs if (a.suite, a.benchmark, a.base_model) == (b.suite, b.benchmark,
             b.base_model) and b.is_latest and b.agent_key != a.agent_key]
    assert pairs, "the demo tree has a cell with two agents' runs"
    run, other = pairs[0]
    assert other.id in [p.run.id for p in selectors.cell_peers(run.id)]
    cells = selectors.run_fingerprint_parts().cell_fingerprints()
    cell = (other.suite, other.benchmark, other.base_model)
    _write(export_warehouse, ("UPDATE runs SET state = 'eval_failed', state_detail = 'changed once' WHERE id = ?",
                              [other.id]),
           ("INSERT INTO evaluations VALUES ('rerun-3', ?, 'rerun', 0.375, '{}', '{}', "
            "TIMESTAMP '2031-01-01 00:00:00')", [other.id]))
    once = selectors.run_fingerprints()
    assert {k for k in once if once[k] != fingerprints[k]} == {other.id}  # not the pages that offer it
    after = selectors.run_fingerprint_parts().cell_fingerprints()
    assert {c for c in after if after[c] != cells[c]} == {cell}  # its cell's file is written again
    facts = selectors.cell_facts(*cell)
    assert facts.runs[other.id].model_dump() == {"state": STATE_TEXT["eval_failed"], "score": "37.5"}
    assert set(facts.runs) == {r.id for r in runs if (r.suite, r.benchmark, r.base_model) == cell}

    _write(export_warehouse, ("UPDATE runs SET run_dir = run_dir || '-moved' WHERE id = ?", [other.id]))
    moved = selectors.run_fingerprints()
    assert {k for k in moved if moved[k] != once[k]} == {
        r.id for r in runs if r.id == other.id or other.id in [p.run.id for p in selectors.cell_peers(r.id)]}
    assert moved[run.id] != once[run.id]

    monkeypatch.setattr(compare, "PEERS_SHOWN", 0)  # other agents' runs are no longer on the page
    assert other.id not in [p.run.id for p in selectors.cell_peers(run.id)]
    hidden = selectors.run_fingerprints()
    _write(export_warehouse, ("UPDATE runs SET run_dir = run_dir || '-again' WHERE id = ?", [other.id]))
    twice = selectors.run_fingerprints()
    assert twice[other.id] != hidden[other.id] and twice[run.id] == hidden[run.id]


def _mtimes(outdir: Path) -> dict[str, int]:
    return {p.relative_to(outdir).as_posix(): p.stat().st_mtime_ns for p in outdir.rglob("*") if p.is_file()}


def test_an_unchanged_export_renders_and_writes_nothing(site_copy):
    outdir = site_copy.outdir
    export_site(outdir)  # the copy's warehouse has another version token: its site pages are rendered once more
    before = _mtimes(outdir)
    again = export_site(outdir)
    assert (again.runs_written, again.files_written, again.global_pages, again.search_seconds) == (0, 0, False, 0)
    assert again.runs_skipped == len(selectors.run_fingerprints())
    assert _mtimes(outdir) == before  # not one file written, the manifest included


def test_a_new_budget_reaches_every_runs_side_file_though_the_budgets_are_kept(site_copy):
    """Issue 24 (branch i24inc): the budgets every run's side file draws an axis for are kept in the manifest
    (``facts``) while the ``runs_listed`` digest is as it was; one run given a budget no run had changes that digest,
    so the budgets are read again and every run's side file gets the new axis."""
    outdir = site_copy.outdir
    export_site(outdir)
    kept = json.loads((outdir / ".export-manifest.json").read_text())["facts"]["budgets"]
    runs = selectors.list_runs(limit=None)[0]
    assert set(kept[1]) >= {r.budget_hours * 3600 for r in runs} and kept[1] == sorted(kept[1]) and len(runs) > 2
    hours = max(r.budget_hours for r in runs) + 7
    _write(site_copy.warehouse, ("UPDATE runs SET budget_hours = ? WHERE id = ?", [hours, runs[0].id]))
    changed = export_site(outdir)
    assert changed.runs_written == len(runs)  # the site fingerprint holds the budgets: every run's files again
    facts = json.loads((outdir / ".export-manifest.json").read_text())["facts"]["budgets"]
    assert facts[0] != kept[0] and hours * 3600 in facts[1]
    for run in runs[1:3]:
        side = json.loads((outdir / f"runs/{run.id}/compare.json").read_text())
        assert any(a["budget_s"] == hours * 3600 for a in side["axes"]), run.id


def test_one_changed_run_rewrites_its_files_and_its_search_index_and_no_site_page(site_copy):
    """Issue 24: a run's new trace (its steps and content hash; its score and list fields the same) renders that
    run's files and its search index, and no site page: none of them reads what changed (export.inputs)."""
    outdir, added = site_copy.outdir, site_copy.added
    export_site(outdir)
    before = _mtimes(outdir)
    content_hash = selectors.run_content_hashes()[added.other_run]
    output = selectors.whole_steps(added.other_run, after=added.other_step - 1, limit=1)[0].output
    _write(site_copy.warehouse,
           ("UPDATE steps SET output = 'now zanzibarquill only' WHERE run_id = ? AND idx = ?",
            [added.other_run, added.other_step]),
           ("UPDATE runs SET content_hash = 'changed' WHERE id = ?", [added.other_run]))
    changed = export_site(outdir)
    assert (changed.runs_written, changed.global_pages, changed.site_pages, changed.search_runs_indexed,
            changed.search_rebuilt) == (1, False, [], 1, False)
    assert "site pages unchanged" in str(changed)
    after = _mtimes(outdir)
    written = {name for name, mtime in after.items() if before.get(name) != mtime}
    run = added.other_run
    own = {n for n in written if n.startswith((f"runs/{run}/", f"api/runs/{run}/", f"api/runs/{run}.json",
                                                 f"pagefind/delta/{run}/"))}
    assert f"runs/{run}/index.html" in own and f"pagefind/delta/{run}/pagefind-entry.json" in own
    search = {"pagefind/shards.json", ".export-manifest.json"}
    # nothing else: no site page, nothing of another run, nothing of the base search bundle
    assert written - own == search, written - own
    assert set(before) - set(after) == set()  # nothing removed either
    assert json.loads((outdir / "pagefind/shards.json").read_text()) == {"merge": [f"delta/{run}/"], "stale": [run]}

    # The run changed back: its own index goes, and the base bundle's records of it count again.
    _write(site_copy.warehouse,
           ("UPDATE steps SET output = ? WHERE run_id = ? AND idx = ?", [output, run, added.other_step]),
           ("UPDATE runs SET content_hash = ? WHERE id = ?", [content_hash, run]))
    back = export_site(outdir)
    assert (back.runs_written, back.search_runs_indexed) == (1, 0)
    assert json.loads((outdir / "pagefind/shards.json").read_text()) == {"merge": [], "stale": []}
    assert not (outdir / "pagefind/delta").exists()
    assert [f["url"] for f in search_fragments(outdir) if OTHER_WORD in f["content"]] == [
        f"runs/{run}/index.html#step-{added.other_step}"]


def test_an_export_that_stops_midway_leaves_the_manifest_and_its_runs_pending(site_copy, monkeypatch):
    """Issue 24 (branch i24py): the manifest is written once, when the export finishes (json's dump of ~1.4 MB at
    K=90 was made twice: once more before the runs were written, vouching only for the runs left untouched).
    Until then PENDING names the runs, cell files and site pages being written: an export that stopped midway is
    finished by the next one, which writes those runs again even when their fingerprints are back to what the
    manifest holds, and walks the tree for its size."""
    outdir, run = site_copy.outdir, site_copy.added.other_run
    export_site(outdir)  # the copy's warehouse has another version token: its site pages are rendered once more
    before = _digest(outdir)
    content_hash = selectors.run_content_hashes()[run]
    _write(site_copy.warehouse, ("UPDATE runs SET content_hash = 'changed' WHERE id = ?", [run]))
    manifests: list[int] = []
    write_manifest = Exporter.write_manifest

    def counted(self, *args, **kwargs):
        manifests.append(1)
        write_manifest(self, *args, **kwargs)

    def stop(self, run_id):
        (outdir / f"runs/{run_id}/index.html").write_text("cut short")
        raise RuntimeError("stopped")

    monkeypatch.setattr(Exporter, "write_manifest", counted)
    monkeypatch.setattr(Exporter, "rewrite_run", stop)
    with pytest.raises(RuntimeError, match="stopped"):
        export_site(outdir)
    assert manifests == [] and json.loads((outdir / PENDING).read_text())["runs"] == [run]
    monkeypatch.setattr(Exporter, "rewrite_run", lambda self, run_id: (self.remove_run(run_id),
                                                                        self.run_pages(run_id)))
    # back as the manifest has it: its fingerprint is the manifest's again, its page still the one cut short
    _write(site_copy.warehouse, ("UPDATE runs SET content_hash = ? WHERE id = ?", [content_hash, run]))
    finished = export_site(outdir)
    assert finished.runs_written == 1 and manifests == [1] and not (outdir / PENDING).exists()
    walked = [p.stat().st_size for p in outdir.rglob("*") if p.is_file()]
    assert (finished.files, finished.bytes) == (len(walked), sum(walked))
    after = _digest(outdir)
    assert {k: v for k, v in after.items() if k != ".export-manifest.json"} == \
        {k: v for k, v in before.items() if k != ".export-manifest.json"}


def test_a_static_file_is_copied_again_only_when_it_or_its_copy_changed(site_copy, monkeypatch):
    """Issue 24 (branch i24py): each export compared every static file its pages load with its copy (plotly.js,
    ~4.9 MB, read twice: ~12 CPU ms at K=90 per one-run export); now only when the manifest's stat of the file
    and of its copy (``copy_key``) is not as it was. A copy written to, even to the same size with its
    modification time set back, is copied again."""
    outdir, run = site_copy.outdir, site_copy.added.other_run
    # the copied site's files are new inodes: compared once by the next export that renders a page, and their
    # stats kept
    _write(site_copy.warehouse, ("UPDATE runs SET content_hash = 'first' WHERE id = ?", [run]))
    export_site(outdir)
    written: list[str] = []
    write = Exporter.write

    def spied(self, file, data, **kwargs):
        written.append(file)
        write(self, file, data, **kwargs)

    monkeypatch.setattr(Exporter, "write", spied)
    _write(site_copy.warehouse, ("UPDATE runs SET content_hash = 'changed' WHERE id = ?", [run]))
    changed = export_site(outdir)
    assert changed.runs_written == 1 and f"runs/{run}/index.html" in written
    assert not [file for file in written if file.startswith("static/")]

    copy = outdir / "static/css/site.css"
    stat, text = copy.stat(), copy.read_text()
    time.sleep(0.05)  # past the file system's timestamp granularity
    copy.write_text(text.replace("{", "[", 1))
    os.utime(copy, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert (copy.stat().st_size, copy.stat().st_mtime_ns) == (stat.st_size, stat.st_mtime_ns)
    _write(site_copy.warehouse, ("UPDATE runs SET content_hash = 'again' WHERE id = ?", [run]))
    written.clear()
    again = export_site(outdir)  # a run page rendered: the static files it loads checked
    assert again.runs_written == 1 and copy.read_text() == text
    assert [file for file in written if file.startswith("static/")] == ["static/css/site.css"]


def test_an_export_runs_with_the_objects_held_before_it_out_of_the_collectors_sight(site_copy, monkeypatch):
    """Issue 24 (branch i24py): a full collection in a one-run export at K=90 walked every object of the process
    (~55-85 CPU ms, in 2 of 3 warm rounds); the export freezes what was there before it (``spared_heap``) and
    unfreezes it at the end, also when it fails, and leaves a process that froze its own objects as it was."""
    outdir, run = site_copy.outdir, site_copy.added.other_run
    seen: list[int] = []
    write_runs = Exporter.write_runs

    def spied(self, *args, **kwargs):
        seen.append(gc.get_freeze_count())
        write_runs(self, *args, **kwargs)

    monkeypatch.setattr(Exporter, "write_runs", spied)
    assert gc.get_freeze_count() == 0
    _write(site_copy.warehouse, ("UPDATE runs SET content_hash = 'changed' WHERE id = ?", [run]))
    assert export_site(outdir).runs_written == 1
    assert seen[0] > 0 and gc.get_freeze_count() == 0
    with pytest.raises(RuntimeError), spared_heap():
        assert gc.get_freeze_count() > 0
        raise RuntimeError("stopped")
    assert gc.get_freeze_count() == 0
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with spared_heap():
            assert gc.get_freeze_count() == frozen
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()


def test_the_code_fingerprint_is_kept_while_no_rendering_file_changed(tmp_path, settings):
    """Issue 24 (branch i24py): the code fingerprint (every rendering file's bytes hashed, ~8 CPU ms) is the
    manifest's while a stat of each file (path, size, inode, modification and change times) is as it was; a file
    written, even to the same size with its modification time set back, or added, computes it again."""
    root = tmp_path / "src"
    for name, text in (("traces/views.py", "A = 1\n"), ("traces/notes.md", "not code"),
                       ("traces/__pycache__/views.json", "{}"), ("templates/run/page.html", "<p>one</p>"),
                       ("templates/base.html", "<html>")):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    folders = ("traces", "templates")
    files = code_files(str(root), folders)
    assert [name for name, _ in files] == ["traces/views.py", "templates/base.html", "templates/run/page.html"]
    assert code_key(code_files(str(root), folders)) == code_key(files)

    settings.BASE_DIR = root
    monkey = Exporter(tmp_path / "site")
    computed = monkey.code_fingerprint(None)
    assert computed == code_digest(str(root), code_files(str(root)))
    kept = {"code": monkey.facts["code"]}
    assert Exporter(tmp_path / "site").code_fingerprint(kept) == computed
    # the manifest's value is taken as it is while the stats are (no file read)
    assert Exporter(tmp_path / "site").code_fingerprint({"code": [kept["code"][0], ["as kept"]]}) == "as kept"

    page = root / "templates/run/page.html"
    stat = page.stat()
    time.sleep(0.05)  # past the file system's timestamp granularity
    page.write_text("<p>two</p>")
    os.utime(page, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert (page.stat().st_size, page.stat().st_mtime_ns) == (stat.st_size, stat.st_mtime_ns)
    edited = Exporter(tmp_path / "site").code_fingerprint({"code": [kept["code"][0], ["as kept"]]})
    assert edited not in (computed, "as kept") and edited == code_digest(str(root), code_files(str(root)))
    edited_key = code_key(code_files(str(root), folders))
    (root / "templates/new.html").write_text("")
    assert code_key(code_files(str(root), folders)) not in (edited_key, code_key(files))


def test_each_run_costs_a_bounded_number_of_files(shared_site):
    outdir = shared_site.outdir
    fragments = _fragments(outdir / "pagefind")
    by_run: dict[str, int] = {}
    for fragment in fragments:
        by_run[fragment["meta"]["run"]] = by_run.get(fragment["meta"]["run"], 0) + 1
    for run_id in selectors.run_fingerprints():
        pages = sum(-(-max(1, len(selectors.step_index(run_id, trace=t))) // STEPS_PER_PAGE)
                    for t in selectors.trace_names(run_id))
        assert by_run.get(run_id, 0) <= pages  # one search record per exported page of steps (none: no word)
        own = [p for p in (outdir / "runs" / run_id).rglob("*") if p.is_file()]
        own += [p for p in (outdir / "api/runs" / run_id).rglob("*") if p.is_file()] + [outdir / f"api/runs/{run_id}.json"]
        assert len(own) + by_run.get(run_id, 0) <= 20, (run_id, len(own), by_run.get(run_id))
    # the search's shared files (word index chunks, filters, its code) do not grow per step
    shared = [p for p in (outdir / "pagefind").rglob("*") if p.is_file() and "fragment" not in p.parts]
    steps = sum(r.step_count for r in selectors.list_runs(limit=None)[0])
    assert len(shared) < steps / 20, (len(shared), steps)


def test_a_changed_score_rewrites_the_runs_files_its_cell_file_and_the_site_pages_only(site_copy):
    """Issue 24: a run's new score (a rerun's evaluation) re-renders that run's files and the file of its cell
    (``cells/<suite>/<benchmark>/<base model>.json``: every run of the cell's state and score, which the pages
    offering the run read in the browser), and the site pages; not one file of the runs whose pages offer it. The
    comparisons read the changed run's side file, which is written again with its pages."""
    outdir = site_copy.outdir
    export_site(outdir)  # the copy's warehouse has another version token: its site pages are rendered once more
    fingerprints = selectors.run_fingerprints()
    offered = {r: [p.run.id for p in selectors.cell_peers(r)] for r in fingerprints}
    listing = {r: [o for o in fingerprints if r in offered[o]] for r in fingerprints}
    run = max(fingerprints, key=lambda r: (len(listing[r]), r))
    assert listing[run], "a run of the demo tree is offered by another run's page"
    changed_run = selectors.get_run(run)
    assert changed_run is not None
    cell = f"cells/{changed_run.suite}/{changed_run.benchmark}/{changed_run.base_model}.json"
    for other in listing[run]:  # each page that offers it links the cell file, and holds no state or score
        page = (outdir / f"runs/{other}/index.html").read_text()
        assert f'data-cell="../../{cell}"' in page
        assert f'data-run="{run}">' in page and '<span class="peer-facts"></span>' in page
    before = _mtimes(outdir)
    _write(site_copy.warehouse, ("INSERT INTO evaluations VALUES ('rerun-2', ?, 'rerun', 0.625, '{}', '{\"by\": "
                                 "\"test\"}', TIMESTAMP '2031-01-01 00:00:00')", [run]))
    changed = export_site(outdir)
    assert (changed.runs_written, changed.runs_refreshed, changed.global_pages) == (1, 0, True)
    # the site pages that read evaluations (the runs list and its twin; those over the latest runs when it is one)
    assert {"traces:runs", "api:runs"} <= set(changed.site_pages) <= set(_reading(("evaluations", "latest_runs")))
    written = {n for n, m in _mtimes(outdir).items() if before.get(n) != m}
    own = {n for n in written if n.startswith((f"runs/{run}/", f"api/runs/{run}/", f"api/runs/{run}."))}
    assert f"runs/{run}/index.html" in own and f"runs/{run}/compare.json" in written
    assert cell in written
    assert json.loads((outdir / cell).read_text())["runs"][run] == {"state": changed_run.state_text,
                                                                    "score": "62.5"}
    rest = written - own - {cell, ".export-manifest.json"}
    assert not {n for n in rest if n.startswith(("runs/", "api/runs/", "compare/", "cells/", "pagefind/"))} \
        - {"runs/index.html"}, rest  # the site's pages only: nothing of another run, no other cell
    evaluations = next(r for r in json.loads((outdir / f"runs/{run}/compare.json").read_text())["facts"]
                       if r["key"] == "evaluations")
    assert "rerun 62.5%" in evaluations["value"]
    assert set(before) - set(_mtimes(outdir)) == set()  # nothing removed
    assert_no_broken_link(outdir)


def _reading(sources: tuple[str, ...]) -> list[str]:
    """The site declarations (URL names) that name one of ``sources`` among their inputs (export.inputs)."""
    return [name for name, d in Exporter(Path("unused")).site_declarations().items()
            if set(d.inputs or ()) & set(sources)]


def _site_files(outdir: Path, names: list[str]) -> set[str]:
    """The files of the site declarations ``names``, as the export's manifest lists them."""
    pages = json.loads((outdir / ".export-manifest.json").read_text())["pages"]
    return {file for name in names for file in pages[name]["files"]}


def test_a_rerun_score_renders_the_site_pages_that_show_it_and_no_other(site_copy):
    """Issue 24: a latest run's new score, stored by the rerun service, renders again the site pages that read
    scores (the leaderboard from runs, the usage plot, the analysis, the runs list and their twins), which then show
    it; not the published charts or the judges' report card, whose inputs did not change."""
    from traces import services

    outdir = site_copy.outdir
    export_site(outdir)
    run = next(r for r in selectors.list_runs(limit=None)[0] if r.is_latest and r.score is not None
               and not r.method.startswith("baseline"))
    before = _mtimes(outdir)
    services.add_evaluation(run_id=run.id, accuracy=0.0625, metrics={"accuracy": 0.0625}, provenance={"by": "test"},
                            evaluation_id="rerun-site-pages")
    changed = export_site(outdir)
    scores = _reading(("evaluations", "latest_runs"))
    assert set(changed.site_pages) == set(scores), changed.site_pages
    assert not {"traces:judges", "leaderboard:plot-budget-and-effort", "leaderboard:plot-time-spent"} & set(scores)
    written = {n for n, m in _mtimes(outdir).items() if before.get(n) != m}
    rendered_files = _site_files(outdir, changed.site_pages)
    site_written = {n for n in written if not n.startswith((f"runs/{run.id}/", f"api/runs/{run.id}", "cells/"))}
    assert site_written - {".export-manifest.json"} <= rendered_files  # nothing of a page not rendered
    # the pages showing it changed their bytes: the leaderboard from runs (its agent's averages), the analysis, the
    # runs list and their twins
    assert {"source/runs/index.html", "api/leaderboard/runs/era.json", "analysis/index.html", "api/analysis.json",
            "runs/index.html", "api/runs.json"} <= written
    listed = next(r for r in json.loads((outdir / "api/runs.json").read_text())["runs"] if r["id"] == run.id)
    assert listed["score"] == 6.25


def test_an_override_renders_the_site_pages_that_show_verdicts(site_copy):
    """Issue 24: a reviewer's override (traces.services.override_verdict) renders again the site pages that read
    overrides (the judges' report card, the runs list, the pages over the latest runs), not the published charts."""
    from traces import services

    outdir = site_copy.outdir
    export_site(outdir)
    run = next(r for r in selectors.list_runs(limit=None)[0] if r.is_latest and not r.method.startswith("baseline"))
    before = _mtimes(outdir)
    services.override_verdict(run_id=run.id, kind="contamination", flagged=True, reason="seen in the trace",
                              reviewer="test")
    changed = export_site(outdir)
    assert set(changed.site_pages) == set(_reading(("overrides", "latest_runs"))), changed.site_pages
    assert {"traces:judges", "api:judges", "traces:runs", "leaderboard:index"} <= set(changed.site_pages)
    assert "leaderboard:plot-time-vs-score" not in changed.site_pages
    written = {n for n, m in _mtimes(outdir).items() if before.get(n) != m}
    assert {"judges/index.html", "api/judges.json", "runs/index.html", "api/runs.json"} <= written
    listed = next(r for r in json.loads((outdir / "api/runs.json").read_text())["runs"] if r["id"] == run.id)
    assert (listed["overrides"], listed["flagged"]) == ({"contamination": True}, True)


def test_a_peer_that_stops_counting_rewrites_the_pages_that_offer_it(site_copy):
    """A run that stops being the latest of its cell changes what the pages offering it say of it ("The attempt
    that counts", "older attempt" in its title): those pages and their JSON twins are written again
    (``runs_refreshed``), not their step pages or side files; a run without peers left links no cell file."""
    outdir = site_copy.outdir
    export_site(outdir)
    fingerprints = selectors.run_fingerprints()
    offered = {r: [p.run.id for p in selectors.cell_peers(r)] for r in fingerprints}
    latest = {r.id for r in selectors.list_runs(limit=None)[0] if r.is_latest}
    run = max((r for r in fingerprints if r in latest), key=lambda r: (sum(r in o for o in offered.values()), r))
    listing = {o for o in fingerprints if run in offered[o]}
    assert listing
    before = _mtimes(outdir)
    _write(site_copy.warehouse, ("UPDATE runs SET is_latest = false WHERE id = ?", [run]))
    changed = export_site(outdir)
    now = {r: [p.run.id for p in selectors.cell_peers(r)] for r in fingerprints}
    relisted = {o for o in fingerprints if o != run and now[o] != offered[o]}  # the run left their lists
    written = {n for n, m in _mtimes(outdir).items() if before.get(n) != m}
    refreshed = {o for o in fingerprints if o != run and any(n.startswith(f"runs/{o}/") for n in written)}
    assert refreshed <= listing | relisted and changed.runs_refreshed >= len(refreshed) > 0
    for other in refreshed:
        theirs = {n for n in written if n.startswith((f"runs/{other}/", f"api/runs/{other}/", f"api/runs/{other}."))}
        assert theirs <= {f"runs/{other}/index.html", f"api/runs/{other}.json"}, theirs
        twin = json.loads((outdir / f"api/runs/{other}.json").read_text())
        assert [p["run"]["id"] for p in twin["peers"]] == now[other]
        assert all(set(p["run"]) >= {"id", "run_dir", "title", "is_latest"} and "score" not in p["run"]
                   and "state" not in p["run"] for p in twin["peers"])
    assert_no_broken_link(outdir)


def test_the_export_shows_runs_pages_and_time_left(site_copy, capsys):
    outdir, added = site_copy.outdir, site_copy.added
    _write(site_copy.warehouse, ("UPDATE runs SET content_hash = 'changed' WHERE id = ?", [added.deep_run]))
    messages: list[str] = []
    report = export_site(outdir, progress=messages.append, bar=True)
    assert report.runs_written == 1
    bar = capsys.readouterr().err
    # tqdm's bar: runs done of the total, the time left, and the run's HTML pages rendered
    pages = len(list((outdir / "runs" / added.deep_run).rglob("*.html")))
    assert pages >= 2 and re.search(rf"runs: 100%\|.*\| 1/1 \[[\d:]+<[\d:]+, .*pages={pages}\]", bar), bar
    assert "indexing 1 changed runs for the search" in messages
    assert not [m for m in messages if m.startswith("rendering the site pages")]  # a new trace: no site page


def test_an_export_of_an_earlier_layout_loses_its_pair_comparisons(tmp_path, monkeypatch):
    """Manifest version 3 wrote one page per compared pair (``compare/<a>-<b>/``); an export over such a folder
    removes them (and nothing else under compare/) before writing the one comparison page."""
    import export.exporter as exporter_module

    (tmp_path / "compare/r1-r2").mkdir(parents=True)
    (tmp_path / "compare/r1-r2/index.html").write_text("old")
    (tmp_path / "compare/index.html").write_text("shell")
    (tmp_path / ".export-manifest.json").write_text(json.dumps({"version": 3}))
    monkeypatch.setattr(exporter_module, "current_fingerprints", lambda *args: (_ for _ in ()).throw(RuntimeError))
    with pytest.raises(RuntimeError):  # stopped right after the layout check, before reading any run
        Exporter(tmp_path).run()
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == [
        ".export-manifest.json", "compare", "compare/index.html"]


def test_a_site_page_links_to_a_runs_step_by_the_page_that_holds_it():
    """A step linked from a site page (the judges' report card cites ``/runs/<id>/?step=24``) is the file of the
    page holding it, at its anchor; the whole export stopped with "steps of run ... linked from outside its pages"
    on the K=9 demo warehouse. Anything but ASCII digits is still no file."""
    from ptbsite.distill import NotExported
    from traces.urls import run_file

    assert run_file({"run_id": "abc123", "step": "24"}, None) == ("runs/abc123/index.html", "", "step-24")
    assert run_file({"run_id": "abc123", "step": str(2 * STEPS_PER_PAGE + 50)}, None) == (
        "runs/abc123/steps/3.html", "", f"step-{2 * STEPS_PER_PAGE + 50}")
    assert run_file({"run_id": "abc123"}, None) == "runs/abc123/index.html"
    for params in ({"run_id": "abc123", "step": "²"}, {"run_id": "abc123", "step": "4", "trace": "judge"}):
        with pytest.raises(NotExported):
            run_file(dict(params), None)
