"""The public site as static files: ``python manage.py export_static OUTDIR``.

Pages are the live site's own views and templates, rendered through ``RequestFactory`` with
``request.static_export = True`` (templates then drop htmx swaps, staff controls and server-side forms for their
static equivalents), and every local URL in them is rewritten to a relative link to the exported file
(:meth:`Exporter.localize`). A URL with no exported file raises :class:`ExportError`, so an export never holds a
broken link. Layout under OUTDIR::

    index.html                                  leaderboard, average of base models, published rows
    base_model/<id>/index.html                  one base model's view; further views add
    [base_model/<id>/]source/<s>/[flags/ignore/]index.html   (every base model x source x flags)
    plots/index.html, plots/<chart>/index.html, plots/per-benchmark/base_model/<id>/index.html
    runs/index.html                             every run; its filters run in the browser (?agent=&benchmark=...)
    runs/<id>/index.html                        header, judge panel, page 1 of the agent trace, search form
    runs/<id>/steps/<n>.html                    page n >= 2 of STEPS_PER_PAGE agent steps, prev/next links
    runs/<id>/traces/<judge trace>/<n>.html     page n >= 1 of a judge trace (``judge:codex`` -> ``judge-codex``)
    runs/<id>/search.json                       the in-browser search index (static/js/static_search.js)
    analysis/index.html                         what the agents did (the default suite)
    live-only.html                              where links to views that need the server lead (facet filters,
                                                other suites, sorted or filtered server views)
    api/leaderboard.json, api/leaderboard/<base model>.json, api/runs.json, api/runs/<id>.json,
    api/runs/<id>/steps/<n>.json, api/runs/<id>/facets.json, api/runs/<id>/timeline.json, api/plots/<chart>.json,
    api/plots/per-benchmark/<base model>.json, api/analysis/<table>.json
    static/...                                  the css, js, vendored htmx and plotly.js the pages load
    .export-manifest.json                       fingerprints for the next, incremental export

Deterministic: no timestamps, sorted iteration, files compared before writing. Incremental: a run's files are
rendered again only when its fingerprint (``traces.selectors.run_fingerprints``) or the site's fingerprint (the
code and templates that render, and the leaderboard data run pages quote) changed; global pages are rendered
every time and written when their bytes differ.
"""
from __future__ import annotations

import bisect
import hashlib
import html
import json
import os
import posixpath
import re
import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.contrib.staticfiles import finders
from django.test import RequestFactory
from django.urls import resolve

from ptbsite import warehouse
from traces import selectors as runs

from . import selectors
from .views import DEFAULTS

DEFAULT_SUITE = "posttrainbench"

STEPS_PER_PAGE = 200
SEARCH_CHARS = 400        # characters of each step's text in runs/<id>/search.json
MANIFEST = ".export-manifest.json"
MANIFEST_VERSION = 1
CHARTS = ("time-vs-score", "time-spent", "per-benchmark", "budget-and-effort", "usage-vs-score")
ANALYSIS_TABLES = ("method-mix", "score-by-method", "calibration", "time-use")
LIVE_ONLY = "live-only.html"
# Query parameters whose views exist only on the live site: a link with one of them leads to LIVE_ONLY.
LIVE_ONLY_PARAMS = {"facet", "suite", "latest"}
_SAFE = re.compile(r"^[A-Za-z0-9._-]+$")
_LINK = re.compile(r'(\s(?:href|src|action|data-click-url)=")([^"]*)(")')
_HTMX = re.compile(r'\s+hx-[a-z-]+="[^"]*"')  # swaps need the server; the static pages use plain links
_RENDERING_CODE = ("leaderboard", "traces", "templates", "static")
# Runs render in threads: DuckDB releases the GIL while it queries, so one thread's query overlaps another's
# template rendering (about 1.7x faster on 2 cores). Each run's files are its own, so the order does not matter.
WORKERS = min(8, (os.cpu_count() or 1) + 1)


class ExportError(RuntimeError):
    """A page links to a URL the export has no file for, or a page failed to render (status is not 200)."""


