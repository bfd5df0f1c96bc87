"""No page shows template text (issue 29): a Django comment over two lines (``{# ... #}``) is printed as text, and a
variable a template names but its context lacks is printed as nothing. Every public page of the live site on the
demo warehouse (crawled from ``/`` by following its links) and every HTML file of the static export is read for
``{#``, ``#}``, ``{%``, ``%}``, ``{{``, ``}}`` in its visible text, and for the marker that ``string_if_invalid``
prints in place of a variable the context lacks."""
from __future__ import annotations

import re
from collections import deque
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qsl, urljoin, urlsplit

import pytest
from django.template import Context, Template

from .test_export import exported  # noqa: F401  (fixture; export_warehouse is in conftest)

pytestmark = pytest.mark.django_db

TEMPLATE_SYNTAX = re.compile(r"\{#|#\}|\{%|%\}|\{\{|\}\}")
MISSING = "MISSING-VARIABLE"
# Trace content (the agent's commands and outputs, a task's text) is shown as it was written, and may hold template
# syntax of its own (a chat template's ``{% for message in messages %}``): such text is in <pre> or <code>.
VERBATIM = {"pre", "code", "script", "style", "textarea", "template"}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
# Live-only pages that are not public (staff forms, the API's JSON, the log-in page) or not HTML.
NOT_WALKED = ("/api/", "/static/", "/admin/", "/reruns/", "/login/", "/logout/")


class VisibleText(HTMLParser):
    """The text a visitor reads: text nodes outside VERBATIM elements, plus ``title``/``alt``/``placeholder``
    attributes (shown on hover or in an empty field); and every ``href``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.text: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "a" and values.get("href"):
            self.links.append(values["href"] or "")
        if not self.verbatim():
            self.text += [v for k, v in attrs if k in ("title", "alt", "placeholder", "aria-label") and v]
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self.stack:
            while self.stack.pop() != tag:
                pass

    def verbatim(self) -> bool:
        return any(tag in VERBATIM for tag in self.stack)

    def handle_data(self, data: str) -> None:
        if not self.verbatim() and data.strip():
            self.text.append(data)


def read(body: str) -> VisibleText:
    parser = VisibleText()
    parser.feed(body)
    parser.close()
    return parser


def leaks(body: str) -> list[str]:
    """The visible text pieces of ``body`` that hold template syntax or the missing-variable marker."""
    return [t.strip()[:120] for t in read(body).text if TEMPLATE_SYNTAX.search(t) or MISSING in t]


def test_the_reader_finds_a_leaked_comment_and_ignores_trace_text():
    assert leaks("<p>{# a comment\nover two lines #}</p><pre>{% for m in messages %}</pre>") == [
        "{# a comment\nover two lines #}"]
    assert leaks(f'<p title="{MISSING}">x</p><code>{{{{ x }}}}</code>') == [MISSING]
    assert leaks("<p>ok<br>fine</p><img src=x alt=''>") == []


def _kind(url: str) -> tuple[str, tuple]:
    """A page kind: the path (every run is its own), with a step's number dropped, and the query's keys (the
    suite's value too: each suite is its own set of pages). Steps and sort orders of one kind render alike."""
    parts = urlsplit(url)
    path = re.sub(r"/steps/\d+/", "/steps/N/", parts.path)
    query = dict(parse_qsl(parts.query))
    return path, tuple(sorted((k, v if k == "suite" else "") for k in query for v in [query[k]]))


@pytest.fixture
def loud_templates(settings):
    """Templates print MISSING in place of a variable their context lacks (Django prints '' by default)."""
    settings.TEMPLATES = [{**t, "OPTIONS": {**t.get("OPTIONS", {}), "string_if_invalid": MISSING}}
                          for t in settings.TEMPLATES]


def test_no_live_page_shows_template_text(demo_ingested, client, loud_templates):
    assert Template("{{ no_such_variable }}").render(Context()) == MISSING
    queue = deque(["/", "/?suite=frogsgame", "/runs/", "/plots/", "/analysis/", "/analysis/?suite=frogsgame"])
    seen = {_kind(url) for url in queue}
    walked, found = 0, {}
    while queue:
        url = queue.popleft()
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        walked += 1
        if not response["Content-Type"].startswith("text/html"):
            continue
        body = response.content.decode()
        if bad := leaks(body):
            found[url] = bad
        for href in read(body).links:
            target = urljoin(url, href.split("#")[0])
            parts = urlsplit(target)
            if parts.scheme or parts.netloc or not parts.path or parts.path.startswith(NOT_WALKED):
                continue
            if (kind := _kind(target)) not in seen:
                seen.add(kind)
                queue.append(target)
    assert found == {}
    # Every run of the demo tree was reached: its page and its pages of steps.
    runs = {p for p, _ in seen if re.fullmatch(r"/runs/[^/]+/", p)}
    assert len(runs) == len(demo_ingested[0].runs) and walked > 3 * len(runs), (len(runs), walked)


def test_no_exported_page_shows_template_text(exported: Path):  # noqa: F811
    pages = sorted(exported.rglob("*.html"))
    found = {str(p.relative_to(exported)): bad for p in pages if (bad := leaks(p.read_text()))}
    assert found == {}
    assert len(pages) > 50 and (exported / "index.html") in pages and (exported / "analysis/index.html") in pages
