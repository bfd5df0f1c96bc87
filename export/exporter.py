"""The public site as static files: ``python manage.py export_static OUTDIR``. Pages are the live views rendered
through ``RequestFactory`` for every URL pattern an app's ``urls.py`` declares exportable (``ptbsite.distill``),
with local links made relative; layout, determinism and increments: docs/export.md."""
from __future__ import annotations

import bisect
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
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.contrib.staticfiles import finders
from django.template.loader import render_to_string
from django.test import RequestFactory
from django.urls import Resolver404, URLResolver, get_resolver, resolve, reverse

from ptbsite import warehouse
from ptbsite.distill import API_EXPORTS, Distill, NotExported
from traces import selectors as runs

from .search import PAGEFIND_VERSION, SEARCH_FILTERS, SearchRecord, write_bundle

STEPS_PER_PAGE = 200
MANIFEST = ".export-manifest.json"
MANIFEST_VERSION = 1
SEARCH_DIR = "pagefind"   # the Pagefind bundle of every step of every run (export/search.py)
SEARCH_ENTRY = f"{SEARCH_DIR}/pagefind-entry.json"  # written last: the bundle's pointer to its other files
# Pages only the export has (no view of the live site renders them): their live-looking path -> (file, template,
# context). A link to one may carry the query its page reads in the browser (SEARCH_QUERY).
EXPORT_PAGES = {"/search/": ("search/index.html", "export/search.html", {"filters": SEARCH_FILTERS})}
SEARCH_QUERY = {"q", "run", *(name for name, _ in SEARCH_FILTERS)}
LIVE_ONLY = "live-only.html"
# Query parameters whose views exist only on the live site: a link with one of them leads to LIVE_ONLY.
LIVE_ONLY_PARAMS = {"facet", "suite", "latest"}
_SAFE = re.compile(r"^[A-Za-z0-9._-]+$")
_LINK = re.compile(r'(\s(?:href|src|action|data-click-url)=")([^"]*)(")')
_HTMX = re.compile(r'\s+hx-[a-z-]+="[^"]*"')  # swaps need the server; the static pages use plain links
_RENDERING_CODE = ("leaderboard", "traces", "export", "templates", "static")
# Runs render in threads: DuckDB releases the GIL while it queries, so one thread's query overlaps another's
# template rendering (about 1.7x faster on 2 cores). Each run's files are its own, so the order does not matter.
WORKERS = min(8, (os.cpu_count() or 1) + 1)


class ExportError(RuntimeError):
    """A page links to a URL the export has no file for, or a page failed to render (status is not 200)."""


@dataclass
class ExportReport:
    """What one export did. ``files``/``bytes``: everything under OUTDIR now; ``files_written``: files whose
    bytes changed in this export; ``seconds``: wall time; ``search_records``: steps indexed for search (0 when the
    search bundle was up to date), in ``search_seconds``."""

    outdir: str
    runs_written: int = 0
    runs_skipped: int = 0
    runs_removed: int = 0
    files: int = 0
    bytes: int = 0
    files_written: int = 0
    seconds: float = 0.0
    search_records: int = 0
    search_seconds: float = 0.0

    def __str__(self) -> str:
        search = (f"search index rebuilt: {self.search_records} steps in {self.search_seconds:.1f} s"
                  if self.search_seconds else "search index unchanged")
        return (f"{self.outdir}: {self.runs_written + self.runs_skipped} runs ({self.runs_written} written, "
                f"{self.runs_skipped} unchanged, {self.runs_removed} removed); {self.files} files "
                f"({self.files_written} written), {self.bytes / 1e6:.1f} MB; {self.seconds:.1f} s ({search})")


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

    def file(self, trace: str, page: int) -> str:
        """The file of page ``page`` (1-based) of a trace; the agent trace's first page is the run page itself."""
        if trace == "agent":
            return f"runs/{self.run_id}/index.html" if page == 1 else f"runs/{self.run_id}/steps/{page}.html"
        return f"runs/{self.run_id}/traces/{trace.replace(':', '-')}/{page}.html"

    def trace(self, name: str) -> TracePages:
        if name not in self.traces:
            raise ExportError(f"run {self.run_id} has no trace {name!r}")
        return self.traces[name]


def _safe(value: str, what: str) -> str:
    if not _SAFE.match(value):
        raise ExportError(f"{what} {value!r} cannot name a file")
    return value


