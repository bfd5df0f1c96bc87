"""The public site as static files: ``python manage.py export_static OUTDIR``. Pages are the live views rendered
through ``RequestFactory`` for every URL pattern an app's ``urls.py`` declares exportable (``ptbsite.distill``),
with local links made relative; layout, determinism and increments: docs/export.md."""
from __future__ import annotations

import bisect
import functools
import gc
import hashlib
import html
import json
import os
import posixpath
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.contrib.staticfiles import finders
from django.template.loader import render_to_string
from django.test import RequestFactory
from django.urls import Resolver404, URLResolver, get_resolver, resolve, reverse
from tqdm import tqdm

from ptbsite import warehouse
from ptbsite.distill import API_EXPORTS, STEPS_PER_PAGE, Distill, NotExported, trace_page_file
from traces import selectors as runs
from traces.selectors.compare import MAX_RUNS
from traces.vocabulary import PHASES

from .inputs import SOURCES, current_digests, current_fingerprints, snapshot_changes
from .search import PAGEFIND_VERSION, SEARCH_FILTERS, SearchRecord, SearchStep, has_word, step_text, write_bundles

MANIFEST = ".export-manifest.json"
# What an export that has not finished is writing, beside the manifest of the one before (Exporter.vouched):
# {"runs": run ids, "cells": cell files, "pages": site declarations}; removed once the new manifest is written.
PENDING = ".export-pending.json"
# 7: the runs' fingerprints and own parts only with their fingerprint rows; 6: site pages' inputs per declaration; 5:
# peers' states and scores from one file per cell; 4: comparisons built in the browser
MANIFEST_VERSION = 7
EXPORT_ONLY = "export-only"  # the manifest's name for the pages only the export has (EXPORT_PAGES, LIVE_ONLY)
SEARCH_DIR = "pagefind"   # the Pagefind bundle of every step of every run (export/search.py)
SEARCH_ENTRY = f"{SEARCH_DIR}/pagefind-entry.json"  # written last: the bundle's pointer to its other files
SEARCH_SHARDS = f"{SEARCH_DIR}/shards.json"  # the search page's list of indexes to merge and base records to hide
SEARCH_DELTA = f"{SEARCH_DIR}/delta"  # one Pagefind index per run changed since the base bundle was built
# Runs changed (added, re-ingested, renamed, removed) since the base bundle was built, above which it is built again
# whole instead of one more merged index: the search page merges one index per changed run.
MAX_DELTA_RUNS = 16
SEARCH_QUERY = {"q", "run", *(name for name, _ in SEARCH_FILTERS)}
COMPARE_SIDE = "compare.json"  # runs/<id>/compare.json: what a comparison shows of the run (compare_side)
# cells/<suite>/<benchmark>/<base model>.json: the state and score of each run of a cell (traces.selectors.cell_facts),
# which a run page's "Compare with" shows of its peers (static/js/static_peers.js; the page links it as /cells/...).
CELLS_DIR = "cells"
# Pages only the export has (no view of the live site renders them): their live-looking path -> (file, template,
# context, the query its page reads in the browser: a link to it may carry that query and no other). The
# comparison page is one shell that builds ``?runs=a,b`` from the runs' side files (static/js/static_compare.js).
EXPORT_PAGES = {
    "/search/": ("search/index.html", "export/search.html", {"filters": SEARCH_FILTERS}, SEARCH_QUERY),
    "/compare/": ("compare/index.html", "export/compare.html",
                  {"side": COMPARE_SIDE, "max_runs": MAX_RUNS, "phases": PHASES}, {"runs"}),
}
LIVE_ONLY = "live-only.html"
# Query parameters whose views exist only on the live site: a link with one of them leads to LIVE_ONLY.
LIVE_ONLY_PARAMS = {"facet", "suite", "latest"}
_SAFE = re.compile(r"^[A-Za-z0-9._-]+$")
# data-plotly: plots.js loads it; data-cell: static_peers.js
_LINK = re.compile(r'(\s(?:href|src|action|data-click-url|data-plotly|data-cell)=")([^"]*)(")')
_HTMX = re.compile(r'\s+hx-[a-z-]+="[^"]*"')  # swaps need the server; the static pages use plain links
_RENDERING_CODE = ("leaderboard", "traces", "export", "templates", "static", "suites")  # suites: display names
_OWN = runs.FingerprintRow._fields.index("own")  # of a manifest's fingerprint row (Exporter.vouched)
_CODE_SUFFIXES = frozenset((".py", ".html", ".js", ".css", ".json"))  # of the files code_digest hashes
# Runs render in threads: DuckDB releases the GIL while it queries, so one thread's query overlaps another's
# template rendering (about 1.7x faster on 2 cores). Each run's files are its own, so the order does not matter.
WORKERS = min(8, (os.cpu_count() or 1) + 1)
# DuckDB's threads while the export reads (warehouse.duckdb_threads): its queries are many and small (a run's
# pages ~30), and the export's concurrency is its own WORKERS; on all cores each query cost ~2x the CPU.
DUCKDB_THREADS = 1
# Runs whose pages' reads are read ahead together (ReadAhead): one query per table for them all.
READ_AHEAD = 32
# Trace bytes whose steps the search reads at once (search_batches): the whole texts are held until indexed.
SEARCH_AHEAD_BYTES = 64 * 1024 * 1024
RESOLVED_KEPT = 10_000  # live paths whose resolution the exporter keeps (Exporter.resolved)


class ExportError(RuntimeError):
    """A page links to a URL the export has no file for, or a page failed to render (status is not 200)."""


@dataclass
class ExportReport:
    """What one export did. ``files``/``bytes``: everything under OUTDIR now; ``files_written``: files whose
    bytes changed in this export; ``seconds``: wall time; ``global_pages``: some of the site's pages (leaderboard,
    plots, runs list, analysis, judges) were rendered, those of the declarations (URL names) in ``site_pages``
    whose inputs changed (``Exporter.site_pages``), in ``site_pages_cpu`` CPU seconds of this process (their
    sources' digests included); ``search_records``: the steps the search finds after
    this export (0 when the search was up to date), ``search_runs_indexed`` the runs whose steps were indexed in
    ``search_seconds``, ``search_rebuilt`` whether the base bundle was built again whole."""

    outdir: str
    runs_written: int = 0  # runs whose files were rendered: whole, or (``runs_refreshed`` of them) their peers' part
    runs_skipped: int = 0
    runs_removed: int = 0
    runs_refreshed: int = 0
    files: int = 0
    bytes: int = 0
    files_written: int = 0
    seconds: float = 0.0
    search_records: int = 0
    search_seconds: float = 0.0
    search_runs_indexed: int = 0
    search_rebuilt: bool = False
    global_pages: bool = False
    site_pages: list[str] = field(default_factory=list)
    site_pages_cpu: float = 0.0

    def __str__(self) -> str:
        if not self.search_seconds:
            search = "search index unchanged"
        elif self.search_rebuilt:
            search = f"search index rebuilt: {self.search_records} steps in {self.search_seconds:.1f} s"
        else:
            search = (f"search index updated: {self.search_runs_indexed} runs indexed in {self.search_seconds:.1f} s,"
                      f" {self.search_records} steps")
        pages = (f"site pages rendered: {', '.join(self.site_pages)}" if self.global_pages
                 else "site pages unchanged")
        return (f"{self.outdir}: {self.runs_written + self.runs_skipped} runs ({self.runs_written} written, "
                f"{self.runs_skipped} unchanged, {self.runs_removed} removed); {self.files} files "
                f"({self.files_written} written), {self.bytes / 1e6:.1f} MB; {self.seconds:.1f} s ({pages}; {search})")


@dataclass
class TracePages:
    """The static pages of one trace: ``cursors[n - 1]`` is the ``after`` cursor of page n, ``starts[n - 1]`` its
    first step index. A trace without steps has one empty page."""

    cursors: list[int]
    starts: list[int]

    @classmethod
    def of(cls, indices: list[int]) -> TracePages:
        starts = indices[::STEPS_PER_PAGE] or [0]
        cursors = [-1] + [indices[i - 1] for i in range(STEPS_PER_PAGE, len(indices), STEPS_PER_PAGE)]
        return cls(cursors, starts)

    def page_of_step(self, index: int) -> int:
        return max(1, bisect.bisect_right(self.starts, index))

    def page_of_cursor(self, after: int) -> int:
        try:
            return self.cursors.index(after) + 1
        except ValueError:
            raise ExportError(f"no static page of steps after {after}") from None


