"""Units shared by every app's models. Scores are fractions (0..1) in Python everywhere; a field typed
:data:`Percent` (or :data:`PercentOrNone`) is served in percent (x 100) when its model is serialized, the unit the
API documents for scores. Templates show fractions as percent with the ``pct`` filter (``ptbsite/templatetags``)
or the run pages' ``percent`` filter."""
from __future__ import annotations

from typing import Annotated

from pydantic import PlainSerializer


def to_percent(value: float | None) -> float | None:
    """A fraction as percent (x 100); None stays None."""
    return None if value is None else 100 * value


Percent = Annotated[float, PlainSerializer(to_percent, return_type=float)]
PercentOrNone = Annotated[float | None, PlainSerializer(to_percent, return_type=float | None)]