class Exporter:
    """Writes the public site under ``outdir``; :meth:`run` does one export and returns its ExportReport."""

    def __init__(self, outdir: Path, *, progress: Callable[[str], None] | None = None):
        self.outdir = Path(outdir)
        self.factory = RequestFactory()
        self.progress = progress or (lambda message: None)
        self.static_used: set[str] = set()
        self.report = ExportReport(outdir=str(self.outdir))
        self._count_lock = threading.Lock()
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

    def write_page(self, body: str, url: str, file: str, run: RunPages | None = None) -> None:
        """Write the HTML ``body`` of the page at ``url`` into ``file``, without htmx swaps, links made relative."""
        body = _HTMX.sub("", body)
        body = _LINK.sub(lambda m: m[1] + html.escape(self.localize(html.unescape(m[2]), url, file, run)) + m[3],
                         body)
        self.write(file, body.encode())

    def export_only_pages(self) -> None:
        """The pages only the export has (EXPORT_PAGES): their templates rendered like the views' pages, with the
        site's context processors and ``request.static_export``."""
        for url, (file, template, context) in EXPORT_PAGES.items():
            self.write_page(render_to_string(template, context, request=self.request(url)), url, file)

    def write(self, file: str, data: bytes) -> None:
        path = self.outdir / file
        if path.is_file() and path.read_bytes() == data:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        with self._count_lock:
            self.report.files_written += 1

    def move_in(self, source: Path, file: str) -> None:
        """:meth:`write` for a file already on disk under outdir: ``source`` is renamed to ``file`` unless that
        file holds the same bytes already (then both stay as they are)."""
        path = self.outdir / file
        if path.is_file() and path.read_bytes() == source.read_bytes():
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        os.replace(source, path)
        with self._count_lock:
            self.report.files_written += 1

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
        file, query, fragment = self.target(parts.path, dict(parse_qsl(parts.query)), run)
        fragment = fragment or parts.fragment
        link = posixpath.relpath(file, posixpath.dirname(page_file) or ".")
        return link + (f"?{query}" if query else "") + (f"#{fragment}" if fragment else "")

    def target(self, path: str, query: dict[str, str], run: RunPages | None) -> tuple[str, str, str]:
        """(file under outdir, query string kept for the browser, fragment) of a live path and its query: the
        pattern the path resolves to says, by its declaration (``ptbsite.distill``), which file holds it."""
        if (set(query) & LIVE_ONLY_PARAMS and query.get("suite", settings.DEFAULT_SUITE) != settings.DEFAULT_SUITE
                or "facet" in query or "latest" in query):
            return LIVE_ONLY, "", ""
        query = {k: v for k, v in query.items() if k != "suite"}  # the default suite is the exported one

        if path in EXPORT_PAGES:
            extra = set(query) - SEARCH_QUERY
            if extra:
                raise ExportError(f"{path}?{urlencode(query)}: {', '.join(sorted(extra))} is not read by its page")
            return EXPORT_PAGES[path][0], urlencode(query), ""
        static = "/" + settings.STATIC_URL.lstrip("/")
        if path.startswith(static):
            name = path.removeprefix(static)
            self.static_used.add(name)
            return f"static/{name}", "", ""
        try:
            match = resolve(path)
        except Resolver404:
            raise ExportError(f"{path}: no static page for this URL") from None
        declared = self.routes.get(match.view_name)
        if declared is None:
            raise ExportError(f"{path}: no static page for this URL")
        if declared.live_only:
            return LIVE_ONLY, "", ""
        extra = set(query) - set(declared.query)
        if extra:
            raise ExportError(f"{path}?{urlencode(query)}: {', '.join(sorted(extra))} needs the live site")
        return self.file_of(declared, {**match.kwargs, **query}, run)

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
        """Export the site; see the module docstring for what is written."""
        started = time.monotonic()
        self.outdir.mkdir(parents=True, exist_ok=True)
        manifest_path = self.outdir / MANIFEST
        previous = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
        # One connection held open for the whole export: every selector's own connect() then reuses the open
        # database instead of opening the file again (~15 ms each).
        with warehouse.connect():
            self.global_pages()
            site = self.site_fingerprint()
            fingerprints = runs.run_fingerprints()
            known = previous.get("runs", {}) if (previous.get("version") == MANIFEST_VERSION
                                                  and previous.get("site") == site) else {}
            for run_id in sorted(set(previous.get("runs", {})) - set(fingerprints)):
                self.remove_run(run_id)
                self.report.runs_removed += 1
            changed = [run_id for run_id, fingerprint in sorted(fingerprints.items())
                       if known.get(run_id) != fingerprint or not (self.outdir / f"runs/{run_id}/index.html").is_file()]
            untouched = set(fingerprints) - set(changed)
            self.report.runs_skipped = len(fingerprints) - len(changed)
            # Until this export finishes, the manifest vouches only for the runs it does not touch (and for the
            # search bundle it found): a crash midway leaves the changed runs to be written again next time.
            self.write_manifest(site, {k: fingerprints[k] for k in untouched}, previous.get("search"))
            with ThreadPoolExecutor(WORKERS) as pool:
                for n, _ in enumerate(pool.map(self.rewrite_run, changed), 1):
                    self.report.runs_written = n
                    if n % 100 == 0:
                        self.progress(f"{n} of {len(changed)} changed runs written")
            # The search bundle is one index over every run: rebuilt whole when what it indexes changed.
            search = self.search_fingerprint(site)
            if previous.get("search") != search or not (self.outdir / SEARCH_ENTRY).is_file():
                self.search_bundle(sorted(fingerprints))
        self.copy_static()
        self.write_manifest(site, fingerprints, search)
        files = [p for p in self.outdir.rglob("*") if p.is_file()]
        self.report.files = len(files)
        self.report.bytes = sum(p.stat().st_size for p in files)
        self.report.seconds = time.monotonic() - started
        return self.report

    def global_pages(self) -> None:
        """Every site-scoped declaration's pages (the leaderboard in every view, the plots, the runs list, the
        analysis, their JSON)."""
        for name, declared in self.routes.items():
            if declared.scope == "site" and not declared.live_only:
                self.export_pages(name, declared, declared.pages() if declared.pages else [{}], None)
        self.write(LIVE_ONLY, LIVE_ONLY_PAGE.encode())
        self.export_only_pages()

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

    def write_manifest(self, site: str, fingerprints: dict[str, str], search: str | None) -> None:
        """``.export-manifest.json``: {"version", "site": fingerprint, "runs": {run id: fingerprint}, "search": the
        fingerprint of the runs the search bundle indexes (:meth:`search_fingerprint`)}."""
        (self.outdir / MANIFEST).write_text(json.dumps({"version": MANIFEST_VERSION, "site": site,
                                                         "runs": fingerprints, "search": search},
                                                        indent=1, sort_keys=True))

    def rewrite_run(self, run_id: str) -> None:
        self.remove_run(run_id)
        self.run_pages(run_id)

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
        agent = pages.traces["agent"]
        self.write(f"runs/{run_id}/jump.json", json.dumps({
            "steps": [[s.index, None if s.elapsed_s is None else round(s.elapsed_s), agent.page_of_step(s.index)]
                      for s in index],
        }, separators=(",", ":")).encode())

    # --- search ----------------------------------------------------------------------------------------------
    @staticmethod
    def search_fingerprint(site: str) -> str:
        """sha256 over what the search bundle holds: the site's fingerprint (the code, hence the records' shape and
        the page size their links assume), Pagefind's version, and per run its content hash (its steps) and the
        names its records carry (title, agent, benchmark, base model). A rerun's evaluation or a verdict changes a
        run's pages but not this."""
        content = runs.run_content_hashes()
        named = [(r.id, content[r.id], r.title, r.agent_display, r.benchmark_name, r.base_model_name)
                 for r in runs.list_runs(limit=None)[0] if r.id in content]
        return hashlib.sha256(json.dumps([site, PAGEFIND_VERSION, sorted(named)]).encode()).hexdigest()

    def step_records(self, run_ids: list[str]) -> Iterator[SearchRecord]:
        """One record per step of every trace of each run, in run, trace and step order: the step's whole text
        (input, then output), linked to the exported page that holds it (the run's own page arithmetic,
        :class:`RunPages`), with the run's title and names as meta and filters."""
        with warehouse.connect():  # one connection for every read, in whichever thread Pagefind's loop runs
            titles = {r.id: r for r in runs.list_runs(limit=None)[0]}
            for run_id in run_ids:
                run = titles[run_id]
                pages, _ = self.run_layout(run_id)
                for trace, layout in pages.traces.items():
                    after = -1
                    while batch := runs.whole_steps(run_id, trace=trace, after=after):
                        for step in batch:
                            url = pages.file(trace, layout.page_of_step(step.index)) + f"#step-{step.index}"
                            meta = {"title": run.title, "run": run_id, "trace": trace, "step": str(step.index),
                                    "kind": step.kind, **({"tool": step.tool} if step.tool else {})}
                            filters = {"run": [run_id], "agent": [run.agent_display],
                                       "benchmark": [run.benchmark_name], "base_model": [run.base_model_name],
                                       "trace": [trace], "kind": [step.kind],
                                       **({"tool": [step.tool]} if step.tool else {})}
                            yield SearchRecord(url=url, content=f"{step.input}\n{step.output}" if step.input
                                               else step.output, meta=meta, filters=filters)
                        after = batch[-1].index

    def search_bundle(self, run_ids: list[str]) -> None:
        """``pagefind/``: the Pagefind bundle of every step of ``run_ids`` (export/search.py), built in a folder
        beside it and then moved in, file by file where the bytes differ: new files first (Pagefind names them by
        content), ``pagefind-entry.json`` last, then the files no longer used removed, so a reader sees the old
        bundle or the new one."""
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix=".pagefind-", dir=self.outdir) as build:
            self.report.search_records = write_bundle(self.step_records(run_ids), Path(build))
            built = sorted(str(p.relative_to(build)) for p in Path(build).rglob("*") if p.is_file())
            entry = SEARCH_ENTRY.removeprefix(f"{SEARCH_DIR}/")
            for name in sorted(built, key=lambda n: n == entry):
                self.move_in(Path(build) / name, f"{SEARCH_DIR}/{name}")
        folder = self.outdir / SEARCH_DIR
        for path in sorted(folder.rglob("*"), reverse=True):
            if path.is_file() and str(path.relative_to(folder)) not in built:
                path.unlink()
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
        self.report.search_seconds = time.monotonic() - started

    def remove_run(self, run_id: str) -> None:
        _safe(run_id, "run id")  # ids also come from the previous manifest: never a path outside OUTDIR
        for path in (self.outdir / "runs" / run_id, self.outdir / "api/runs" / run_id):
            if path.is_dir():
                shutil.rmtree(path)
        (self.outdir / f"api/runs/{run_id}.json").unlink(missing_ok=True)

    def copy_static(self) -> None:
        """Copy the static files the pages load (found like Django finds them, plotly.js included)."""
        for name in sorted(self.static_used):
            source = finders.find(name)
            if source is None:
                raise ExportError(f"static file {name} not found")
            self.write(f"static/{name}", Path(source).read_bytes())

    def site_fingerprint(self) -> str:
        """sha256 over what every run page depends on besides the run: the code, templates and static files that
        render it, the step page size, and the leaderboard JSON (the published reference scores run pages quote)."""
        digest = hashlib.sha256(f"{STEPS_PER_PAGE}".encode())
        for folder in _RENDERING_CODE:
            for path in sorted((Path(settings.BASE_DIR) / folder).rglob("*")):
                if path.suffix in (".py", ".html", ".js", ".css") and "__pycache__" not in path.parts:
                    digest.update(str(path.relative_to(settings.BASE_DIR)).encode() + path.read_bytes())
        board = self.routes["api:leaderboard"]
        for params in board.pages() if board.pages else [{}]:
            if params.get("source"):
                continue  # rows from runs (each judging rule's twin) change with every run; run pages quote none
            digest.update((self.outdir / self.file_of(board, params, None)[0]).read_bytes())
        return digest.hexdigest()


LIVE_ONLY_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Needs the live site · PostTrainBench Explorer</title></head>
<body><h1>This view needs the live site</h1>
<p>This is a static copy of the PostTrainBench Explorer. Views computed by the server on request are not in it:
facet filters (runs that used GRPO, LoRA, ...), suites other than the default one, the runs list narrowed to the
latest runs, the whole text of step outputs too long for a page (the copy's search finds words in it), and the API
docs. Open the same link on the live site.</p>
<p><a href="index.html">Back to the leaderboard</a></p></body></html>
"""


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


def export_site(outdir: Path, *, progress: Callable[[str], None] | None = None) -> ExportReport:
    """Export the public site into ``outdir`` (created if missing); see the module docstring."""
    return Exporter(outdir, progress=progress).run()