@dataclass
class ExportReport:
    """What one export did. ``files``/``bytes``: everything under OUTDIR now; ``files_written``: files whose
    bytes changed in this export; ``seconds``: wall time."""

    outdir: str
    runs_written: int = 0
    runs_skipped: int = 0
    runs_removed: int = 0
    files: int = 0
    bytes: int = 0
    files_written: int = 0
    seconds: float = 0.0

    def __str__(self) -> str:
        return (f"{self.outdir}: {self.runs_written + self.runs_skipped} runs ({self.runs_written} written, "
                f"{self.runs_skipped} unchanged, {self.runs_removed} removed); {self.files} files "
                f"({self.files_written} written), {self.bytes / 1e6:.1f} MB; {self.seconds:.1f} s")


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

    # --- rendering -------------------------------------------------------------------------------------------
    def fetch(self, url: str) -> bytes:
        """The body of the live site's response to GET ``url`` (the view called directly, as an anonymous
        visitor, with ``request.static_export``). Raises ExportError unless the status is 200."""
        request = self.factory.get(url)
        request.user = AnonymousUser()
        request.static_export = True
        match = resolve(request.path_info)
        response = match.func(request, *match.args, **match.kwargs)
        if response.status_code != 200:
            raise ExportError(f"GET {url}: status {response.status_code}")
        return response.content

    def page(self, url: str, file: str, run: RunPages | None = None) -> None:
        """Render the page at live ``url`` into ``file`` (relative to outdir) with local links made relative."""
        body = _HTMX.sub("", self.fetch(url).decode())
        body = _LINK.sub(lambda m: m[1] + html.escape(self.localize(html.unescape(m[2]), url, file, run)) + m[3],
                         body)
        self.write(file, body.encode())

    def write(self, file: str, data: bytes) -> None:
        path = self.outdir / file
        if path.is_file() and path.read_bytes() == data:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
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
        """(file under outdir, query string kept for the browser, fragment) of a live path and its query."""
        def only(*allowed: str) -> None:
            extra = set(query) - set(allowed)
            if extra:
                raise ExportError(f"{path}?{urlencode(query)}: {', '.join(sorted(extra))} needs the live site")

        if (set(query) & LIVE_ONLY_PARAMS and query.get("suite", DEFAULT_SUITE) != DEFAULT_SUITE or "facet" in query
                or "latest" in query):
            return LIVE_ONLY, "", ""
        query = {k: v for k, v in query.items() if k != "suite"}  # the default suite is the exported one

        if path.startswith("/static/"):
            name = path.removeprefix("/static/")
            self.static_used.add(name)
            return f"static/{name}", "", ""
        if path == "/":
            only("base_model", "source", "flags", "sort", "dir")
            if query.get("sort", "rank") != "rank" or query.get("dir", "asc") != "asc":
                raise ExportError(f"/?{urlencode(query)}: sorting runs in the browser in the static export")
            return leaderboard_file(query), "", ""
        if path == "/plots/":
            only()
            return "plots/index.html", "", ""
        if path == "/analysis/":
            only()
            return "analysis/index.html", "", ""
        if path.startswith("/plots/") and path.strip("/").split("/")[1] in CHARTS:
            chart = path.strip("/").split("/")[1]
            only(*(("base_model",) if chart == "per-benchmark" else ()))
            model = query.get("base_model")
            return (f"plots/{chart}/base_model/{_safe(model, 'base model')}/index.html" if model
                    else f"plots/{chart}/index.html"), "", ""
        if path == "/runs/":
            only("agent", "benchmark", "base_model", "state", "flagged")
            return "runs/index.html", urlencode(query), ""  # filtered in the browser
        if re.fullmatch(r"/runs/[^/]+/steps/\d+/text", path):
            return LIVE_ONLY, "", ""  # the whole text of a long step output is served by the live site
        match = re.fullmatch(r"/runs/([^/]+)/(steps)?", path)
        if match:
            run_id = _safe(match[1], "run id")
            if run is None or run.run_id != run_id:
                if match[2] or query:
                    raise ExportError(f"{path}: steps of run {run_id} linked from outside its pages")
                return f"runs/{run_id}/index.html", "", ""
            trace = query.get("trace", "agent")
            if match[2]:
                only("after", "limit", "trace")
                if int(query.get("limit", 0)) != STEPS_PER_PAGE:
                    raise ExportError(f"{path}: static step pages hold {STEPS_PER_PAGE} steps")
                return run.file(trace, run.trace(trace).page_of_cursor(int(query["after"]))), "", ""
            only("trace", "step", "limit")
            if "step" in query and query["step"].isdigit():
                step = int(query["step"])
                return run.file(trace, run.trace(trace).page_of_step(step)), "", f"step-{step}"
            run.trace(trace)
            return run.file(trace, 1), "", ""
        if path.startswith("/api/"):
            return self.api_target(path, query), "", ""
        raise ExportError(f"{path}: no static page for this URL")

    @staticmethod
    def api_target(path: str, query: dict[str, str]) -> str:
        """The JSON file of a live API URL (only the ones the export writes)."""
        if path == "/api/leaderboard" and set(query) <= {"base_model"}:
            model = query.get("base_model")
            return f"api/leaderboard/{_safe(model, 'base model')}.json" if model else "api/leaderboard.json"
        if path == "/api/runs" and not query:
            return "api/runs.json"
        match = re.fullmatch(r"/api/runs/([^/]+)(/facets|/timeline)?", path)
        if match and not query:
            return f"api/runs/{_safe(match[1], 'run id')}{match[2] or ''}.json"
        match = re.fullmatch(r"/api/analysis/([a-z-]+)", path)
        if match and match[1] in ANALYSIS_TABLES and set(query) <= {"suite"}:
            return f"api/analysis/{match[1]}.json"
        match = re.fullmatch(r"/api/plots/([a-z-]+)", path)
        if match and match[1] in CHARTS and set(query) <= {"base_model"}:
            model = query.get("base_model")
            return f"api/plots/{match[1]}/{_safe(model, 'base model')}.json" if model else f"api/plots/{match[1]}.json"
        raise ExportError(f"{path}?{urlencode(query)}: not in the static API")

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
            models = self.global_pages()
            site = self.site_fingerprint(models)
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
            # Until this export finishes, the manifest vouches only for the runs it does not touch: a crash midway
            # leaves the changed runs to be written again next time.
            self.write_manifest(site, {k: fingerprints[k] for k in untouched})
            with ThreadPoolExecutor(WORKERS) as pool:
                for n, _ in enumerate(pool.map(self.rewrite_run, changed), 1):
                    self.report.runs_written = n
                    if n % 100 == 0:
                        self.progress(f"{n} of {len(changed)} changed runs written")
        self.copy_static()
        self.write_manifest(site, fingerprints)
        files = [p for p in self.outdir.rglob("*") if p.is_file()]
        self.report.files = len(files)
        self.report.bytes = sum(p.stat().st_size for p in files)
        self.report.seconds = time.monotonic() - started
        return self.report

    def global_pages(self) -> list[str]:
        """The leaderboard in every view, the plots, the runs list and their JSON; returns the base model ids."""
        models = [m.id for m in selectors.leaderboard().base_models]
        for model in ["", *models]:
            for source in selectors.SOURCES:
                for flags in ("apply", "ignore"):
                    query = {k: v for k, v in (("base_model", model), ("source", source), ("flags", flags))
                             if v != DEFAULTS[k]}
                    self.page("/?" + urlencode(query), leaderboard_file(query))
            suffix = "?" + urlencode({"base_model": model}) if model else ""
            self.write(self.api_target("/api/leaderboard", {"base_model": model} if model else {}),
                       self.fetch("/api/leaderboard" + suffix))
            self.page("/plots/per-benchmark/" + suffix, self.target("/plots/per-benchmark/",
                                                                     {"base_model": model} if model else {}, None)[0])
            self.write(self.api_target("/api/plots/per-benchmark", {"base_model": model} if model else {}),
                       self.fetch("/api/plots/per-benchmark" + suffix))
        self.page("/plots/", "plots/index.html")
        for chart in CHARTS:
            if chart != "per-benchmark":
                self.page(f"/plots/{chart}/", f"plots/{chart}/index.html")
                self.write(f"api/plots/{chart}.json", self.fetch(f"/api/plots/{chart}"))
        self.page("/runs/", "runs/index.html")
        self.page("/analysis/", "analysis/index.html")
        for table in ANALYSIS_TABLES:
            self.write(f"api/analysis/{table}.json", self.fetch(f"/api/analysis/{table}"))
        self.write(LIVE_ONLY, LIVE_ONLY_PAGE.encode())
        all_runs, after = [], None
        while True:  # the live API pages by 500; the static twin holds every run, with the same schema
            page = json.loads(self.fetch("/api/runs?" + urlencode({"limit": 500, **({"after": after} if after else {})})))
            all_runs += page["runs"]
            after = page["next"]
            if after is None:
                break
        self.write("api/runs.json", json.dumps({"runs": all_runs, "next": None}).encode())  # as ninja writes it
        return models

    def write_manifest(self, site: str, fingerprints: dict[str, str]) -> None:
        """``.export-manifest.json``: {"version", "site": fingerprint, "runs": {run id: fingerprint}}."""
        (self.outdir / MANIFEST).write_text(json.dumps({"version": MANIFEST_VERSION, "site": site,
                                                         "runs": fingerprints}, indent=1, sort_keys=True))

    def rewrite_run(self, run_id: str) -> None:
        self.remove_run(run_id)
        self.run_pages(run_id)

    def run_pages(self, run_id: str) -> None:
        """Every file of one run: its page, its step pages per trace, the search index and the JSON twins."""
        index = runs.step_index(run_id, chars=SEARCH_CHARS)
        pages = RunPages(run_id, {"agent": TracePages.of([s.index for s in index])})
        for trace in runs.trace_names(run_id):
            if trace != "agent":
                pages.traces[trace] = TracePages.of([s.index for s in runs.step_index(run_id, trace=trace, chars=0)])
        self.page(f"/runs/{run_id}/?limit={STEPS_PER_PAGE}", f"runs/{run_id}/index.html", pages)
        for trace, trace_pages in pages.traces.items():
            for n, cursor in enumerate(trace_pages.cursors, 1):
                query = {"after": cursor, "limit": STEPS_PER_PAGE, **({"trace": trace} if trace != "agent" else {})}
                if (trace, n) != ("agent", 1):  # that page is the run page, rendered above
                    self.page(f"/runs/{run_id}/steps?{urlencode(query)}", pages.file(trace, n), pages)
                if trace == "agent":
                    self.write(f"api/runs/{run_id}/steps/{n}.json",
                               self.fetch(f"/api/runs/{run_id}/steps?{urlencode(query)}"))
        agent = pages.traces["agent"]
        self.write(f"runs/{run_id}/search.json", json.dumps({
            "chars": SEARCH_CHARS,
            "steps": [[s.index, s.kind, s.tool, None if s.elapsed_s is None else round(s.elapsed_s),
                       agent.page_of_step(s.index), s.text] for s in index],
        }, ensure_ascii=False, separators=(",", ":")).encode())
        self.write(f"api/runs/{run_id}.json", self.fetch(f"/api/runs/{run_id}"))
        for part in ("facets", "timeline"):
            self.write(f"api/runs/{run_id}/{part}.json", self.fetch(f"/api/runs/{run_id}/{part}"))

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

    def site_fingerprint(self, models: list[str]) -> str:
        """sha256 over what every run page depends on besides the run: the code, templates and static files that
        render it, the step page size, and the leaderboard JSON (the published reference scores run pages quote)."""
        digest = hashlib.sha256(f"{STEPS_PER_PAGE}:{SEARCH_CHARS}".encode())
        for folder in _RENDERING_CODE:
            for path in sorted((Path(settings.BASE_DIR) / folder).rglob("*")):
                if path.suffix in (".py", ".html", ".js", ".css") and "__pycache__" not in path.parts:
                    digest.update(str(path.relative_to(settings.BASE_DIR)).encode() + path.read_bytes())
        for model in ["", *models]:
            digest.update((self.outdir / self.api_target("/api/leaderboard", {"base_model": model} if model else {}))
                          .read_bytes())
        return digest.hexdigest()


