"""The static export's search: every step of every exported run's traces, its whole input and output (also past
the display cap), in Pagefind bundles that the export's search page (``search/index.html``,
``static/js/export_search.js``) loads on demand.

One Pagefind record per exported page of steps (:class:`SearchRecord`: up to STEPS_PER_PAGE steps, each under a
heading ``id="step-N"``), so a run costs a few files, not one per step; Pagefind answers a matching page with one
sub-result per matching step, linked to its anchor. Records go to Pagefind through its Python API
(``pagefind.index``), which runs the ``pagefind`` binary of the ``pagefind[bin]`` package as a service and sends
each record as HTML over its stdin pipe (text escaped): trace text never passes through a shell or a file. The
search page rebuilds excerpts as text nodes and ``<mark>`` elements.

Determinism (measured with pagefind 1.5.2): the same records in the same order give the same fragment and word
index files, but the filter files, ``pagefind.*.pf_meta`` and ``pagefind-entry.json`` list filter values in hash
map order, which changes from one run of the binary to the next. The exporter therefore rebuilds a bundle only
when its runs changed (docs/export.md).
"""
from __future__ import annotations

import asyncio
import base64
import gzip
import html
import json
import re
import zlib
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

from pagefind.index import IndexConfig
from pagefind.service import PagefindService

from traces.tool_input import read_tool_input

PAGEFIND_VERSION = version("pagefind")
LANGUAGE = "en"
# The filters each record carries besides "run" (its id; the run page's search sets it), as the search page offers
# them: (filter name, label).
SEARCH_FILTERS = [("agent", "Agent"), ("benchmark", "Benchmark"), ("base_model", "Base model"), ("trace", "Trace"),
                  ("kind", "Kind"), ("tool", "Tool")]
IN_FLIGHT = 64  # records sent to Pagefind and not yet answered (each holds its text in memory until answered)
WAIT_SECONDS = 600  # how long the binary's file writes may take to land, and then its exit
ENTRY = "pagefind-entry.json"
WORD = re.compile(r"[^\W_]")


class SearchIndexError(RuntimeError):
    """Pagefind refused a record, failed to write its bundle, or stopped answering."""


@dataclass
class SearchStep:
    """One step of a :class:`SearchRecord`: its index, kind, tool ("" when none) and whole text."""

    index: int
    kind: str
    tool: str
    text: str


@dataclass
class SearchRecord:
    """One exported page of steps as a Pagefind record. ``url``: the exported page (relative to the export root;
    Pagefind prefixes the site's base URL in the browser); ``steps``: the page's steps with their whole text (also
    past the display cap), each under a heading ``id="step-N"``, so that a search answers, per page, one
    sub-result per matching step linked to ``url#step-N``; ``meta``: what a result shows (``title`` the run's
    title, ``run``, ``trace``); ``filters``: {filter name: [values]} the search page can narrow by (``kind`` and
    ``tool`` list every value of the page's steps: the search page narrows sub-results to the step)."""

    url: str
    steps: list[SearchStep]
    meta: dict[str, str]
    filters: dict[str, list[str]] = field(default_factory=dict)

    def html(self) -> str:
        """The record as the HTML page Pagefind indexes: meta and filters outside the indexed body (their words are
        not searched), ``meta["steps"]`` the JSON list ``[[index, kind, tool], ...]`` of the page's steps, then
        per step a heading holding only ``·`` (an anchor for Pagefind's sub-results; no word) and the step's text,
        escaped (trace text is never markup)."""
        esc = html.escape
        head = [f'<span data-pagefind-meta="{esc(k)}">{esc(v)}</span>' for k, v in sorted(self.meta.items())]
        head.append('<span data-pagefind-meta="steps">'
                    + esc(json.dumps([[s.index, s.kind, s.tool] for s in self.steps], separators=(",", ":")))
                    + "</span>")
        head += [f'<span data-pagefind-filter="{esc(k)}">{esc(v)}</span>'
                 for k, values in sorted(self.filters.items()) for v in values]
        body = "".join(f'<h2 id="step-{s.index}">\u00b7</h2>{esc(s.text)}\n' for s in self.steps)
        return (f'<!doctype html><html lang="{LANGUAGE}"><head><meta charset="utf-8"></head><body>{"".join(head)}'
                f"<main data-pagefind-body>{body}</main></body></html>")


