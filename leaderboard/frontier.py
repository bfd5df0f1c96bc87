"""The Pareto frontier of points scored on two objectives, as a pure function (no I/O)."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal, TypeVar

P = TypeVar("P")
Direction = Literal["min", "max"]


def pareto_frontier(
    points: Sequence[P],
    *,
    x: Callable[[P], float],
    y: Callable[[P], float],
    x_direction: Direction = "min",
    y_direction: Direction = "max",
) -> list[P]:
    """The non-dominated points, in order from the best ``x`` to the worst (so from the worst ``y`` to the best).

    Args:
        points: any objects; ``x(p)`` and ``y(p)`` read their two objectives (e.g. hours used and percent score).
        x_direction, y_direction: ``"min"`` where less is better (time, cost), ``"max"`` where more is better.

    Returns:
        The points no other point dominates. ``a`` dominates ``b`` when ``a`` is at least as good on both
        objectives and strictly better on one. So of two points tied on one objective only the one better on the
        other stays; exact duplicates do not dominate each other and all stay, in their input order. An empty
        input gives ``[]``, a single point gives itself.

    Raises:
        ValueError: a direction other than min/max, or an objective that is not a finite number.
    """
    for direction in (x_direction, y_direction):
        if direction not in ("min", "max"):
            raise ValueError(f"direction must be 'min' or 'max', not {direction!r}")
    # Normalise to (cost to minimise, gain to maximise).
    sign_x = 1.0 if x_direction == "min" else -1.0
    sign_y = 1.0 if y_direction == "max" else -1.0
    keyed = []
    for index, point in enumerate(points):
        cost, gain = sign_x * float(x(point)), sign_y * float(y(point))
        if not (math.isfinite(cost) and math.isfinite(gain)):
            raise ValueError(f"point {index}: objectives must be finite numbers, got ({x(point)}, {y(point)})")
        keyed.append((cost, -gain, index, point))
    keyed.sort(key=lambda k: k[:3])

    frontier: list[P] = []
    best: tuple[float, float] | None = None  # (cost, gain) of the last point kept
    for cost, neg_gain, _, point in keyed:
        gain = -neg_gain
        # Sorted by cost, then best gain first: a point survives if it gains more than everything cheaper,
        # or if it is an exact duplicate of the last survivor.
        if best is None or gain > best[1] or (cost, gain) == best:
            frontier.append(point)
            best = (cost, gain)
    return frontier
