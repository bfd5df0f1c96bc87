"""The Pareto frontier function on small hand-made sets: ties, duplicates, one point, none, both directions."""
from __future__ import annotations

import pytest

from leaderboard.frontier import pareto_frontier


def _front(points, **directions):
    return pareto_frontier(points, x=lambda p: p[0], y=lambda p: p[1], **directions)


def test_it_keeps_the_non_dominated_points_in_order_of_x():
    points = [(5, 20), (1, 10), (3, 10), (2, 15), (4, 12), (6, 19)]
    # (3, 10) loses to (1, 10); (4, 12) to (2, 15); (6, 19) to (5, 20).
    assert _front(points) == [(1, 10), (2, 15), (5, 20)]


def test_empty_and_single_point():
    assert _front([]) == []
    assert _front([(7.5, 3.0)]) == [(7.5, 3.0)]


def test_ties_on_one_objective_keep_only_the_better_on_the_other():
    # Same time, different scores: the higher score dominates.
    assert _front([(2, 10), (2, 14), (2, 12)]) == [(2, 14)]
    # Same score, different times: the faster one dominates.
    assert _front([(3, 10), (1, 10), (2, 10)]) == [(1, 10)]


def test_exact_duplicates_all_stay_in_input_order():
    a, b, c = ["a", 1.0, 5.0], ["b", 1.0, 5.0], ["c", 2.0, 4.0]
    front = pareto_frontier([a, c, b], x=lambda p: p[1], y=lambda p: p[2])
    assert front == [a, b]
    assert front[0] is a and front[1] is b


def test_directions():
    points = [(1, 1), (2, 2), (3, 3)]
    assert _front(points) == [(1, 1), (2, 2), (3, 3)]  # a chain: each buys more score with more time
    assert _front(points, x_direction="max", y_direction="max") == [(3, 3)]
    assert _front(points, x_direction="min", y_direction="min") == [(1, 1)]
    assert _front([(1, 3), (2, 2), (3, 1), (2, 3)], x_direction="max", y_direction="min") == [(3, 1)]
    # Order runs from the best x: descending x when more x is better.
    assert _front([(1, 3), (3, 1), (2, 2)], x_direction="max", y_direction="max") == [(3, 1), (2, 2), (1, 3)]


def test_it_rejects_bad_input():
    with pytest.raises(ValueError, match="direction"):
        _front([(1, 1)], x_direction="less")
    with pytest.raises(ValueError, match="point 1"):
        _front([(1, 1), (float("nan"), 2)])