def step_text(tool: str | None, input_text: str | None, output: str) -> str:
    """A step's whole text as the search indexes and shows it: its input as the trace viewer shows it
    (:func:`traces.tool_input.read_tool_input`: a command, a written file's path and lines, an edit's diff, other
    JSON indented), then its output; the output alone without an input. Not the stored input, a tool's JSON
    arguments: the results showed its quotes as ``\\"`` and its line breaks as ``\\n``."""
    if not input_text:
        return output
    read = read_tool_input(tool, input_text)
    return "\n".join([read.label, read.text, output] if read.label else [read.text, output])


def has_word(text: str) -> bool:
    """Whether Pagefind finds a word in ``text`` (a letter or digit): a step without one is in no result."""
    return WORD.search(text) is not None


class _Service(PagefindService):
    """``pagefind.service.PagefindService`` reading each answer as soon as it arrives, and ending the binary only
    once its files are on disk.

    The package's reader sleeps 0.1 s before every answer, which caps indexing at 10 records a second (measured: 20
    records in 2.3 s; the 15,718 steps of bench/export.sh's 100 runs would take 26 minutes); this one reads them as
    they come and, when the binary stops or writes something that is not an answer, fails every pending request
    instead of hanging. The binary answers ``write_files`` once every file is created and its bytes handed to
    tokio's background writers, not written (``pagefind/src/output/mod.rs``: ``write_all`` without a flush), and it
    exits at once when its input closes (``std::process::exit`` in ``service/mod.rs``), as the package's ``close()``
    kills it: measured here, bundles with an empty ``pagefind-entry.json``, a cut ``pagefind-highlight.js``
    (32,768 of 44,352 bytes). :func:`_landed` waits for the writes before the binary is ended."""

    async def stop(self, *, graceful: bool) -> None:
        """End the binary: ``graceful``, close its input and wait for it to exit (SearchIndexError when it exits
        with an error or takes longer than WAIT_SECONDS); else terminate it."""
        backend = self._backend
        try:
            if backend.returncode is None and graceful:
                assert backend.stdin is not None
                backend.stdin.close()
                try:
                    await asyncio.wait_for(backend.wait(), WAIT_SECONDS)
                except TimeoutError:
                    raise SearchIndexError(f"pagefind did not exit within {WAIT_SECONDS} s") from None
                if backend.returncode:
                    raise SearchIndexError(f"pagefind exited with status {backend.returncode}")
        finally:
            if backend.returncode is None:
                backend.terminate()
                await backend.wait()
            self._poll_task.cancel()

    async def _wait_for_responses(self) -> None:
        try:
            while True:
                assert self._backend.stdout is not None
                answer = json.loads(base64.b64decode((await self._backend.stdout.readuntil(b","))[:-1]))
                future = self._responses.pop(answer.get("message_id"), None)
                if future is None or future.done():
                    continue
                payload = answer["payload"]
                if payload.get("type") == "Error":
                    future.set_exception(SearchIndexError(f"pagefind: {payload.get('message')}"))
                else:
                    future.set_result(payload)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - whatever broke the pipe, every waiting request must hear of it
            pending, self._responses = self._responses, {}
            for future in pending.values():
                if not future.done():
                    future.set_exception(SearchIndexError(f"pagefind stopped answering: {exc!r}"))


async def _common_files(service: _Service) -> dict[str, bytes]:
    """The files every bundle of this Pagefind version has whatever it indexes (``pagefind.js``, its worker, the
    UIs, the generic wasm), as the binary builds them in memory for an empty index: {file name: bytes}."""
    empty = await service.create_index(IndexConfig())
    files = await empty.get_files()
    await empty.delete_index()
    return {f["path"]: f["content"] for f in files if f["path"] != ENTRY}


