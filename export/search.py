"""The static export's search: every step of every exported run's traces as one Pagefind record (the whole input
and output, also past the display cap), written as a Pagefind bundle that the export's search page
(``search/index.html``, ``static/js/export_search.js``) loads on demand.

Records go to Pagefind through its Python API (``pagefind.index``), which runs the ``pagefind`` binary of the
``pagefind[bin]`` package as a service and sends each record as JSON over its stdin pipe: trace text never passes
through a shell or a file. Pagefind stores each record's content as it was given, and its browser library escapes
``<`` and ``>`` when it builds an excerpt; the search page rebuilds excerpts as text nodes and ``<mark>`` elements.

Determinism (measured with pagefind 1.5.2): the same records in the same order give the same fragment and word
index files, but the filter files, ``pagefind.*.pf_meta`` and ``pagefind-entry.json`` list filter values in hash
map order, which changes from one run of the binary to the next. The exporter therefore rebuilds the bundle only
when a run changed (docs/export.md).
"""
from __future__ import annotations

import asyncio
import base64
import gzip
import json
import zlib
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

from pagefind.index import IndexConfig
from pagefind.service import PagefindService

PAGEFIND_VERSION = version("pagefind")
LANGUAGE = "en"
# The filters each record carries besides "run" (its id; the run page's search sets it), as the search page offers
# them: (filter name, label).
SEARCH_FILTERS = [("agent", "Agent"), ("benchmark", "Benchmark"), ("base_model", "Base model"), ("trace", "Trace"),
                  ("kind", "Kind"), ("tool", "Tool")]
IN_FLIGHT = 64  # records sent to Pagefind and not yet answered (each holds its text in memory until answered)
WAIT_SECONDS = 600  # how long the binary's file writes may take to land, and then its exit
ENTRY = "pagefind-entry.json"


class SearchIndexError(RuntimeError):
    """Pagefind refused a record, failed to write its bundle, or stopped answering."""


@dataclass
class SearchRecord:
    """One step as a Pagefind record. ``url``: the exported page holding the step with its ``#step-N`` anchor,
    relative to the export root (Pagefind prefixes the site's base URL in the browser); ``content``: the step's
    whole text; ``meta``: what a result shows (``title`` the run's title, ``step``, ``trace``, ``tool``, ...);
    ``filters``: {filter name: [values]} the search page can narrow by."""

    url: str
    content: str
    meta: dict[str, str]
    filters: dict[str, list[str]] = field(default_factory=dict)


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


async def _landed(output: Path, common: dict[str, bytes]) -> None:
    """Wait (the binary still running) until every file it wrote under ``output`` is whole (:func:`unfinished`);
    the common files are replaced afterwards with their known bytes. Raises SearchIndexError after WAIT_SECONDS."""
    names = sorted(p.relative_to(output).as_posix() for p in output.rglob("*") if p.is_file())
    pending = unfinished(output, [n for n in names if n not in common])
    deadline = asyncio.get_running_loop().time() + WAIT_SECONDS
    while pending:
        if asyncio.get_running_loop().time() > deadline:
            raise SearchIndexError(f"pagefind's writes did not land in {WAIT_SECONDS} s: {', '.join(pending[:5])}")
        await asyncio.sleep(0.05)
        pending = unfinished(output, pending)


async def _write(records: Iterable[SearchRecord], output: Path) -> int:
    service = _Service()
    await service.launch()
    in_flight: set[asyncio.Future] = set()
    written = False
    try:
        common = await _common_files(service)
        index = await service.create_index(IndexConfig())
        # ``records`` is read here, between sends (its warehouse reads block the loop briefly); requests are
        # written to the pipe in the records' order, so the same records give the same index files.
        for record in records:
            in_flight.add(asyncio.ensure_future(index.add_custom_record(
                url=record.url, content=record.content, language=LANGUAGE, meta=record.meta,
                filters=record.filters)))
            if len(in_flight) >= IN_FLIGHT:
                done, in_flight = await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    task.result()
        await asyncio.gather(*in_flight)
        await index.write_files(output_path=str(output))
        await _landed(output, common)
        written = True
    finally:
        for task in in_flight:
            task.cancel()
        await service.stop(graceful=written)
    for name, data in common.items():  # the binary has exited: nothing of its can overwrite these now
        (output / name).write_bytes(data)
    entry = json.loads((output / ENTRY).read_text())
    return sum(language["page_count"] for language in entry["languages"].values())


def write_bundle(records: Iterable[SearchRecord], output: Path) -> int:
    """Index ``records`` (in their order) and write the Pagefind bundle (``pagefind.js``, ``pagefind-ui.js`` and
    ``.css``, the wasm, ``pagefind-entry.json``, ``fragment/``, ``index/``, ``filter/``) into the folder ``output``,
    every file whole (:class:`_Service`). Returns how many records Pagefind kept (its ``page_count``): it drops a
    record whose content has no word (an empty step, or punctuation only such as ``{}``), which no search could
    find. Raises SearchIndexError (or the ``pagefind`` package's own errors: FileNotFoundError without its binary).

    Runs its own event loop: in a thread of its own when the calling thread already runs one (Playwright's sync
    API, a notebook), so ``records`` is then read in that thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_write(records, output))
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, _write(records, output)).result()
