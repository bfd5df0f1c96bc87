"""Template filters for scores: a fraction shown as percent, rounded as Django's ``floatformat`` rounds."""
from __future__ import annotations

from django import template
from django.template.defaultfilters import floatformat

register = template.Library()


@register.filter
def pct(fraction: float | None, digits: int | str = 1) -> str:
    """A fraction 0..1 as percent with ``digits`` decimals (``floatformat`` of fraction x 100); "" for None."""
    return "" if fraction is None else floatformat(100 * fraction, digits)
