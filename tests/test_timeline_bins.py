"""A long run's timeline is drawn from time bins (issue 29: 3,700 phase stretches and 2,000 tool-call markers, one
SVG element each, made a 1.4 MB DOM): more tool calls than MAX_TIMELINE_CALLS become each bin's first call with
the bin's count (in SQL), more stretches than MAX_TIMELINE_BARS become each bin's phase shares (the figure)."""
from __future__ import annotations

import pytest

from traces import figures, selectors
import importlib

from .test_facets_ingest import ID_A, facet_db, facet_warehouse  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db
analysis = importlib.import_module("traces.selectors.analysis")  # the module (the package exports a function of its name)


def test_a_short_run_lists_every_call(facet_db):  # noqa: F811
    timeline = selectors.run_timeline(selectors.get_run(ID_A))
    assert timeline.bin_s is None and timeline.calls_total == 4
    assert [(c.index, c.calls) for c in timeline.calls] == [(1, 1), (3, 1), (5, 1), (8, 1)]


def test_more_calls_than_the_cap_are_binned_in_time(facet_db, monkeypatch):  # noqa: F811
    monkeypatch.setattr(analysis, "MAX_TIMELINE_CALLS", 2)
    timeline = selectors.run_timeline(selectors.get_run(ID_A))
    # Run A's calls are at 0:00 (step 1), 0:00:30 (3), 0:06:00 (5) and 2:37:00 (8, the last: 9,420 s); two bins of
    # 4,710 s: the first holds steps 1, 3 and 5, the second step 8 (the last call falls in the last bin).
    assert timeline.bin_s == 4710.0 and timeline.calls_total == 4
    assert [(c.index, c.calls, c.phase) for c in timeline.calls] == [(1, 3, "other"), (8, 1, "evaluation")]
    figure = figures.timeline(timeline)
    calls = [t for t in figure["data"] if t["name"].endswith("calls (first of each bin)")]
    assert sorted(c["customdata"][0][4] for c in calls) == [1, 3]
    assert "the first of %{customdata[4]:,} calls in its 78.5-minute bin" in calls[0]["hovertemplate"]


def test_many_stretches_are_drawn_as_each_bins_phase_shares():
    # 1,000 stretches: training 50 s then other 10 s, 500 times (30,000 s); 100 bins of 300 s.
    merged, at = [], 0.0
    for n in range(500):
        merged += [("training", at, at + 50, 2 * n, 2 * n + 1), ("other", at + 50, at + 60, 2 * n + 1, 2 * n + 2)]
        at += 60
    bars, width = figures.bin_stretches(merged, at, bins=100)
    assert width == 300.0
    assert len(bars) <= 110  # the phase a bin ends with begins the next bin: ~1 bar per bin, not 2
    seconds = {p: sum(b[2] - b[1] for b in bars if b[0] == p) for p in ("training", "other")}
    assert seconds == {"training": pytest.approx(25_000), "other": pytest.approx(5_000)}
    assert bars[0][1] == 0.0 and bars[-1][2] == pytest.approx(30_000) and bars[0][3] == 0 and max(b[4] for b in bars) == 1000
    for b in range(100):  # each bin holds 250 s of training and 50 s of other, inside the bin
        inside = [(p, max(s, b * 300), min(e, (b + 1) * 300)) for p, s, e, *_ in bars if s < (b + 1) * 300 and e > b * 300]
        assert {p: pytest.approx(sum(e - s for q, s, e in inside if q == p)) for p in ("training", "other")} == {
            "training": 250, "other": 50}, b
    assert figures.bin_stretches(merged[:100], 6000.0, bins=100) == (merged[:100], None)  # few: as they are