LIVE_ONLY_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Needs the live site · PostTrainBench Explorer</title></head>
<body><h1>This view needs the live site</h1>
<p>This is a static copy of the PostTrainBench Explorer. Views computed by the server on request are not in it:
facet filters (runs that used GRPO, LoRA, ...), suites other than the default one, the runs list narrowed to the
latest runs, server-side search of whole steps, the whole text of step outputs too long for a page, and the API
docs. Open the same link on the live site.</p>
<p><a href="index.html">Back to the leaderboard</a></p></body></html>
"""


def leaderboard_file(query: dict[str, str]) -> str:
    """The file of a leaderboard view: ``<key>/<value>/`` for each of base_model, source, flags that is not its
    default, then ``index.html`` (``{}`` -> ``index.html``; ``{"base_model": "X"}`` -> ``base_model/X/index.html``)."""
    parts = []
    for key in ("base_model", "source", "flags"):
        value = query.get(key) or DEFAULTS[key]
        if value != DEFAULTS[key]:
            parts += [key, _safe(value, key)]
    return "/".join([*parts, "index.html"])


def export_site(outdir: Path, *, progress: Callable[[str], None] | None = None) -> ExportReport:
    """Export the public site into ``outdir`` (created if missing); see the module docstring."""
    return Exporter(outdir, progress=progress).run()
