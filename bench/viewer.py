"""Our run page against Inspect View (inspect-ai's log viewer) on the same trace, side by side (issue 18).

Usage: .venv/bin/python bench/viewer.py [--sizes 200,20000,60000] [--rounds 3] [--workers 3] [--work DIR]

For each size N (steps):

1. **The trace.** The demo generator's 10-hour Claude Code run (``make_demo_results --runs 4 --seed 7``, 41,486
   steps, one stream-json line per step) is cut or repeated with fresh ids to N steps (``benchlib.build_big``).
   Three words are planted so that each target is one known step: the first step is the harness's own text
   (``CUDA available``, unchanged); the last step (the final ``result`` event) gets ``LAST_WORD``; the tool
   result at 90% of the trace gets ``SEARCH_WORD``, which no other step contains.
2. **The same content twice.** Ours: a fresh data folder (DuckLake with a SQLite catalog, the embedded default),
   ``migrate``, ``import_published``, ``manage.py ingest`` of the tree, then ``manage.py serve`` (gunicorn,
   ``--workers`` processes, default 3 as ``serve``'s, of its default 24 threads) on a free port with ``PTB_PAGE_CACHE=0``, so every page is computed (no page served from
   the cache: a deep link or a search is usually a page nobody asked for yet). Theirs: the trace as parsed by our
   parser (``ingest.parsers.parse_trace`` after ``ingest.redaction``, as the ingest does) written as an inspect
   ``.eval`` log with ``inspect_ai.log.write_eval_log``: one sample whose ``messages`` map step for step
   (system -> ``ChatMessageSystem``, text -> ``ChatMessageUser``, assistant/result -> ``ChatMessageAssistant``,
   thinking -> ``ChatMessageAssistant`` with ``ContentReasoning``, tool_call -> ``ChatMessageAssistant`` with one
   ``ToolCall``, tool_result -> ``ChatMessageTool``); the sample's ``input`` is the run's prompt.txt. Served by
   ``inspect view --log-dir DIR --port P`` on a free port.
3. **Cold browser, median of ``--rounds`` alternating rounds** (ours, theirs, ours, ...): headless Chromium
   (``/usr/bin/chromium``) through Playwright, a new browser context (empty cache) for every measure, viewport
   1280x900. A script added before any page script runs a ``requestAnimationFrame`` loop that finds the target
   text in the DOM's text nodes and notes ``performance.now()`` (ms since navigation start) once a range over it
   has a box with area, every ancestor rendered (a closed ``<details>`` is not), and, where said, inside the
   viewport. Measures:

   - *first steps*: navigation start to the first step's text rendered (ours: ``/runs/<id>/``, in ``#steps``:
     the page opens with the run's header above the trace, so "rendered" does not ask for the viewport; theirs:
     ``#/logs/<file>/samples/sample/1/1/messages``, the sample's Messages tab, anywhere in the page).
   - *deep link*: navigation start to the last step's ``LAST_WORD`` inside the viewport (ours:
     ``/runs/<id>/?step=<N-1>#step-<N-1>``; theirs: the Messages tab with ``?message=<the last message's id>``,
     Inspect View's own message link form, ``sampleMessageUrl`` in its bundle).
   - *search*: in the first-steps context, once the page has loaded (its ``load`` event: ours has bound the
     search form to htmx by then): from just before the query is typed
     (Playwright ``fill``) to a ``SEARCH_WORD`` inside the viewport (ours: the trace's search box and Enter, an
     htmx partial; theirs: Ctrl+F opens Inspect View's own find band, which searches the sample's messages and
     scrolls the match into view; no Enter, its find runs as you type).
   Before the rounds, every worker of ours has served each of these pages (:func:`warm_up`), and a browser
   round on both sides that is not counted warms the rest (theirs: the log read once, as ours is ingested once).
4. **Server**: ours, the run page's bytes and time at each size, as ratios to the first size (``urllib`` GETs on
   loopback, page cache off, all sizes' servers kept up until the end and timed in turn: :func:`page_times`); both servers' resident memory after the browser rounds
   (:func:`memory_mb`: RSS summed over the processes, and PSS, which counts a page shared by several processes
   once).

Prints one markdown table (medians, ratio ours / theirs) and the raw samples. Needs playwright and psutil
(requirements-dev.txt, requirements-eval.txt for inspect-ai).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ptbsite.settings")

from benchlib import ROOT, build_big, demo_tree, free_port, long_run_dir  # noqa: E402 (bench/benchlib.py)

FIRST_TEXT = "CUDA available"  # the harness's first line: step 0 of every size
LAST_WORD = "benchlaststepmark"
SEARCH_WORD = "benchquokkasearch"
SEARCH_AT = 0.9  # the planted search word's step, as a fraction of the trace
VIEWPORT = {"width": 1280, "height": 900}
TIMEOUT_S = 180.0  # one measure gives up after this long
HARNESS_LINES = 4  # the plain-text lines before init make one step: lines = steps + this (benchlib.build_big)


# ---------------------------------------------------------------------------------------------------- the trace

def _plant(line: bytes, word: str) -> bytes:
    """``line`` (``[time] {json}`` of a ``result`` event or a ``user`` tool result) with `` word`` appended to its
    text. Raises ValueError for any other line."""
    prefix, _, raw = line.partition(b"] ") if line.startswith(b"[") else (b"", b"", line)
    event = json.loads(raw)
    if event.get("type") == "result":
        event["result"] = f"{event.get('result') or ''} {word}"
    elif event.get("type") == "user":
        block = event["message"]["content"][0]
        if not isinstance(block.get("content"), str):
            raise ValueError("not a text tool result")
        block["content"] += f"\n{word}"
        event.pop("tool_use_result", None)  # Claude Code's copy of the result; the parser reads content
    else:
        raise ValueError(f"cannot plant a word in a {event.get('type')} event")
    body = json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode()
    return (prefix + b"] " + body) if prefix else body


def build_trace(long_run: Path, root: Path, steps: int) -> Path:
    """A results tree at ``root`` with one run of about ``steps`` steps, words planted (module doc); returns the
    run directory."""
    build_big(long_run, root, lines=steps + HARNESS_LINES)
    run_dir = next(root.glob("*/*/solve_out.txt")).parent
    trace = run_dir / "solve_out.txt"
    lines = trace.read_bytes().rstrip(b"\n").split(b"\n")
    lines[-1] = _plant(lines[-1], LAST_WORD)
    at = int(len(lines) * SEARCH_AT)
    for i in list(range(at, len(lines) - 1)) + list(range(at - 1, 0, -1)):
        if b'"type":"user"' in lines[i] and b'"tool_result"' in lines[i]:
            try:
                lines[i] = _plant(lines[i], SEARCH_WORD)
                break
            except (ValueError, KeyError, IndexError):
                continue
    trace.write_bytes(b"\n".join(lines) + b"\n")
    return run_dir


# -------------------------------------------------------------------------------------- the inspect .eval log

def write_eval(run_dir: Path, dest: Path) -> tuple[int, str]:
    """The run's trace as an inspect ``.eval`` log at ``dest`` (module doc, step 2); returns (messages, the last
    message's id)."""
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSample, EvalSpec, write_eval_log
    from inspect_ai.model import (ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser,
                                  ContentReasoning)
    from inspect_ai.tool import ToolCall, ToolCallError

    from ingest.parsers import parse_trace
    from ingest.redaction import Redactor

    text = Redactor.from_environ(os.environ).redact((run_dir / "solve_out.txt").read_text(errors="replace"))
    trace = parse_trace(text, scaffold="claude")
    messages: list = []
    for s in trace.steps:
        if s.kind == "system":
            messages.append(ChatMessageSystem(content=s.output + ("\n" + s.input if s.input else "")))
        elif s.kind == "text":
            messages.append(ChatMessageUser(content=s.output))
        elif s.kind in ("assistant", "result"):
            messages.append(ChatMessageAssistant(content=s.output or "(empty)"))
        elif s.kind == "thinking":
            messages.append(ChatMessageAssistant(content=[ContentReasoning(reasoning=s.output or "")]))
        elif s.kind == "tool_call":
            messages.append(ChatMessageAssistant(content="", tool_calls=[
                ToolCall(id=s.call_id or f"call{s.index}", function=s.tool or "tool", arguments=_arguments(s))]))
        elif s.kind == "tool_result":
            messages.append(ChatMessageTool(content=s.output, tool_call_id=s.call_id, function=s.tool,
                                            error=ToolCallError("unknown", s.output[:200]) if s.is_error else None))
    prompt = (run_dir / "prompt.txt").read_text() if (run_dir / "prompt.txt").exists() else "the agent's task"
    sample = EvalSample(id=1, epoch=1, input=prompt, target="", messages=messages)
    log = EvalLog(
        status="success",
        eval=EvalSpec(created="2026-04-06T14:02:00+00:00", task="posttrainbench_trace", dataset=EvalDataset(),
                      model="anthropic/claude-opus-4-6", config=EvalConfig()),
        samples=[sample],
    )
    dest.parent.mkdir(parents=True, exist_ok=True)
    write_eval_log(log, str(dest), format="eval")
    return len(messages), str(messages[-1].id)


