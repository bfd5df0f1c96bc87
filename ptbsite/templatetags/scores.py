"""Template filters for scores: a fraction shown as percent, rounded as Django's ``floatformat`` rounds."""
from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Context, Decimal

from django import template
from django.template.defaultfilters import floatformat
from django.utils.safestring import mark_safe

from ptbsite.query import ascii_int

register = template.Library()


_QUANTUM = {d: Decimal(1).scaleb(-d) for d in range(10)}
_WIDE = Context(prec=60)  # wider than any float's digits plus ten decimals: quantize is then exact


@register.filter
def fixed(value: float | int | None, digits: int | str = 1) -> str:
    """``value`` with ``digits`` decimals, the same text as Django's ``floatformat`` (the value's shortest decimal
    form rounded half up, no sign on a zero, no grouping), computed directly: ``floatformat`` parses its argument
    and localizes each number, ~0.1 ms a call, and the leaderboard from runs at K=90 calls it ~1,100 times per page
    (issue 24; ``tests/test_scores_filter.py`` compares both over many values). Any other input (text, a negative
    or suffixed ``digits`` such as ``"-1"`` or ``"0g"``, infinities) goes to ``floatformat`` itself; "" for None."""
    if value is None:
        return ""
    places = digits if isinstance(digits, int) else ascii_int(str(digits))
    if type(value) not in (float, int) or places is None or places not in _QUANTUM or not math.isfinite(value):
        return floatformat(value, digits)
    rounded = Decimal(repr(value)).quantize(_QUANTUM[places], ROUND_HALF_UP, _WIDE)
    return f"{abs(rounded) if rounded.is_zero() else rounded:f}"


@register.filter
def pct(fraction: float | None, digits: int | str = 1) -> str:
    """A fraction 0..1 as percent with ``digits`` decimals (``floatformat`` of fraction x 100, :func:`fixed`); ""
    for None."""
    return "" if fraction is None else fixed(100 * fraction, digits)


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
