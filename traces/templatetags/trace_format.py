"""Template filters for runs and steps. They return plain strings: Django's autoescaping still applies, except
``highlight``, which escapes the text itself and returns it safe with its matches wrapped in ``<mark>``."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from ptbsite import units

if TYPE_CHECKING:
    from traces.tool_input import Readable, Rendered

register = template.Library()
PREVIEW_LINES = 6
PREVIEW_CHARS = 1_200  # characters of an output's preview
FULL_LIMIT = 100_000  # characters of one output rendered in the page (the selector already cut it to fewer)


def split_preview(text: str | None) -> tuple[str, str]:
    """(preview, rest) of a text: its first PREVIEW_LINES lines, at most PREVIEW_CHARS characters, and what follows
    them, the line break between the two left out, so that a long output's preview and the rest under it show each
    line once. Both are the text's own characters (its line breaks as they are)."""
    text = text or ""
    lines = text[:PREVIEW_CHARS].splitlines(keepends=True)[:PREVIEW_LINES]
    if not lines:
        return "", text
    end = sum(map(len, lines))
    line_break = len(lines[-1]) - len(lines[-1].splitlines()[0])
    rest = text[end:]
    if lines[-1].endswith("\r") and rest.startswith("\n"):  # a "\r\n" cut at PREVIEW_CHARS
        rest = rest[1:]
    return text[:end - line_break], rest


@register.filter
def preview(text: str | None) -> str:
    """The first PREVIEW_LINES lines of a text, at most PREVIEW_CHARS characters (:func:`split_preview`)."""
    return split_preview(text)[0]


@register.filter
def after_preview(text: str | None) -> str:
    """What follows a text's preview (:func:`split_preview`); "" when the preview shows all of it."""
    return split_preview(text)[1]


@register.filter
def line_count(text: str | None) -> int:
    return len((text or "").splitlines())


@register.filter
def is_long(text: str | None) -> bool:
    """Whether the text is collapsed: its preview (:func:`preview`) does not show all of it (more than
    PREVIEW_LINES lines, or more than PREVIEW_CHARS characters). An output the preview shows whole is shown as
    it is, without a "show all N lines" under it."""
    return split_preview(text)[1] != ""


@register.filter
def clipped(text: str | None) -> str:
    """At most FULL_LIMIT characters of the text."""
    return (text or "")[:FULL_LIMIT]


@register.filter
def percent(fraction: float | None) -> str:
    """A fraction 0..1 as percent with one decimal; "" for None."""
    return "" if fraction is None else f"{100 * fraction:.1f}"


@register.filter
def sum_values(values) -> int:
    """The sum of an iterable of numbers (a dict's ``values``)."""
    return sum(values)


def _needles(query: str | list[str] | tuple[str, ...] | None) -> list[str]:
    """The texts to mark: a query (the run page's search, one substring) or a list of them (the search of every
    trace's words and phrases, ``?mark=``), empty ones left out."""
    if not query:
        return []
    return [query] if isinstance(query, str) else [n for n in query if n]


@register.filter
def highlight(text: str | None, query: str | list[str] | tuple[str, ...] | None) -> str | SafeString:
    """The text HTML-escaped, each case-insensitive occurrence of ``query`` (a substring, or any of a list of
    them, the longest first where they start at one place) wrapped in ``<mark>``: the text is cut at the matches
    first and every piece escaped on its own, so a match never lands inside an entity and trace text is never
    rendered as HTML. Without a query, the text as it is (autoescaped by the template)."""
    needles = _needles(query)
    if not needles or not text:
        return text or ""
    pattern = "|".join(re.escape(n) for n in sorted(needles, key=len, reverse=True))
    pieces = re.split(f"({pattern})", text, flags=re.IGNORECASE)
    return mark_safe("".join(f"<mark>{escape(p)}</mark>" if i % 2 else escape(p) for i, p in enumerate(pieces)))


@register.filter
def has_match(text: str | None, query: str | list[str] | tuple[str, ...] | None) -> bool:
    """Whether ``query`` (or any of a list of them) occurs in the text, case-insensitively (a collapsed output
    holding a match opens)."""
    lowered = (text or "").lower()
    return any(n.lower() in lowered for n in _needles(query))


@register.filter
def kind_text(kind: str | None) -> str:
    """A verdict question in words (``disallowed_model`` -> "Disallowed model"; traces.verdicts.KIND_TEXT)."""
    from traces.verdicts import kind_text as text

    return text(kind or "")


@register.filter
def flag_text(label: str | None) -> str:
    """An effective flag label in words (``judge_error`` -> "judge error"; traces.verdicts.FLAG_TEXT)."""
    from traces.verdicts import FLAG_TEXT

    return FLAG_TEXT.get(label or "", label or "")


@register.filter
def facet_name(key: str | None) -> str:
    """A facet's short display name (``full_finetune`` -> "Full fine-tune"; traces.vocabulary.FACET_NAME)."""
    from traces.vocabulary import facet_name as name

    return name(key or "")


@register.filter
def hm(seconds: float | None) -> str:
    """Seconds -> ``H:MM`` (``ptbsite.units.hm``: rounded down to the minute); "" for None."""
    return units.hm(seconds)


@register.filter
def tool_input(step) -> Rendered:
    """A step's input rendered by its tool (:func:`traces.tool_input.render_tool_input`): ``.kind``, ``.label``,
    ``.html`` (escaped and highlighted), at most FULL_LIMIT characters of the input."""
    from traces.tool_input import render_tool_input

    return render_tool_input(step.tool, clipped(step.input))


@register.filter
def readable_input(step) -> Readable:
    """A step's input as :func:`traces.tool_input.read_tool_input` reads it, as plain text (``.kind``, ``.label``,
    ``.text``): a search result marks its matches in it (``highlight``), so a written file shows as its lines,
    not as one line of JSON with ``\\n`` in it. At most FULL_LIMIT characters of the input."""
    from traces.tool_input import read_tool_input

    return read_tool_input(step.tool, clipped(step.input))


@register.filter
def hours_hm(hours: float | None) -> str:
    """Hours (a decimal, ``1.5``) -> ``H:MM`` (``1:30``), the site's one format for durations; "" for None."""
    return "" if hours is None else hm(hours * 3600)


@register.filter
def hms(seconds: float | None) -> str:
    """Seconds -> ``H:MM:SS`` (rounded down to the second), the aligned traces' clock; "" for None."""
    if seconds is None:
        return ""
    whole = int(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


@register.filter
def index(items, position: int):
    """``items[position]`` (a column's run in a row of cells); None past the end."""
    try:
        return items[int(position)]
    except (IndexError, TypeError, ValueError):
        return None


@register.simple_tag(takes_context=True)
def step_items(context) -> SafeString:
    """``{% step_items %}``: the ``<li class="step">`` of each step of ``page.steps``, as
    :func:`traces.steps_html.step_items` writes them, from the template's ``run`` (its id and budget), ``params``
    (the trace shown), ``focus``, ``mark_query`` and ``rule_text``."""
    from traces.steps_html import step_items as write

    run, params = context.get("run"), context.get("params") or {}
    return write(getattr(context.get("page"), "steps", None) or [], run_id=getattr(run, "id", ""), trace=params.get("trace", ""),
                 budget_hours=getattr(run, "budget_hours", None), focus=context.get("focus"),
                 mark_query=context.get("mark_query", ""), rule_text=context.get("rule_text") or {})