@dataclass
class RunPages:
    """A run's traces as exported: {trace name: TracePages}, ``agent`` always present."""

    run_id: str
    traces: dict[str, TracePages] = field(default_factory=dict)
    steps_per_page: int = STEPS_PER_PAGE
    # {(live path, query): (file, browser query, fragment)} of the links of the run's pages (Exporter.localize): a
    # run's pages link the same URLs again and again, and none of them after the run is written.
    targets: dict[tuple[str, str], tuple[str, str, str]] = field(default_factory=dict, repr=False, compare=False)

    def file(self, trace: str, page: int) -> str:
        """The file of page ``page`` (1-based) of a trace (``ptbsite.distill.trace_page_file``)."""
        return trace_page_file(self.run_id, trace, page)

    def trace(self, name: str) -> TracePages:
        if name not in self.traces:
            raise ExportError(f"run {self.run_id} has no trace {name!r}")
        return self.traces[name]


@contextmanager
def spared_heap() -> Iterator[None]:
    """The objects the process holds on entry (Django, the URL resolver, the modules imported) moved out of the
    garbage collector's sight within the block (``gc.freeze``; back on exit, ``gc.unfreeze``), so that a full
    collection in it walks only what the block made (a one-run export at K=90 made one in 2 of 3 warm rounds,
    ~55-85 CPU ms each; ~5 ms of collections with them frozen). Nothing when some are frozen already (a process
    that froze its own, as ``ptbsite.wsgi`` does)."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextmanager
def export_reads() -> Iterator[None]:
    """The warehouse as the export reads it: DuckDB on DUCKDB_THREADS threads (``warehouse.duckdb_threads``), each
    unit of work on a cursor an earlier one left (``warehouse.hold_cursors``: a run's pages are ~10 units)."""
    with warehouse.duckdb_threads(DUCKDB_THREADS), warehouse.hold_cursors():
        yield


class ReadAhead:
    """What the pages of the runs to write read, read ahead (``traces.selectors.read_ahead``) READ_AHEAD runs at a
    time in the order they are written (``order``; their reads in ``everything``, {run id: Run}), with the first
    page of each trace as its pages read it (STEPS_PER_PAGE steps; the run's JSON twin PAGE_SIZE) and what its
    comparison side file reads (its phase axes for ``budgets``, its first steps): the first thread
    to :meth:`take` a run of a batch reads the whole batch; each run's part is handed out once, then dropped."""

    def __init__(self, order: list[str], everything: dict[str, runs.Run], budgets: list[float], *,
                 search: bool = False):
        self.order = order
        self.everything = everything
        self.budgets = budgets  # the comparison sides' axes (Exporter.budgets)
        self.batch_of = {run_id: n // READ_AHEAD for n, run_id in enumerate(order)}
        self.locks = [threading.Lock() for _ in range(0, len(order), READ_AHEAD)]
        self.read: dict[int, dict[str, dict]] = {}
        # the cells' files' facts of the runs' cells, read with their runs (Exporter.write_cells)
        self.cell_facts: dict[tuple[str, str, str], runs.CellFacts] = {}
        # with ``search``, what the search reads of each run (read_search_ahead's answers), from the same rows
        self.whole_steps: dict[str, dict] | None = {} if search else None

    def take(self, run_id: str) -> dict:
        """The answers read ahead for ``run_id``'s pages (``warehouse.once.reads_kept``'s ``ahead``); {} when
        it is not among the runs to write, or taken already."""
        n = self.batch_of.get(run_id)
        if n is None:
            return {}
        with self.locks[n]:
            if n not in self.read:
                batch = self.order[n * READ_AHEAD:(n + 1) * READ_AHEAD]
                self.read[n] = runs.read_ahead([self.everything[r] for r in batch if r in self.everything],
                                               agent_pages=(STEPS_PER_PAGE, runs.PAGE_SIZE), trace_pages=STEPS_PER_PAGE,
                                               side_budgets=self.budgets, cell_facts=self.cell_facts,
                                               whole_steps=self.whole_steps)
            return self.read[n].pop(run_id, {})


def search_batches(run_ids: list[str], everything: dict[str, runs.Run]) -> Iterator[list[str]]:
    """``run_ids`` in order, in batches whose steps the search reads together (``traces.selectors.read_search_ahead``):
    at most READ_AHEAD runs and SEARCH_AHEAD_BYTES of traces (``Run.trace_bytes``; a larger run alone)."""
    batch: list[str] = []
    size = 0
    for run_id in run_ids:
        more = everything[run_id].trace_bytes or 0
        if batch and (len(batch) == READ_AHEAD or size + more > SEARCH_AHEAD_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(run_id)
        size += more
    if batch:
        yield batch


def _safe(value: str, what: str) -> str:
    if not _SAFE.match(value):
        raise ExportError(f"{what} {value!r} cannot name a file")
    return value


def cell_file(suite: str, benchmark: str, base_model: str) -> str:
    """The file of a cell's runs' states and scores (``traces.selectors.cell_facts``), relative to the export
    root: ``cells/<suite>/<benchmark>/<base model>.json``. ExportError for a name that cannot name a file (or a
    name of dots only: a folder)."""
    for value, what in ((suite, "suite"), (benchmark, "benchmark"), (base_model, "base model")):
        if not value.strip("."):
            raise ExportError(f"{what} {value!r} cannot name a file")
        _safe(value, what)
    return f"{CELLS_DIR}/{suite}/{benchmark}/{base_model}.json"


class Exporter:
    """Writes the public site under ``outdir``; :meth:`run` does one export and returns its ExportReport."""

    def __init__(self, outdir: Path, *, progress: Callable[[str], None] | None = None, bar: bool | None = False):
        self.outdir = Path(outdir)
        self.factory = RequestFactory()
        self.progress = progress or (lambda message: None)
        self.bar = bar  # a tqdm bar of runs and pages written (None: on a terminal only)
        self.pages_written = 0
        self.static_used: set[str] = set()
        self.report = ExportReport(outdir=str(self.outdir))
        self._count_lock = threading.Lock()
        self._targets: dict[tuple[str, str], tuple[str, str, str]] = {}  # the site pages' links (localize)
        self._resolved: dict[str, tuple[str, dict] | None] = {}  # resolved
        self._budgets: list[float] | None = None
        self.facts: dict[str, list] = {}  # the manifest's facts (kept_fact)
        # the cell files' facts read ahead with the cells' runs (ReadAhead.cell_facts; write_cells)
        self.cells_read: dict[tuple[str, str, str], runs.CellFacts] = {}
        self.search_read: dict[str, dict] = {}  # the search's reads of the runs written, read ahead (write_runs)
        self._grown = (0, 0)  # files and bytes this export added to outdir's tree (grew)
        self._reads_held = False  # within run()'s export_reads (write_runs enters none of its own: ~4 statements)
        self.routes, self.path_params = declared_routes()

    # --- rendering -------------------------------------------------------------------------------------------
    def request(self, url: str):
        """A GET of ``url`` as an anonymous visitor, with ``request.static_export`` set."""
        request = self.factory.get(url)
        request.user = AnonymousUser()
        request.static_export = True
        return request

    def fetch(self, url: str) -> bytes:
        """The body of the live site's response to GET ``url`` (the view called directly, as an anonymous
        visitor, with ``request.static_export``). Raises ExportError unless the status is 200."""
        request = self.request(url)
        match = resolve(request.path_info)
        response = match.func(request, *match.args, **match.kwargs)
        if response.status_code != 200:
            raise ExportError(f"GET {url}: status {response.status_code}")
        return response.content

    def page(self, url: str, file: str, run: RunPages | None = None) -> None:
        """Render the page at live ``url`` into ``file`` (relative to outdir) with local links made relative."""
        self.write_page(self.fetch(url).decode(), url, file, run)
        with self._count_lock:
            self.pages_written += 1

    def write_page(self, body: str, url: str, file: str, run: RunPages | None = None) -> None:
        """Write the HTML ``body`` of the page at ``url`` into ``file``, without htmx swaps, links made relative."""
        body = _HTMX.sub("", body)
        body = _LINK.sub(lambda m: m[1] + html.escape(self.localize(html.unescape(m[2]), url, file, run)) + m[3],
                         body)
        self.write(file, body.encode())

    def export_only_pages(self) -> None:
        """The pages only the export has (EXPORT_PAGES): their templates rendered like the views' pages, with the
        site's context processors and ``request.static_export``."""
        for url, (file, template, context, _) in EXPORT_PAGES.items():
            self.write_page(render_to_string(template, context, request=self.request(url)), url, file)

    def write(self, file: str, data: bytes, *, count: bool = True) -> None:
        """Write ``data`` into ``file`` (relative to outdir) unless it holds those bytes already."""
        path = self.outdir / file
        old = path.read_bytes() if path.is_file() else None
        if old == data:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        if file != MANIFEST:
            self.grew(old is None, len(data) - len(old or b""))
        if count:
            with self._count_lock:
                self.report.files_written += 1

    def move_in(self, source: Path, file: str) -> None:
        """:meth:`write` for a file already on disk under outdir: ``source`` is renamed to ``file`` unless that
        file holds the same bytes already (then both stay as they are)."""
        path = self.outdir / file
        old = path.read_bytes() if path.is_file() else None
        new = source.read_bytes()
        if old == new:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        os.replace(source, path)
        self.grew(old is None, len(new) - len(old or b""))
        with self._count_lock:
            self.report.files_written += 1

    def grew(self, files: int, size: int) -> None:
        """Count ``files`` more files and ``size`` more bytes (fewer: negative) in outdir's tree since the export
        began (the manifest left out; :meth:`tree_size`)."""
        with self._count_lock:
            self._grown = (self._grown[0] + files, self._grown[1] + size)

    def forget(self, path: Path) -> None:
        """Count ``path`` (a file, or a folder and everything under it) out of outdir's tree, before it is
        removed (:meth:`grew`)."""
        if path.is_dir():
            files, size = _tree_size(str(path))
            self.grew(-files, -size)
        elif path.is_file():
            self.grew(-1, -path.stat().st_size)

    def tree_size(self, known: list | None) -> tuple[int, int]:
        """(files, bytes) under outdir now, the manifest and PENDING left out: ``known`` (what the previous manifest
        said of the tree it left, ``"tree"``) and what this export wrote and removed since (:meth:`grew`), else (no
        manifest, or one an export that did not finish left, :meth:`vouched`) the tree walked (~29,000 files at
        K=90)."""
        if isinstance(known, list) and len(known) == 2:
            return known[0] + self._grown[0], known[1] + self._grown[1]
        files, size = _tree_size(str(self.outdir))
        for bookkeeping in (MANIFEST, PENDING):
            if (self.outdir / bookkeeping).is_file():
                files, size = files - 1, size - (self.outdir / bookkeeping).stat().st_size
        return files, size

    # --- links -----------------------------------------------------------------------------------------------
    def localize(self, url: str, page_url: str, page_file: str, run: RunPages | None) -> str:
        """``url`` as found on the page served at ``page_url``, as a link relative to ``page_file``.

        Fragments and other sites' URLs stay as they are; ``?query`` alone is relative to the page's path.
        Raises ExportError for a local URL the export has no file for.
        """
        if not url or url.startswith("#") or urlsplit(url).scheme:
            return url
        absolute = urlsplit(page_url).path + url if url.startswith("?") else urljoin(page_url, url)
        parts = urlsplit(absolute)
        # a page links the same URLs again and again (nav, assets, its step pages): the site's in the exporter, a
        # run's with the run
        targets = run.targets if run is not None else self._targets
        key = (parts.path, parts.query)
        found = targets.get(key)
        if found is None:
            found = targets[key] = self.target(parts.path, dict(parse_qsl(parts.query)), run)
        file, query, fragment = found
        fragment = fragment or parts.fragment
        link = _relative(file, posixpath.dirname(page_file) or ".")
        return link + (f"?{query}" if query else "") + (f"#{fragment}" if fragment else "")

    def target(self, path: str, query: dict[str, str], run: RunPages | None) -> tuple[str, str, str]:
        """(file under outdir, query string kept for the browser, fragment) of a live path and its query: the
        pattern the path resolves to says, by its declaration (``ptbsite.distill``), which file holds it."""
        if (set(query) & LIVE_ONLY_PARAMS and query.get("suite", settings.DEFAULT_SUITE) != settings.DEFAULT_SUITE
                or "facet" in query or "latest" in query):
            return LIVE_ONLY, "", ""
        query = {k: v for k, v in query.items() if k != "suite"}  # the default suite is the exported one

        if path in EXPORT_PAGES:
            extra = set(query) - EXPORT_PAGES[path][3]
            if extra:
                raise ExportError(f"{path}?{urlencode(query)}: {', '.join(sorted(extra))} is not read by its page")
            return EXPORT_PAGES[path][0], urlencode(query), ""
        if path.startswith(f"/{CELLS_DIR}/"):
            names = path.removeprefix(f"/{CELLS_DIR}/").split("/")
            if len(names) != 3 or not names[2].endswith(".json"):
                raise ExportError(f"{path}: no static file for this URL")
            return cell_file(names[0], names[1], names[2].removesuffix(".json")), "", ""
        static = "/" + settings.STATIC_URL.lstrip("/")
        if path.startswith(static):
            name = path.removeprefix(static)
            self.static_used.add(name)
            return f"static/{name}", "", ""
        match = self.resolved(path)
        if match is None:
            raise ExportError(f"{path}: no static page for this URL")
        view_name, kwargs = match
        declared = self.routes.get(view_name)
        if declared is None:
            raise ExportError(f"{path}: no static page for this URL")
        if declared.live_only:
            return LIVE_ONLY, "", ""
        extra = set(query) - set(declared.query)
        if extra:
            raise ExportError(f"{path}?{urlencode(query)}: {', '.join(sorted(extra))} needs the live site")
        return self.file_of(declared, {**kwargs, **query}, run)

    def resolved(self, path: str) -> tuple[str, dict] | None:
        """(URL name, path parameters) of a live path (``django.urls.resolve``), None when no pattern matches; kept
        per path (a run page's links to its steps differ by their query only), up to RESOLVED_KEPT paths."""
        if path in self._resolved:
            return self._resolved[path]
        found: tuple[str, dict] | None
        try:
            match = resolve(path)
            found = (match.view_name, match.kwargs)
        except Resolver404:
            found = None
        if len(self._resolved) >= RESOLVED_KEPT:
            self._resolved.clear()
        self._resolved[path] = found
        return found

    @staticmethod
    def file_of(declared: Distill, params: dict, run: RunPages | None) -> tuple[str, str, str]:
        """(file, browser query, fragment) a declaration gives for ``params``; ExportError when it has none."""
        try:
            found = declared.file(dict(params), run) if declared.file else None
        except ExportError:
            raise
        except NotExported as exc:
            raise ExportError(str(exc)) from None
        if found is None:
            raise ExportError(f"{params}: no file declared")
        return (found, "", "") if isinstance(found, str) else found

    # --- the export ------------------------------------------------------------------------------------------
    def run(self) -> ExportReport:
        """Export the site; see the module docstring for what is written.

        The site's pages (leaderboard views, plots, runs list, analysis, judges and their JSON) are rendered per
        declaration when the inputs it declares changed (:meth:`site_pages`; their digests are read before the pages
        render, so a write in between renders them again next time); a run's files when its fingerprint or the
        site's changed (an unchanged run costs a compare in the manifest and a file stat); the search is updated for
        the runs whose steps or names changed (:meth:`update_search`). The objects the process held before are out
        of the garbage collector's sight meanwhile (:func:`spared_heap`)."""
        with spared_heap():
            return self._run()

    def _run(self) -> ExportReport:
        started = time.monotonic()
        self.outdir.mkdir(parents=True, exist_ok=True)
        manifest_path = self.outdir / MANIFEST
        previous = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
        if previous.get("version") != MANIFEST_VERSION:
            previous = {}
            self.remove_pair_comparisons()
        previous = self.vouched(previous)
        # One connection held open for the whole export: every selector's own connect() then reuses the open
        # database instead of opening the file again (~15 ms each); and read as export_reads says.
        with warehouse.connect(), export_reads():
            self._reads_held = True
            code = self.code_fingerprint(previous.get("facts"))
            parts, kept, digests = self.read_inputs(code, previous)
            owns, fingerprints = parts.owns, parts.combined()
            cell_files = {cell: cell_file(*cell) for cell in parts.cells}
            cell_of = {file: cell for cell, file in cell_files.items()}
            cells = {cell_files[cell]: fingerprint for cell, fingerprint in parts.cell_fingerprints().items()}
            cpu = time.process_time()
            site_pages = self.site_pages(code, fingerprints, previous.get("pages") or {}, digests)
            self.report.site_pages_cpu += time.process_time() - cpu
            site = self.site_fingerprint(code, digests["sources"], previous.get("facts"))
            known = previous.get("runs", {}) if previous.get("site") == site else {}
            known_own = previous.get("own", {}) if known else {}
            known_cells = previous.get("cells", {}) if previous.get("site") == site else {}
            for run_id in sorted(set(previous.get("runs", {})) - set(fingerprints)):
                self.remove_run(run_id)
                self.report.runs_removed += 1
            root = str(self.outdir)  # a stat per run: os.path on a str, a third of pathlib's CPU
            touched = [run_id for run_id, fingerprint in sorted(fingerprints.items())
                       if known.get(run_id) != fingerprint or not os.path.isfile(f"{root}/runs/{run_id}/index.html")]
            # A run whose own part is as exported and whose peers' identities changed (a run its page offers to
            # compare with was renamed, stopped or started counting, came or went): its page and its JSON twin are
            # rendered again (they list them). A peer's state and score are in its cell's file, written below; the
            # comparisons are built in the browser from each run's side file, written with the run's own files.
            peers = parts.peers_of(touched)
            refresh = {run_id: peers[run_id]
                       for run_id in touched if known_own.get(run_id) == owns[run_id]
                       and (self.outdir / f"runs/{run_id}/index.html").is_file()
                       and (self.outdir / f"runs/{run_id}/{COMPARE_SIDE}").is_file()}
            self.report.runs_skipped = len(fingerprints) - len(touched)
            # Until this export finishes, the manifest vouches only for the runs it does not touch (and for the
            # search it found): a crash midway leaves the changed runs to be written again next time (PENDING).
            stale_cells = sorted(f for f, fingerprint in cells.items()
                                 if known_cells.get(f) != fingerprint or not os.path.isfile(f"{root}/{f}"))
            if touched or self.report.runs_removed or stale_cells:
                (self.outdir / PENDING).write_text(json.dumps({"runs": touched, "cells": stale_cells,
                                                               "pages": self.report.site_pages}))
            # the touched runs and the peers their pages list, read together (the peers would be read by each page)
            read = self.read_runs(touched, len(fingerprints), [p for run_id in touched for p in peers.get(run_id, [])])
            self.write_runs(touched, read, refresh, peers)
            self.write_cells({f: cell_of[f] for f in stale_cells}, set(cells))
            wanted = set(touched)
            changed_runs = {run_id: run for run_id, run in read.items() if run_id in wanted and run_id not in refresh}
            search = self.update_search(site, changed_runs, parts.contents, previous.get("search"))
            self._reads_held = False
        copies = self.copy_static(previous.get("static"))
        self.write("favicon.ico", Path(finders.find("favicon.ico")).read_bytes())  # /favicon.ico, as the live site
        tree = self.tree_size(previous.get("tree"))
        self.write_manifest(site_pages, digests, kept, site, search, cells, tree, copies)
        (self.outdir / PENDING).unlink(missing_ok=True)
        self.report.files, self.report.bytes = tree[0] + 1, tree[1] + manifest_path.stat().st_size
        self.report.seconds = time.monotonic() - started
        return self.report

    def vouched(self, previous: dict) -> dict:
        """The manifest ``previous`` with what it vouches for: "runs" {run id: fingerprint} and "own" {run id: its
        own part} from its fingerprint rows (``fingerprints``' ``runs``: {run id: [its FingerprintRow's fields...,
        its fingerprint]}); when an export after it did not finish (PENDING is there), less the runs, cell files
        and site declarations that export was writing, and without the tree's size (walked again:
        :meth:`tree_size`); {} when PENDING cannot be read."""
        if not previous:
            return previous
        rows = (previous.get("fingerprints") or {}).get("runs") or {}
        previous = {**previous, "runs": {run_id: row[-1] for run_id, row in rows.items()},
                    "own": {run_id: row[_OWN] for run_id, row in rows.items()}}
        path = self.outdir / PENDING
        if not path.is_file():
            return previous
        try:
            pending = json.loads(path.read_text())
            run_ids, cells, pages = set(pending["runs"]), set(pending["cells"]), set(pending["pages"])
        except (ValueError, KeyError, TypeError):
            return {}  # cut short: nothing vouched for

        def less(key: str, names: set[str]) -> dict:
            return {k: v for k, v in (previous.get(key) or {}).items() if k not in names}

        return {**previous, "runs": less("runs", run_ids), "own": less("own", run_ids), "cells": less("cells", cells),
                "pages": less("pages", pages), "tree": None}

    def read_inputs(self, code: str, previous: dict) -> tuple[runs.RunFingerprintParts, dict, dict]:
        """(every run's fingerprint parts, what the manifest keeps of them, the site pages' sources' digests), read
        in one snapshot of the warehouse: on DuckLake, what changed since the snapshot of the manifest's
        (``previous``) digests is asked once for both (``export.inputs.snapshot_changes``); the fingerprints read
        again only for the runs the change feed names (``export.inputs.current_fingerprints``), the digests only for
        the sources whose tables' rows changed (``export.inputs.current_digests``: counted in the report's
        ``site_pages_cpu``).

        Raises:
            ExportError: a declaration names a source ``export.inputs.SOURCES`` does not have.
        """
        named = {source for d in self.site_declarations().values() for source in d.inputs or ()}
        unknown = sorted(named - set(SOURCES))
        if unknown:
            raise ExportError(f"site pages declare unknown inputs: {', '.join(unknown)}")
        kept_digests = previous.get("digests") or {}
        kept_parts = previous.get("fingerprints") or {}
        with warehouse.snapshot() as con:
            changes = snapshot_changes(con, kept_digests.get("snapshot"))
            parts, kept = current_fingerprints(con, kept_parts, code,
                                               changes if kept_parts.get("snapshot") == kept_digests.get("snapshot")
                                               else None)
            cpu = time.process_time()
            digests = current_digests(con, named, kept_digests, changes)
            self.report.site_pages_cpu += time.process_time() - cpu
        return parts, kept, digests

    @staticmethod
    def read_runs(run_ids: list[str], total: int, peers: list[str] | None = None) -> dict[str, runs.Run]:
        """{run id: Run} of ``run_ids`` and of ``peers`` (the runs their pages list), each read once: in one unit of
        three queries when they are a few of the ``total`` runs (``runs.get_runs``: ``run_ids`` first, in their
        order), else every run in the runs list's one query (in its order)."""
        if len(run_ids) <= max(8, total // 20):
            return runs.get_runs(list(dict.fromkeys([*run_ids, *(peers or [])])))
        wanted = set(run_ids) | set(peers or [])
        return {r.id: r for r in runs.list_runs(limit=None)[0] if r.id in wanted}

    def write_runs(self, changed: list[str], everything: dict[str, runs.Run],
                   refresh: dict[str, list[str]] | None = None, peers: dict[str, list[str]] | None = None) -> None:
        """Every file of each ``changed`` run, in threads, each run's pages rendered from its one read (in
        ``everything``, {run id: Run}; the peers its page lists from the reads of its ``peers`` there, {run id:
        peer ids}); of a run in ``refresh`` ({run id: its peers that changed}), only its page (:meth:`refresh_peers`);
        a tqdm bar of runs and pages (on a terminal unless ``bar`` says)."""
        refresh = refresh or {}
        peers = peers or {}
        # A few runs (one read-ahead batch, one search batch: search_batches' bound on what is held): their search's
        # steps read with their pages' (whole, held until the search)
        few = len(changed) <= READ_AHEAD and sum(
            everything[r].trace_bytes or 0 for r in changed if r in everything) <= SEARCH_AHEAD_BYTES
        ahead = ReadAhead(changed, everything, self.budgets(), search=few)
        self.cells_read = ahead.cell_facts
        self.search_read = ahead.whole_steps if ahead.whole_steps is not None else {}

        def one(run_id: str) -> None:
            read = [everything[r] for r in (run_id, *peers.get(run_id, [])) if r in everything]
            # Each read of the run's pages once, many of them read ahead with other runs' (ReadAhead).
            with runs.runs_read_once(read), warehouse.once.reads_kept(ahead.take(run_id)):
                if run_id in refresh:
                    self.refresh_peers(run_id)
                else:
                    self.rewrite_run(run_id)

        self.pages_written = 0  # the bar counts the runs' pages
        with (tqdm(total=len(changed), unit="run", desc="runs", disable=None if self.bar is None else not self.bar,
                   smoothing=0.1) as bar, nullcontext() if self._reads_held else export_reads(),
              ThreadPoolExecutor(WORKERS) as pool):
            for n, _ in enumerate(pool.map(one, changed), 1):
                self.report.runs_written = n
                self.report.runs_refreshed += changed[n - 1] in refresh
                bar.update()
                bar.set_postfix(pages=self.pages_written, refresh=False)
                if n % 100 == 0:
                    self.progress(f"{n} of {len(changed)} changed runs written")

    def inputs_fingerprint(self, code: str, fingerprints: dict[str, str]) -> str:
        """sha256 over what a site page that declares no inputs (``Distill.inputs`` None) is computed from: the code
        that renders it, the warehouse's version (``ptbsite.warehouse.version``: replaced by every write through
        ``warehouse.transaction``, published data included) and every run's fingerprint (a change written around
        the version, as a test's direct SQL, still counts)."""
        digest = hashlib.sha256(code.encode())
        digest.update(warehouse.version.current().token.encode())
        digest.update(json.dumps(fingerprints, sort_keys=True).encode())
        return digest.hexdigest()

    def site_declarations(self) -> dict[str, Distill]:
        """{URL name: declaration} of the site-scoped pages the export writes (not the live-only ones)."""
        return {name: declared for name, declared in self.routes.items()
                if declared.scope == "site" and not declared.live_only}

    def site_pages(self, code: str, fingerprints: dict[str, str], previous: dict[str, dict],
                   digests: dict) -> dict[str, dict]:
        """Render the pages of each site-scoped declaration whose inputs changed since the manifest's ``previous``
        ({URL name: {"inputs": fingerprint, "files": [its files]}}), or one of whose files is missing; returns the
        same for now, for the manifest. A declaration's fingerprint is sha256 over the code (``code``:
        :meth:`code_fingerprint`) and the digests of the sources it names (``Distill.inputs``; ``digests``:
        ``export.inputs.current_digests``, :meth:`read_inputs`: the rows and columns its pages read); one that names
        none falls back to :meth:`inputs_fingerprint` (any write). The pages only the export has (EXPORT_PAGES,
        LIVE_ONLY) depend on the code alone. Names the rendered declarations in the report (``site_pages``)."""
        declared = self.site_declarations()
        sources = digests["sources"]
        everything = None
        wanted: dict[str, str] = {}
        for name, d in declared.items():
            if d.inputs is None:
                everything = everything or self.inputs_fingerprint(code, fingerprints)
                wanted[name] = everything
            else:
                wanted[name] = hashlib.sha256(json.dumps([code, {s: sources[s] for s in sorted(d.inputs)}]).encode()
                                              ).hexdigest()
        wanted[EXPORT_ONLY] = code
        now: dict[str, dict] = {}
        for name, fingerprint in wanted.items():
            before = previous.get(name)
            if before and before.get("inputs") == fingerprint \
                    and all(os.path.isfile(f"{self.outdir}/{file}") for file in before.get("files", [])):
                now[name] = before
                continue
            if not self.report.site_pages:
                self.progress("rendering the site pages whose inputs changed (leaderboard views, plots, runs list, "
                              "analysis, judges)")
            if name == EXPORT_ONLY:
                self.write(LIVE_ONLY, LIVE_ONLY_PAGE.encode())
                self.export_only_pages()
                files = [LIVE_ONLY, *(page[0] for page in EXPORT_PAGES.values())]
            else:
                this = declared[name]
                pages = list(this.pages() if this.pages else [{}])
                self.export_pages(name, this, pages, None)
                files = [self.file_of(this, params, None)[0] for params in pages]
            now[name] = {"inputs": fingerprint, "files": sorted(set(files))}
            self.report.site_pages.append(name)
        self.report.global_pages = bool(self.report.site_pages)
        return now

    def export_pages(self, name: str, declared: Distill, pages, run: RunPages | None) -> None:
        """Render (or, for JSON, fetch) each parameter set of one declaration into its file."""
        for params in pages:
            file = self.file_of(declared, params, run)[0]
            if declared.render:
                self.write(file, declared.render(self.fetch))
                continue
            url = self.url_of(name, params)
            if declared.kind == "json":
                self.write(file, self.fetch(url))
            else:
                self.page(url, file, run)

    def url_of(self, name: str, params: dict) -> str:
        """The live URL of a declaration's parameters: the pattern's kwargs in the path, the rest as the query."""
        kwargs = {k: v for k, v in params.items() if k in self.path_params[name]}
        query = {k: v for k, v in params.items() if k not in kwargs}
        return reverse(name, kwargs=kwargs) + ("?" + urlencode(query) if query else "")

    def write_manifest(self, pages: dict[str, dict], digests: dict, kept: dict, site: str, search: dict | None,
                       cells: dict[str, str], tree: tuple[int, int], copies: dict[str, str]) -> None:
        """``.export-manifest.json``: {"version", "pages": {URL name of a site declaration: {"inputs": its
        fingerprint, "files": its files}} (:meth:`site_pages`), "digests": the sources' digests and the DuckLake
        snapshot they were read at (``export.inputs.current_digests``), "fingerprints": every run's fingerprint
        rows and fingerprint and that snapshot (``export.inputs.current_fingerprints``: facts of the warehouse; the
        next export reads the runs' fingerprints and own parts as exported from them, :meth:`vouched`), "site":
        fingerprint, "search": what the search indexes (:meth:`update_search`), "cells": {cell file: fingerprint}
        (``RunFingerprintParts.cell_fingerprints``), "tree": [files, bytes] under outdir but the manifest
        (:meth:`tree_size`), "facts": what the export computes once with what it was computed from
        (:meth:`kept_fact`: the code fingerprint, the warehouse's budgets and leaderboard files), "static": {static
        file: :func:`copy_key` of it and its copy} (:meth:`copy_static`)}; compact (json's C
        encoder: an indented dump is made in Python, several times the CPU), written once, when the export
        finishes (PENDING until then), and only when its bytes change."""
        self.write(MANIFEST, json.dumps({"version": MANIFEST_VERSION, "pages": pages, "digests": digests,
                                         "fingerprints": kept, "site": site, "search": search, "cells": cells, "tree": tree, "facts": self.facts,
                                         "static": copies},
                                        separators=(",", ":"), sort_keys=True).encode(), count=False)

    def rewrite_run(self, run_id: str) -> None:
        self.remove_run(run_id)
        self.run_pages(run_id)

    def refresh_peers(self, run_id: str) -> None:
        """The files of a run that list its peers, for a run whose own part did not change while its peers'
        identities did (or they came, or went): its page and its JSON twin; each written only when its bytes
        changed (:meth:`write`). Its peers' states and scores are its cell's file's (:meth:`write_cells`); its
        comparisons need nothing: the browser builds them from the runs' side files."""
        pages, _ = self.run_layout(run_id)
        for name in ("traces:run", "api:run"):
            declared = self.routes[name]
            if declared.pages:
                self.export_pages(name, declared, declared.pages(pages), pages)

    def write_cells(self, stale: dict[str, tuple[str, str, str]], current: set[str]) -> None:
        """Write the cell files of ``stale`` ({file: (suite, benchmark, base model)}, :func:`cell_file`: the cell's
        runs' states and scores, ``traces.selectors.cell_facts``; each written only when its bytes changed) and
        remove those not in ``current`` (a cell whose runs are gone)."""
        for file, (suite, benchmark, base_model) in sorted(stale.items()):
            facts = self.cells_read.get((suite, benchmark, base_model))
            if facts is None:  # a cell none of whose runs were written (one went)
                facts = runs.cell_facts(suite, benchmark, base_model)
            self.write(file, facts.model_dump_json().encode())
        folder = self.outdir / CELLS_DIR
        if folder.is_dir():
            for path in sorted(folder.rglob("*"), reverse=True):
                if path.is_file() and path.relative_to(self.outdir).as_posix() not in current:
                    self.forget(path)
                    path.unlink()
                elif path.is_dir() and not any(path.iterdir()):
                    path.rmdir()

    def budgets(self) -> list[float]:
        """Every run's budget, seconds (``traces.selectors.read_budgets``), read once per export: each side file
        holds its run's phase axis for each budget a comparison with it can have (the largest of its runs')."""
        if self._budgets is None:
            with warehouse.connect() as con:
                self._budgets = runs.read_budgets(con)
        return self._budgets

    def compare_side(self, run_id: str, pages: RunPages) -> None:
        """``runs/<id>/compare.json``: what a comparison shows of the run (``traces.selectors.compare_side``: its
        header, rows, phase axes and first steps), its links made relative to ``compare/index.html`` (the run
        page and each step's page), for ``static/js/static_compare.js``."""
        side = runs.compare_side(run_id, self.budgets())
        if side is None:
            raise ExportError(f"run {run_id}: no comparison side")
        file = EXPORT_PAGES["/compare/"][0]
        side.href = self.localize(reverse("traces:run", kwargs={"run_id": run_id}), "/compare/", file, pages)
        for step in side.steps:
            url = reverse("traces:run", kwargs={"run_id": run_id}) + f"?step={step.index}#step-{step.index}"
            step.href = self.localize(url, "/compare/", file, pages)
        self.write(f"runs/{run_id}/{COMPARE_SIDE}", side.model_dump_json().encode())

    def remove_pair_comparisons(self) -> None:
        """Remove the pre-rendered comparisons of earlier exports (``compare/<a>-<b>/``, manifest version 3)."""
        folder = self.outdir / "compare"
        if folder.is_dir():
            for path in folder.iterdir():
                if path.is_dir():
                    self.forget(path)
                    shutil.rmtree(path)

    @staticmethod
    def run_layout(run_id: str) -> tuple[RunPages, list[runs.IndexedStep]]:
        """The run's exported pages (every trace's TracePages) and its agent trace's steps (index, elapsed)."""
        index = runs.step_index(run_id)
        pages = RunPages(run_id, {"agent": TracePages.of([s.index for s in index])})
        for trace in runs.trace_names(run_id):
            if trace != "agent":
                pages.traces[trace] = TracePages.of([s.index for s in runs.step_index(run_id, trace=trace)])
        return pages, index

    def run_pages(self, run_id: str) -> None:
        """Every file of one run: each run-scoped declaration's pages (its page, its step pages per trace, their
        JSON twins), and ``jump.json``, what the run page's jump to a step or a time reads in the browser
        (``static/js/static_jump.js``): {"steps": [[index, elapsed seconds rounded or null, page], ...]} of the
        agent trace."""
        pages, index = self.run_layout(run_id)
        for name, declared in self.routes.items():
            if declared.scope == "run" and declared.pages:
                self.export_pages(name, declared, declared.pages(pages), pages)
        self.compare_side(run_id, pages)
        agent = pages.traces["agent"]
        self.write(f"runs/{run_id}/jump.json", json.dumps({
            "steps": [[s.index, None if s.elapsed_s is None else round(s.elapsed_s), agent.page_of_step(s.index)]
                      for s in index],
        }, separators=(",", ":")).encode())

    # --- search ----------------------------------------------------------------------------------------------
    @staticmethod
    def search_keys(some: dict[str, runs.Run], content: dict[str, str]) -> dict[str, str]:
        """{run id: sha256 over what its search records hold} of the runs ``some``: its content hash (its steps;
        ``content``: {run id: content hash}, ``RunFingerprintParts.contents``) and the names its records carry
        (title, agent, benchmark, base model). A rerun's evaluation or a verdict changes a run's pages but not
        this."""
        return {run_id: hashlib.sha256(json.dumps([content[run_id], r.title, r.agent_display, r.benchmark_name,
                                                   r.base_model_name]).encode()).hexdigest()[:16]
                for run_id, r in sorted(some.items()) if run_id in content}

    def update_search(self, site: str, changed: dict[str, runs.Run], content: dict[str, str],
                      previous: dict | None) -> dict | None:
        """Bring the search up to date with the runs (``content``: {run id: content hash} of every run, as read
        with their fingerprints; ``changed``: {run id: Run} of
        those whose fingerprint changed, the only ones whose search records can have changed: a run's fingerprint
        covers its content hash and names); returns what it indexes now, for the manifest: {"scope": site,
        Pagefind's version and the record format; "base": {run id: [search key, steps with a word]} of the base
        bundle ``pagefind/``; "delta": the same for the runs indexed since, one Pagefind index each under
        ``pagefind/delta/<run>/``}.

        A run added, re-ingested, renamed or removed since the base bundle was built gets its own small index
        (built from its steps alone), and its records in the base bundle are hidden by ``pagefind/shards.json``
        (``stale``: the search page filters them out with Pagefind's ``not`` filter on ``base``); the search page
        merges the small indexes in the browser (``mergeIndex``). When more than MAX_DELTA_RUNS runs differ from
        the base bundle, or the scope changed, the base bundle is built again from every run and the small
        indexes go."""
        current = set(content)
        scope = hashlib.sha256(json.dumps([site, PAGEFIND_VERSION, 3]).encode()).hexdigest()
        usable = (previous is not None and previous.get("scope") == scope and (self.outdir / SEARCH_ENTRY).is_file()
                  and (self.outdir / SEARCH_SHARDS).is_file())
        base: dict[str, list] = previous["base"] if usable and previous else {}
        deltas: dict[str, list] = previous.get("delta", {}) if usable and previous else {}
        indexed = {**{run_id: entry[0] for run_id, entry in base.items()},
                   **{run_id: entry[0] for run_id, entry in deltas.items()}}
        if usable and not changed and set(indexed) >= current >= set(deltas) \
                and set(base) - current <= set(json.loads((self.outdir / SEARCH_SHARDS).read_text())["stale"]) \
                and all((self.outdir / SEARCH_DELTA / run_id / "pagefind-entry.json").is_file() for run_id in deltas):
            return previous  # no run changed, none removed since: not even a key is computed
        started = time.monotonic()
        moved: list[str] = []
        stale: list[str] = []
        if usable:
            keys = {run_id: indexed[run_id] for run_id in current if run_id in indexed and run_id not in changed}
            keys.update(self.search_keys(changed, content))
            missing = current - set(keys)  # indexed nowhere yet, and not among the changed runs: read them
            keys.update(self.search_keys({run_id: r for run_id in missing if (r := runs.get_run(run_id))}, content))
            moved = sorted(run_id for run_id in keys if base.get(run_id, [None])[0] != keys[run_id])
            stale = sorted(run_id for run_id in base if keys.get(run_id) != base[run_id][0])
        if usable and len(set(moved) | set(stale)) <= MAX_DELTA_RUNS:
            build = [run_id for run_id in moved
                     if deltas.get(run_id, [None])[0] != keys[run_id]
                     or not (self.outdir / SEARCH_DELTA / run_id / "pagefind-entry.json").is_file()]
            listed = json.loads((self.outdir / SEARCH_SHARDS).read_text())["stale"]
            if not build and moved == sorted(deltas) and stale == listed:
                return previous  # the changed runs' records are as indexed (a new evaluation, a verdict)
            read = {run_id: changed.get(run_id) or runs.get_run(run_id) for run_id in build}
            self.progress(f"indexing {len(build)} changed runs for the search")
            counts = self.search_bundles(build, {k: v for k, v in read.items() if v is not None}, delta=True)
            deltas = {run_id: [keys[run_id], counts[run_id] if run_id in counts else deltas[run_id][1]]
                      for run_id in moved}
            self.report.search_runs_indexed = len(build)
        else:
            self.progress("building the search index of every run")
            everything = {r.id: r for r in runs.list_runs(limit=None)[0]}
            keys = self.search_keys(everything, content)
            counts = self.search_bundles(sorted(keys), everything, delta=False)
            base, deltas, stale = {run_id: [keys[run_id], counts[run_id]] for run_id in keys}, {}, []
            self.report.search_runs_indexed = len(keys)
            self.report.search_rebuilt = True
        self.remove_deltas(keep=set(deltas))
        self.write(SEARCH_SHARDS, json.dumps({"merge": [f"delta/{run_id}/" for run_id in sorted(deltas)],
                                              "stale": stale}, separators=(",", ":")).encode())
        self.report.search_records = (sum(n for run_id, (_, n) in base.items() if run_id not in stale)
                                      + sum(n for _, n in deltas.values()))
        self.report.search_seconds = time.monotonic() - started
        return {"scope": scope, "base": base, "delta": deltas}

    def run_records(self, run: runs.Run, counts: dict[str, int], *, base: bool) -> Iterator[SearchRecord]:
        """One record per exported page of steps of every trace of ``run``, in trace and step order: each step's
        whole text (:func:`search.step_text`: its input as the trace viewer shows it, then its output), on the
        exported page that holds it (the run's own page arithmetic, :class:`RunPages`), with the run's title and names as meta and filters (``base``: also the ``base`` filter
        by which the search page hides a run's records of the base bundle once the run changed). Counts the steps
        with a word (those the search can find) into ``counts[run id]``."""
        pages, _ = self.run_layout(run.id)
        counts[run.id] = 0
        for trace, layout in pages.traces.items():
            page_steps: dict[int, list[SearchStep]] = {}
            after = -1
            while batch := runs.whole_steps(run.id, trace=trace, after=after):
                for step in batch:
                    text = step_text(step.tool, step.input, step.output)
                    counts[run.id] += has_word(text)
                    page_steps.setdefault(layout.page_of_step(step.index), []).append(
                        SearchStep(step.index, step.kind, step.tool or "", text))
                after = batch[-1].index
            for page, steps in sorted(page_steps.items()):
                filters = {"run": [run.id], "agent": [run.agent_display], "benchmark": [run.benchmark_name],
                           "base_model": [run.base_model_name], "trace": [trace],
                           "kind": sorted({s.kind for s in steps}), "tool": sorted({s.tool for s in steps if s.tool})}
                if base:
                    filters["base"] = [run.id]
                yield SearchRecord(url=pages.file(trace, page), steps=steps,
                                   meta={"title": run.title, "run": run.id, "trace": trace},
                                   filters={k: v for k, v in filters.items() if v})

    def search_bundles(self, run_ids: list[str], everything: dict[str, runs.Run], *, delta: bool) -> dict[str, int]:
        """Index ``run_ids``: one Pagefind index per run under ``pagefind/delta/<run>/`` (``delta``), else the base
        bundle ``pagefind/`` of them all. Each is built in a folder beside it and then moved in, file by file where
        the bytes differ: new files first (Pagefind names them by content), ``pagefind-entry.json`` last, then the
        files no longer used removed, so a reader sees the old index or the new one. Returns {run id: steps with a
        word}."""
        counts: dict[str, int] = {}
        if not run_ids:
            return counts
        with tempfile.TemporaryDirectory(prefix=".pagefind-", dir=self.outdir) as build:
            def records(chosen: list[str]) -> Iterator[SearchRecord]:
                with warehouse.connect():  # one connection for every read, in whichever thread Pagefind's loop runs
                    for batch in search_batches(chosen, everything):
                        # every step of the batch's runs in a few queries, or read with their pages (write_runs)
                        ahead = ({run_id: self.search_read.pop(run_id) for run_id in batch}
                                 if all(run_id in self.search_read for run_id in batch)
                                 else runs.read_search_ahead(batch))
                        for run_id in batch:
                            # a run's records made in its block (none kept open across the generator's yields)
                            with warehouse.once.reads_kept(ahead.pop(run_id)):
                                made = list(self.run_records(everything[run_id], counts, base=not delta))
                            yield from made

            targets = ({f"{SEARCH_DELTA}/{run_id}": [run_id] for run_id in run_ids} if delta
                       else {SEARCH_DIR: run_ids})
            folders = {target: Path(build) / str(n) for n, target in enumerate(targets)}
            write_bundles({folders[target]: records(chosen) for target, chosen in targets.items()}, runtime=not delta)
            for target, folder in folders.items():
                self.move_bundle(folder, target, keep=() if delta else ("delta", "shards.json"))
        return counts

    def move_bundle(self, folder: Path, target: str, *, keep: tuple[str, ...]) -> None:
        """Move the bundle built in ``folder`` into ``target`` (under outdir): new files first, the entry last, then
        the files no longer used removed (except the top-level names in ``keep``)."""
        built = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
        for name in sorted(built, key=lambda n: n == "pagefind-entry.json"):
            self.move_in(folder / name, f"{target}/{name}")
        root = self.outdir / target
        for path in sorted(root.rglob("*"), reverse=True):
            relative = path.relative_to(root)
            if relative.parts[0] in keep:
                continue
            if path.is_file() and relative.as_posix() not in built:
                self.forget(path)
                path.unlink()
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()

    def remove_deltas(self, keep: set[str]) -> None:
        """Remove the runs' small indexes under ``pagefind/delta/`` but those of ``keep``."""
        folder = self.outdir / SEARCH_DELTA
        if folder.is_dir():
            for path in sorted(folder.iterdir()):
                if path.name not in keep:
                    self.forget(path)
                    shutil.rmtree(path)
            if not any(folder.iterdir()):
                folder.rmdir()

    def remove_run(self, run_id: str) -> None:
        _safe(run_id, "run id")  # ids also come from the previous manifest: never a path outside OUTDIR
        for path in (self.outdir / "runs" / run_id, self.outdir / "api/runs" / run_id):
            if path.is_dir():
                self.forget(path)
                shutil.rmtree(path)
        self.forget(self.outdir / f"api/runs/{run_id}.json")
        (self.outdir / f"api/runs/{run_id}.json").unlink(missing_ok=True)

    def copy_static(self, kept: dict | None) -> dict[str, str]:
        """Copy the static files the pages load (found like Django finds them, plotly.js included), each unless the
        manifest's ``kept`` ({name: :func:`copy_key`}) says its copy holds its bytes already (the copy and the
        source stat as they did when they were last compared: plotly.js is ~4.9 MB, read twice per export);
        returns ``kept`` with the files copied or compared now, for the next manifest."""
        copies = dict(kept or {})
        for name in sorted(self.static_used):
            source = finders.find(name)
            if source is None:
                raise ExportError(f"static file {name} not found")
            target = f"{self.outdir}/static/{name}"
            key = copy_key(source, target)
            if key is None or copies.get(name) != key:
                self.write(f"static/{name}", Path(source).read_bytes())
                copies[name] = copy_key(source, target)
        return copies

    def code_fingerprint(self, kept: dict | None) -> str:
        """:func:`code_digest` of the code that renders the site (``settings.BASE_DIR``): the manifest's (``kept``:
        its ``facts``, :meth:`kept_fact`) while :func:`code_key` of the same files is as it was (a stat of each
        file instead of reading them all), else computed."""
        root = str(settings.BASE_DIR)
        files = code_files(root)
        return self.kept_fact("code", code_key(files), kept, lambda: [code_digest(root, files)])[0]

    def site_fingerprint(self, code: str, sources: dict[str, str], kept: dict | None) -> str:
        """sha256 over what every run page depends on besides the run: the code (:meth:`code_fingerprint`) and the
        leaderboard JSON as exported (the published reference scores run pages quote), and the runs' budgets (each
        side file holds its phase axis for every budget a comparison can have: :meth:`budgets`). The budgets and
        the leaderboard files' names are the manifest's (``kept``: its ``facts``, :meth:`kept_fact`) when the
        code and the digests of the sources they are read from (``sources``: ``export.inputs.current_digests``'
        ``sources``; ``runs_listed`` covers every run's budget, ``published`` the suite's base models) are as they
        were: one statement of ``runs`` and one of ``base_models`` and ``suites`` less."""
        def key(source: str) -> str | None:
            return (hashlib.sha256(json.dumps([code, settings.DEFAULT_SUITE, sources[source]]).encode()).hexdigest()
                    if source in sources else None)

        self._budgets = self.kept_fact("budgets", key("runs_listed"), kept, self.budgets)
        board = self.routes["api:leaderboard"]
        files = self.kept_fact("board", key("published"), kept, lambda: [
            self.file_of(board, params, None)[0] for params in (board.pages() if board.pages else [{}])
            if not params.get("source")])  # rows from runs (each judging rule's twin) change with every run
        digest = hashlib.sha256(code.encode())
        digest.update(json.dumps(self._budgets).encode())
        for file in files:
            digest.update((self.outdir / file).read_bytes())
        return digest.hexdigest()

    def kept_fact(self, name: str, key: str | None, kept: dict | None, read: Callable[[], list]) -> list:
        """A fact the export computes once (a JSON list: of the warehouse, or its code fingerprint): the manifest's (``kept``: its ``facts``,
        {name: [key, value]}) when it was read under ``key`` (what it is computed from, hashed), else ``read()``
        (always when ``key`` is None); kept with ``key`` for the next manifest (``facts``)."""
        entry = (kept or {}).get(name)
        value = entry[1] if key is not None and isinstance(entry, list) and len(entry) == 2 and entry[0] == key \
            else read()
        self.facts[name] = [key, value]
        return value


# At the export's root, in the site's look (its stylesheet and header); the viewport line keeps a phone from laying
# it out at 980 px.
LIVE_ONLY_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Needs the live site · PostTrainBench Explorer</title>
<link rel="icon" href="static/favicon.ico"><link rel="stylesheet" href="static/css/site.css"></head>
<body><header class="site"><a class="brand" href="index.html">PostTrainBench Explorer</a></header>
<main><section class="error-page"><h1>This view needs the live site</h1>
<p>This is a static copy of the PostTrainBench Explorer. Views computed by the server on request are not in it:
facet filters (runs that used GRPO, LoRA, ...), suites other than the default one, the runs list narrowed to the
latest runs, the whole text of step outputs too long for a page (the copy's search finds words in it), and the API
docs. Open the same link on the live site.</p>
<p><a href="index.html">Back to the leaderboard</a></p></section></main></body></html>
"""


@functools.lru_cache(maxsize=4096)
def _relative(file: str, folder: str) -> str:
    """``posixpath.relpath(file, folder)``, kept: a page's links lead to a few files (its own, for its steps; the
    static files; the site's pages), and relpath makes both absolute (a ``getcwd`` each) every time."""
    return posixpath.relpath(file, folder)


def code_files(root: str, folders: tuple[str, ...] = _RENDERING_CODE) -> list[tuple[str, os.stat_result]]:
    """[(path relative to ``root``, POSIX; its ``os.stat``)] of the files under each of ``root``/``folders`` with a
    suffix in _CODE_SUFFIXES (``__pycache__`` and links to folders not entered), folder by folder, each folder's in
    the order of their paths' parts (as ``sorted(Path.rglob(...))``)."""
    found: list[tuple[str, os.stat_result]] = []

    def walk(parts: tuple[str, ...], into: list[tuple[tuple[str, ...], os.stat_result]]) -> None:
        with os.scandir(os.path.join(root, *parts)) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        walk((*parts, entry.name), into)
                elif os.path.splitext(entry.name)[1] in _CODE_SUFFIXES:
                    into.append(((*parts, entry.name), entry.stat()))

    for folder in folders:
        files: list[tuple[tuple[str, ...], os.stat_result]] = []
        if os.path.isdir(os.path.join(root, folder)):
            walk((folder,), files)
        found.extend(("/".join(parts), stat) for parts, stat in sorted(files, key=lambda file: file[0]))
    return found


def code_key(files: list[tuple[str, os.stat_result]]) -> str:
    """sha256 hex over the step page size and each of ``files`` (:func:`code_files`): its path, size, inode and
    modification and change times (ns). A file written, replaced, added or removed changes it (its change time
    moves with every write, and with its modification time set back)."""
    return hashlib.sha256(json.dumps([STEPS_PER_PAGE, [[name, s.st_size, s.st_ino, s.st_mtime_ns, s.st_ctime_ns]
                                                       for name, s in files]]).encode()).hexdigest()


def copy_key(source: str, target: str) -> str | None:
    """sha256 hex over the paths, sizes, inodes and modification and change times (ns) of a file ``source`` and
    its copy ``target``; None when the copy is missing. Equal keys: neither was written, replaced or set back since
    (a write moves a file's change time)."""
    try:
        stats = [os.stat(source), os.stat(target)]
    except FileNotFoundError:
        return None
    return hashlib.sha256(json.dumps([source, target, [[s.st_size, s.st_ino, s.st_mtime_ns, s.st_ctime_ns]
                                                       for s in stats]]).encode()).hexdigest()


def code_digest(root: str, files: list[tuple[str, os.stat_result]]) -> str:
    """sha256 hex over the step page size and each of ``files`` (:func:`code_files` under ``root``): its path and
    bytes, in their order."""
    digest = hashlib.sha256(f"{STEPS_PER_PAGE}".encode())
    for name, _ in files:
        with open(os.path.join(root, name), "rb") as file:
            digest.update(name.encode() + file.read())
    return digest.hexdigest()


def _tree_size(folder: str) -> tuple[int, int]:
    """(files, bytes) under ``folder``, with os.scandir (a pathlib walk costs several times more)."""
    files = size = 0
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                more, more_size = _tree_size(entry.path)
                files, size = files + more, size + more_size
            elif entry.is_file(follow_symlinks=False):
                files, size = files + 1, size + entry.stat(follow_symlinks=False).st_size
    return files, size


def declared_routes() -> tuple[dict[str, Distill], dict[str, set[str]]]:
    """The exportable URL patterns, walking the resolver: {URL name: its declaration} in URL-pattern order, and
    {URL name: the names of its path parameters}.

    Raises:
        ExportError: an API export is declared for a URL name no pattern has (an operation renamed).
    """
    routes: dict[str, Distill] = {}
    path_params: dict[str, set[str]] = {}

    def walk(resolver: URLResolver, namespace: str) -> None:
        for pattern in resolver.url_patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern, pattern.namespace or namespace)
            elif pattern.name:
                name = f"{namespace}:{pattern.name}" if namespace else pattern.name
                declared = getattr(pattern, "distill", None) or API_EXPORTS.get(name)
                if declared is not None and name not in routes:
                    routes[name] = declared
                    path_params[name] = set(getattr(pattern.pattern, "converters", {}))

    walk(get_resolver(), "")
    missing = sorted(set(API_EXPORTS) - set(routes))
    if missing:
        raise ExportError(f"static export declared for unknown API operations: {', '.join(missing)}")
    return routes, path_params


def export_site(outdir: Path, *, progress: Callable[[str], None] | None = None,
                bar: bool | None = False) -> ExportReport:
    """Export the public site into ``outdir`` (created if missing); see the module docstring. ``bar``: a tqdm bar
    of runs and pages written with the time left, on stderr (None: when stderr is a terminal)."""
    return Exporter(outdir, progress=progress, bar=bar).run()
