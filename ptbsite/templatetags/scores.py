"""Template filters for scores: a fraction shown as percent, rounded as Django's ``floatformat`` rounds."""
from __future__ import annotations

from django import template
from django.template.defaultfilters import floatformat
from django.utils.safestring import mark_safe

register = template.Library()


@register.filter
def pct(fraction: float | None, digits: int | str = 1) -> str:
    """A fraction 0..1 as percent with ``digits`` decimals (``floatformat`` of fraction x 100); "" for None."""
    return "" if fraction is None else floatformat(100 * fraction, digits)


_ARIA = {"asc": "ascending", "desc": "descending"}


@register.simple_tag
def aria_sort(params: dict, column: str) -> str:
    """` aria-sort="ascending|descending"` for the column a table is sorted by (``params["sort"]`` and
    ``params["dir"]``), "" for the others. The value comes from a fixed set, never from the request."""
    if params.get("sort") != column:
        return ""
    return mark_safe(f' aria-sort="{_ARIA.get(str(params.get("dir")), "ascending")}"')


@register.simple_tag
def sort_arrow(params: dict, column: str) -> str:
    """▲ (ascending) or ▼ (descending) after the sorted column's label, "" for the others."""
    if params.get("sort") != column:
        return ""
    arrow = "▼" if params.get("dir") == "desc" else "▲"
    return mark_safe(f'<span class="sort-arrow" aria-hidden="true">{arrow}</span>')