def _arguments(step) -> dict:
    """A tool call's arguments as inspect wants them: our step input is the Bash command or the arguments as
    compact JSON."""
    if step.tool == "Bash":
        return {"command": step.input or ""}
    try:
        value = json.loads(step.input or "{}")
    except ValueError:
        return {"input": step.input}
    return value if isinstance(value, dict) else {"input": value}


# ---------------------------------------------------------------------------------------------------- servers

@dataclass
class Server:
    """A server process the bench started: its name, base URL and ``Popen``."""

    name: str
    url: str
    proc: subprocess.Popen
    log: Path

    def stop(self) -> None:
        """Ends the process and its children (by id: the ones this bench started)."""
        import psutil

        try:
            family = [psutil.Process(self.proc.pid), *psutil.Process(self.proc.pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            return
        for p in family:
            try:
                p.terminate()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(family, timeout=15)
        for p in family:
            if p.is_running():
                p.kill()


def _wait_ready(server: Server, path: str, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise SystemExit(f"{server.name} exited ({server.proc.returncode}); see {server.log}")
        try:
            with urllib.request.urlopen(server.url + path, timeout=10) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise SystemExit(f"{server.name} did not answer {path} within {seconds:.0f} s; see {server.log}")


def site_env(data_dir: Path) -> dict[str, str]:
    """The environment of our site on its own data folder: the embedded default warehouse (DuckLake, SQLite
    catalog) under it, the page cache off."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PTB_")}
    env.update(PTB_DATA_DIR=str(data_dir), PTB_PAGE_CACHE="0", DJANGO_DEBUG="0", PYTHONUNBUFFERED="1")
    return env


def ingest_site(tree: Path, data_dir: Path) -> float:
    """A fresh data folder holding the published results and ``tree``; returns the ingest's seconds."""
    shutil.rmtree(data_dir, ignore_errors=True)
    data_dir.mkdir(parents=True)
    env = site_env(data_dir)

    def manage(*args: str) -> None:
        subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)

    manage("migrate", "--noinput", "-v0")
    manage("import_published")
    started = time.perf_counter()
    manage("ingest", str(tree), "--quiet")
    return time.perf_counter() - started


def start_ours(data_dir: Path, work: Path, workers: int) -> Server:
    """``manage.py serve --workers N`` (gunicorn, its default threads) on a free port; waits until it answers."""
    port = free_port()
    log = work / f"serve-{port}.log"
    proc = subprocess.Popen([sys.executable, "manage.py", "serve", "--workers", str(workers), "--bind",
                             f"127.0.0.1:{port}"], cwd=ROOT,
                            env=site_env(data_dir), stdout=log.open("wb"), stderr=subprocess.STDOUT)
    server = Server("ours", f"http://127.0.0.1:{port}", proc, log)
    _wait_ready(server, "/api/runs")
    return server


def start_theirs(log_dir: Path, work: Path) -> Server:
    """``inspect view --log-dir log_dir`` on a free port; waits until it lists the logs."""
    port = free_port()
    log = work / f"inspect-view-{port}.log"
    inspect = Path(sys.executable).with_name("inspect")
    proc = subprocess.Popen([str(inspect), "view", "--log-dir", str(log_dir), "--host", "127.0.0.1", "--port",
                             str(port)], cwd=work, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    server = Server("theirs", f"http://127.0.0.1:{port}", proc, log)
    _wait_ready(server, "/api/logs")
    return server


def memory_mb(server: Server) -> dict[str, float]:
    """Resident memory of the server's processes, MB: ``rss`` summed (shared pages counted in every process, as
    the issue's figures were), ``pss`` summed (each shared page divided among the processes sharing it: what the
    processes hold together), ``processes``; ``helper_rss``: processes beside the server (ours: the job reaper
    ``serve`` starts), not in the sums. Ours: gunicorn's master and workers; theirs: ``inspect view`` and any
    child. Read from /proc through psutil."""
    import psutil

    root = psutil.Process(server.proc.pid)
    out = {"rss": 0.0, "pss": 0.0, "processes": 0, "helper_rss": 0.0}
    for proc in [root, *root.children(recursive=True)]:
        try:
            info, cmd = proc.memory_full_info(), " ".join(proc.cmdline())
        except psutil.NoSuchProcess:
            continue
        if "reap_jobs" in cmd:
            out["helper_rss"] += info.rss / 2**20
            continue
        out["rss"] += info.rss / 2**20
        out["pss"] += info.pss / 2**20
        out["processes"] += 1
    return out


def _get(url: str, headers: dict[str, str] | None = None) -> int:
    """GET ``url``; returns the body's bytes."""
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=120) as answer:
        return len(answer.read())


def warm_up(urls: list[tuple[str, dict[str, str]]], times: int) -> None:
    """GET each (url, headers) ``times`` times: with 3 workers that reach every one, so no browser measure meets a
    worker's first request of a kind (a worker's first scan of a 60k-step trace reads its Parquet files: ~2 s)."""
    for _ in range(times):
        for url, headers in urls:
            _get(url, headers)


def page_times(pages: dict[int, str], repeat: int = 9) -> dict[int, tuple[float, int]]:
    """{steps: (median ms, bytes)} of ``repeat`` GETs of each run page on loopback, the sizes interleaved (one GET
    of each size in turn, so a busy moment of the shared machine falls on every size alike)."""
    samples: dict[int, list[float]] = {k: [] for k in pages}
    sizes = {k: _get(url) for k, url in pages.items()}
    for _ in range(repeat):
        for k, url in pages.items():
            started = time.perf_counter()
            _get(url)
            samples[k].append(1000 * (time.perf_counter() - started))
    return {k: (statistics.median(v), sizes[k]) for k, v in samples.items()}


# ------------------------------------------------------------------------------------------------ the browser

# Runs before any page script: every animation frame, look for window.__bench.target in the text under
# window.__bench.root and note when a range over it is drawn (and inside the viewport when asked).
WATCH_JS = """
window.__bench = {target: null, root: null, viewport: false, t0: 0, seen: null};
(function () {
  function drawn(node, at, length, viewport) {
    const range = document.createRange();
    range.setStart(node, at);
    range.setEnd(node, at + length);
    for (const r of range.getClientRects()) {
      if (r.width <= 0 || r.height <= 0) continue;
      if (viewport && (r.bottom <= 0 || r.top >= innerHeight || r.right <= 0 || r.left >= innerWidth)) continue;
      const style = getComputedStyle(node.parentElement);
      if (style.visibility === "hidden" || style.opacity === "0") continue;
      return true;
    }
    return false;
  }
  function check() {
    const b = window.__bench;
    if (b.target && b.seen === null && document.body) {
      const root = b.root ? document.querySelector(b.root) : document.body;
      if (root) {
        const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
        let node;
        while ((node = walker.nextNode())) {
          const at = node.nodeValue.indexOf(b.target);
          if (at >= 0 && drawn(node, at, b.target.length, b.viewport)) { b.seen = performance.now(); break; }
        }
      }
    }
    requestAnimationFrame(check);
  }
  requestAnimationFrame(check);
})();
"""


@dataclass
class Site:
    """One side's URLs and how to search it."""

    name: str
    first_url: str
    deep_url: str
    first_root: str | None  # a CSS selector the first step's text must be under (None: the whole page)

    def search(self, page, word: str) -> None:
        """Types ``word`` into the site's search: ours, the trace's search box and Enter; theirs, Ctrl+F and the
        find band."""
        if self.name == "ours":
            page.fill("#trace-filters input[name=q]", word)
            page.press("#trace-filters input[name=q]", "Enter")
        else:
            page.keyboard.press("Control+f")
            page.wait_for_selector(".findBand input", timeout=10_000)
            page.fill(".findBand input", word)


def _arm(page, target: str, *, root: str | None = None, viewport: bool = False, restart: bool = False) -> None:
    """Sets what the watch script looks for (in the page before navigation: the init script reads it)."""
    page.evaluate("([t, r, v, restart]) => Object.assign(window.__bench, {target: t, root: r, viewport: v, "
                  "seen: null, t0: restart ? performance.now() : 0})", [target, root, viewport, restart])


def _seen(page, label: str, shots: Path) -> float:
    """ms from the armed start (navigation start, or the ``restart`` moment) to the target drawn; after TIMEOUT_S,
    saves a screenshot under ``shots`` and raises SystemExit naming the measure."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function("window.__bench && window.__bench.seen !== null", timeout=TIMEOUT_S * 1000,
                               polling=50)
    except PlaywrightTimeout:
        shot = shots / f"timeout-{label.replace(' ', '-')}.png"
        page.screenshot(path=str(shot))
        raise SystemExit(f"{label}: not seen within {TIMEOUT_S:.0f} s ({page.url}); screenshot {shot}") from None
    return page.evaluate("window.__bench.seen - window.__bench.t0")


@contextmanager
def _watched_page(browser, watch: dict):
    """A page in a fresh browser context, with the bench's watcher (``WATCH_JS``) set to ``watch`` before any script."""
    context = browser.new_context(viewport=VIEWPORT, bypass_csp=True)
    try:
        page = context.new_page()
        page.add_init_script(WATCH_JS + f"Object.assign(window.__bench, {json.dumps(watch)});")
        yield page
    finally:
        context.close()


def measure_site(browser, site: Site, shots: Path) -> dict[str, float]:
    """One round of the three browser measures of ``site``, each in a fresh context (module doc, step 3)."""
    out: dict[str, float] = {}
    with _watched_page(browser, {"target": FIRST_TEXT, "root": site.first_root}) as page:
        page.goto(site.first_url, wait_until="commit")
        out["first steps ms"] = _seen(page, f"{site.name} first steps", shots)
        page.wait_for_load_state("load")  # a user types once the page is loaded (ours: htmx has bound the form)
        _arm(page, SEARCH_WORD, viewport=True, restart=True)
        site.search(page, SEARCH_WORD)
        out["search ms"] = _seen(page, f"{site.name} search", shots)
    with _watched_page(browser, {"target": LAST_WORD, "viewport": True}) as page:
        page.goto(site.deep_url, wait_until="commit")
        out["deep link ms"] = _seen(page, f"{site.name} deep link", shots)
    return out


# ------------------------------------------------------------------------------------------------------- main

@dataclass
class SizeResult:
    """Everything measured at one size: ``samples[side][measure]`` holds the rounds' ms."""

    steps: int
    messages: int
    eval_bytes: int
    ingest_s: float
    page_url: str
    memory: dict[str, dict[str, float]]
    samples: dict[str, dict[str, list[float]]]

    def median(self, side: str, what: str) -> float:
        return statistics.median(self.samples[side][what])


def run_size(browser, long_run: Path, work: Path, steps: int, rounds: int,
             workers: int) -> tuple[SizeResult, Server]:
    """Build, serve and measure one size (module doc, steps 1-4); returns the results and our server, still running
    (the run pages of every size are timed together at the end)."""
    tree = work / f"tree-{steps}"
    shutil.rmtree(tree, ignore_errors=True)
    run_dir = build_trace(long_run, tree, steps)
    log_dir = work / f"logs-{steps}"
    shutil.rmtree(log_dir, ignore_errors=True)
    messages, last_id = write_eval(run_dir, log_dir / "trace.eval")
    eval_bytes = (log_dir / "trace.eval").stat().st_size
    ingest_s = ingest_site(tree, work / f"site-{steps}")
    ours = start_ours(work / f"site-{steps}", work, workers)
    theirs = start_theirs(log_dir, work)
    try:
        with urllib.request.urlopen(ours.url + "/api/runs", timeout=60) as answer:
            run = json.load(answer)["runs"][0]
        run_id, count = run["id"], run["step_count"]
        page_url = f"{ours.url}/runs/{run_id}/"
        htmx = {"HX-Request": "true", "HX-Target": "trace-results"}
        warm_up([(page_url, {}), (f"{page_url}?step={count - 1}", {}), (f"{page_url}timeline.json", {}),
                 (f"{page_url}?kind=&tool=&q={SEARCH_WORD}", htmx)], times=3 * workers)
        sample = f"{theirs.url}/#/logs/trace.eval/samples/sample/1/1/messages"
        sites = [
            Site("ours", f"{ours.url}/runs/{run_id}/", f"{ours.url}/runs/{run_id}/?step={count - 1}#step-{count - 1}",
                 "#steps"),
            Site("theirs", sample, f"{sample}?message={last_id}", None),
        ]
        samples: dict[str, dict[str, list[float]]] = {s.name: {} for s in sites}
        for rnd in range(-1, rounds):  # round -1 warms both servers up (not counted)
            for site in (sites if rnd % 2 == 0 else sites[::-1]):
                figures = measure_site(browser, site, work)
                print(f"  {steps} steps, {'warm-up' if rnd < 0 else f'round {rnd + 1}'}, {site.name}: "
                      + ", ".join(f"{k} {v:,.0f}" for k, v in figures.items()), flush=True)
                if rnd >= 0:
                    for k, v in figures.items():
                        samples[site.name].setdefault(k, []).append(v)
        memory = {"ours": memory_mb(ours), "theirs": memory_mb(theirs)}
    except BaseException:
        ours.stop()
        raise
    finally:
        theirs.stop()
    return SizeResult(count, messages, eval_bytes, ingest_s, page_url, memory, samples), ours


def table(results: list[SizeResult], pages: dict[int, tuple[float, int]]) -> str:
    """The markdown table: medians, ours / theirs; ``pages``: :func:`page_times` by step count."""
    anchor_ms, anchor_bytes = pages[results[0].steps]
    head = ("| steps | first steps ms: ours / theirs | ratio | deep link ms: ours / theirs | ratio "
            "| search ms: ours / theirs' find | ratio | server RSS (PSS) MB: ours / theirs | ratio "
            "| run page bytes (x first size) | run page server ms (x first size) |")
    rows = [head, "|" + "---:|" * 11]
    for r in results:
        cells = [f"{r.steps:,}"]
        for what in ("first steps ms", "deep link ms", "search ms"):
            o, t = r.median("ours", what), r.median("theirs", what)
            cells += [f"{o:,.0f} / {t:,.0f}", f"{o / t:.2f}x"]
        mo, mt = r.memory["ours"], r.memory["theirs"]
        cells += [f"{mo['rss']:,.0f} ({mo['pss']:,.0f}) / {mt['rss']:,.0f} ({mt['pss']:,.0f})",
                  f"{mo['rss'] / mt['rss']:.2f}x ({mo['pss'] / mt['pss']:.2f}x)"]
        page_ms, page_bytes = pages[r.steps]
        cells += [f"{page_bytes:,} ({page_bytes / anchor_bytes:.2f}x)", f"{page_ms:,.0f} ({page_ms / anchor_ms:.2f}x)"]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="200,20000,60000", help="trace sizes in steps, comma-separated")
    parser.add_argument("--rounds", type=int, default=3, help="alternating timed rounds per size (median)")
    parser.add_argument("--workers", type=int, default=3, help="our server's worker processes (serve's default: 3)")
    parser.add_argument("--work", type=Path, help="work folder (default: a new temporary folder, removed after)")
    args = parser.parse_args()
    work = (args.work or Path(tempfile.mkdtemp(prefix="ptb-bench-viewer-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PTB_DATA_DIR", str(work / "bench-process"))  # this process only parses and converts
    import django

    django.setup()
    from playwright.sync_api import sync_playwright

    started = time.strftime("%Y-%m-%d %H:%M")
    long_run = long_run_dir(demo_tree(work / "demo"))
    results: list[SizeResult] = []
    servers: list[Server] = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
            for steps in (int(s) for s in args.sizes.split(",")):
                r, server = run_size(browser, long_run, work, steps, args.rounds, args.workers)
                results.append(r)
                servers.append(server)
                o, t = r.memory["ours"], r.memory["theirs"]
                print(f"{r.steps:,} steps: {r.messages:,} inspect messages, .eval {r.eval_bytes / 1e6:.1f} MB, "
                      f"ingest {r.ingest_s:.1f} s; ours {o['processes']:.0f} processes, RSS {o['rss']:.0f} MB, "
                      f"PSS {o['pss']:.0f} MB (+{o['helper_rss']:.0f} MB RSS: the job reaper); theirs "
                      f"{t['processes']:.0f} process(es), RSS {t['rss']:.0f} MB, PSS {t['pss']:.0f} MB", flush=True)
            browser.close()
        pages = page_times({r.steps: r.page_url for r in results})
    finally:
        for server in servers:
            server.stop()
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    load = os.getloadavg()
    print(f"\nstarted {started}, load average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; medians of "
          f"{args.rounds} alternating rounds, a cold browser context each; run pages: median of 9 GETs, sizes "
          f"interleaved\n")
    print(table(results, pages))


if __name__ == "__main__":
    main()
