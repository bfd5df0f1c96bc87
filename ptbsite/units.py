"""Units shared by every app's models. Scores are fractions (0..1) in Python everywhere; a field typed
:data:`Percent` (or :data:`PercentOrNone`) is served in percent (x 100) when its model is serialized, the unit the
API documents for scores. Templates show fractions as percent with the ``pct`` filter (``ptbsite/templatetags``)
or the run pages' ``percent`` filter. Durations are seconds in Python and JSON; pages show them as ``H:MM``
(:func:`hm`: the ``hm`` and ``hours_hm`` template filters, the run timeline's hover texts and axis)."""
from __future__ import annotations

from typing import Annotated

from pydantic import PlainSerializer


def to_percent(value: float | None) -> float | None:
    """A fraction as percent (x 100); None stays None."""
    return None if value is None else 100 * value


Percent = Annotated[float, PlainSerializer(to_percent, return_type=float)]
PercentOrNone = Annotated[float | None, PlainSerializer(to_percent, return_type=float | None)]


def hm(seconds: float | None) -> str:
    """Seconds as ``H:MM``, the site's one format for durations (plots, tables, steps alike): hours, then minutes
    rounded to the nearest, half up (``3900`` -> ``1:05``, ``29`` -> ``0:00``, ``34,783`` (9.662 h) -> ``9:40``, 50 hours
    -> ``50:00``), a leading minus when negative; "" for None."""
    if seconds is None:
        return ""
    sign = "-" if seconds < 0 else ""
    minutes = int(abs(seconds) / 60 + 0.5)  # half up (round() would send 1:30 to 0:02 and 0:30 to 0:00)
    return f"{sign}{minutes // 60}:{minutes % 60:02d}"
