"""``fixed`` (and ``pct`` through it) writes the same text as Django's ``floatformat``, which it replaces on the
pages that format a number per cell (issue 24)."""
from __future__ import annotations

import random

from django.template.defaultfilters import floatformat

from ptbsite.templatetags.scores import fixed, pct


def test_fixed_is_floatformat_on_floats_ints_ties_and_zeros() -> None:
    rng = random.Random(24)
    values: list[float | int] = [0.0, -0.0, 0, 7, -3, 1e-9, -0.04, -0.05, 0.05, 0.25, 1.005, 2.675, 12.25, 12.35,
                                 99.95, 99.99999, 100.0, 1234.5678, -1234.5, 1e15 + 0.5, 123456789.125]
    values += [rng.uniform(-200, 200) for _ in range(3000)]
    values += [round(rng.uniform(0, 100), rng.randint(1, 4)) for _ in range(3000)]  # decimal ties (x.x5, x.xx5)
    values += [rng.randint(0, 1000) / 8 for _ in range(500)]  # binary ties (x.125, x.375)
    for value in values:
        for digits in (0, 1, 2, 3, 5, "1", "3"):
            assert fixed(value, digits) == floatformat(value, digits), (value, digits)


def test_other_inputs_go_to_floatformat() -> None:
    for value, digits in ((12.345, "-1"), (12.0, "-1"), (1234.5, "0g"), (float("inf"), 1), ("3.14159", 2)):
        assert fixed(value, digits) == floatformat(value, digits)
    assert fixed(None, 1) == "" and pct(None) == ""


def test_pct_is_floatformat_of_the_percent() -> None:
    for fraction in (0.0, 0.12345, 0.5, 0.99995, 0.123449999, 1 / 3, 0.0005):
        assert pct(fraction) == floatformat(100 * fraction, 1)
        assert pct(fraction, 2) == floatformat(100 * fraction, 2)