def unfinished(output: Path, names: list[str]) -> list[str]:
    """Which of ``names`` (files under ``output``) are not whole yet: a gzip file (fragments, word and filter
    indexes, the meta, the wasm) that does not decompress to its end, or an entry that is not JSON naming a meta
    file that exists."""
    cut = []
    for name in names:
        data = (output / name).read_bytes()
        try:
            if name == ENTRY:
                entry = json.loads(data)
                if not all((output / f"pagefind.{language['hash']}.pf_meta").is_file()
                           for language in entry["languages"].values()):
                    raise ValueError("no meta file")
            elif not data or not gzip.decompress(data):  # an empty file: its one write has not begun
                raise EOFError("empty")
        except (ValueError, EOFError, OSError, KeyError, TypeError, zlib.error):
            cut.append(name)
    return cut


def _index_file(name: str) -> bool:
    """Whether ``name`` (relative to a bundle) is one of the files of its index, not of Pagefind's browser code."""
    return name.startswith(("fragment/", "index/", "filter/")) or name == ENTRY or (
        name.startswith("pagefind.") and name.endswith(".pf_meta"))


async def _landed(output: Path, common: dict[str, bytes] | None) -> None:
    """Wait (the binary still running) until every file it wrote under ``output`` is whole (:func:`unfinished`):
    all but the ``common`` files (replaced afterwards with their known bytes), or with ``common`` None the index's
    own files only (the others are removed afterwards). Raises SearchIndexError after WAIT_SECONDS."""
    names = sorted(p.relative_to(output).as_posix() for p in output.rglob("*") if p.is_file())
    pending = unfinished(output, [n for n in names if (n not in common if common is not None else _index_file(n))])
    deadline = asyncio.get_running_loop().time() + WAIT_SECONDS
    while pending:
        if asyncio.get_running_loop().time() > deadline:
            raise SearchIndexError(f"pagefind's writes did not land in {WAIT_SECONDS} s: {', '.join(pending[:5])}")
        await asyncio.sleep(0.05)
        pending = unfinished(output, pending)


async def _write(bundles: dict[Path, Iterable[SearchRecord]], runtime: bool) -> None:
    service = _Service()
    await service.launch()
    in_flight: set[asyncio.Future] = set()
    written = False
    common: dict[str, bytes] | None = None
    try:
        if runtime:
            common = await _common_files(service)
        for output, records in bundles.items():
            index = await service.create_index(IndexConfig())
            # ``records`` is read here, between sends (its warehouse reads block the loop briefly); requests are
            # written to the pipe in the records' order, so the same records give the same index files.
            for record in records:
                in_flight.add(asyncio.ensure_future(index.add_html_file(content=record.html(), url=record.url)))
                if len(in_flight) >= IN_FLIGHT:
                    done, in_flight = await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED)
                    for task in done:
                        task.result()
            await asyncio.gather(*in_flight)
            in_flight = set()
            await index.write_files(output_path=str(output))
            await _landed(output, common)
            await index.delete_index()
        written = True
    finally:
        for task in in_flight:
            task.cancel()
        await service.stop(graceful=written)
    for output in bundles:  # the binary has exited: nothing of its can overwrite these now
        if common is not None:
            for name, data in common.items():
                (output / name).write_bytes(data)
        else:  # a merged index is searched with the primary bundle's code and wasm
            for path in [p for p in output.rglob("*") if p.is_file()]:
                if not _index_file(path.relative_to(output).as_posix()):
                    path.unlink()


def write_bundles(bundles: dict[Path, Iterable[SearchRecord]], *, runtime: bool = True) -> None:
    """Index each folder's ``records`` (in their order) into a Pagefind bundle in that folder
    (``pagefind-entry.json``, ``pagefind.*.pf_meta``, ``fragment/`` one file per record, ``index/``, ``filter/``),
    every file whole (:class:`_Service`), with one run of the binary. ``runtime``: also write the files the browser
    loads (``pagefind.js``, its worker, the UIs, the wasm); without it the bundles are indexes to merge into one
    that has them (``mergeIndex``). Pagefind drops a record whose content has no word.
    Raises SearchIndexError (or the ``pagefind`` package's own errors: FileNotFoundError without its binary).

    Runs its own event loop: in a thread of its own when the calling thread already runs one (Playwright's sync
    API, a notebook), so ``records`` is then read in that thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(_write(bundles, runtime))
        return
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, _write(bundles, runtime)).result()
