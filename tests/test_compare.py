"""Runs side by side (``/compare/``, ``/api/compare``, ``traces.selectors.compare``): runs of every scaffold format
with their differences marked; the traces aligned by time (with clocks) and by position (without), page by page,
every step once and in order; the links that lead there (run page, runs list, leaderboard cell)."""
from __future__ import annotations

import html

import pytest

from traces import layout, selectors
from traces.selectors import compare

pytestmark = pytest.mark.django_db


def _id(demo_run) -> str:
    return layout.run_id(*demo_run.run_dir.split("/"))


def _one_per_format(report) -> dict[str, str]:
    """{trace format: a run id} for the demo's runs with steps, one per format (the four scaffolds' formats)."""
    picks: dict[str, str] = {}
    for r in report.runs:
        if r.steps_planned and r.trace_format not in picks:
            picks[r.trace_format] = _id(r)
    return picks


def test_runs_of_every_scaffold_side_by_side_with_their_differences(client, demo_ingested):
    report, _, _ = demo_ingested
    picks = _one_per_format(report)
    scaffolds = {selectors.get_run(i).scaffold for i in picks.values()}
    assert len(scaffolds) == 4, picks  # claude code, codex, gemini, opencode
    ids = [next(i for i in picks.values() if selectors.get_run(i).scaffold == s) for s in sorted(scaffolds)]
    page = client.get(f"/compare/?runs={','.join(ids)}")
    assert page.status_code == 200
    body = page.content.decode()
    twin = client.get(f"/api/compare?runs={','.join(ids)}").json()
    assert [c["run"]["id"] for c in twin["runs"]] == ids
    facts = {row["key"]: row for row in twin["facts"]}
    assert facts["scaffold"]["values"] == [selectors.get_run(i).scaffold for i in ids] and facts["scaffold"]["differs"]
    assert facts["score"]["values"] == [f"{100 * selectors.get_run(i).score:.1f}%" if selectors.get_run(i).score
                                        is not None else "" for i in ids]
    assert facts["steps"]["values"] == [f"{selectors.get_run(i).step_count:,}" for i in ids]
    # Every facet of every run is a row, with each run's value and whether they differ.
    facets = {row["key"]: row for row in twin["facets"]}
    for n, run_id in enumerate(ids):
        for facet in selectors.run_facets(run_id):
            assert facets[facet.facet]["values"][n] != "", (run_id, facet.facet)
    for row in twin["facets"]:
        assert row["differs"] == (len(set(row["values"])) > 1)
    assert any(row["differs"] for row in twin["facets"]), "the demo's scaffolds train differently"
    # The page shows the twin's rows, differing ones marked.
    for row in twin["facts"] + twin["facets"]:
        assert f'data-key="{html.escape(row["key"])}"' in body
        marked = f'<tr class="differs" data-key="{html.escape(row["key"])}"' in body
        assert marked == row["differs"], row["key"]
        for value in row["values"]:
            assert html.escape(value or "–") in body, (row["key"], value)
    for run_id in ids:
        assert f'href="/runs/{run_id}/"' in body
    # Phases on one axis from 0 to the largest budget, a bounded number of bars.
    for side in twin["runs"]:
        assert len(side["phases"]) <= compare.PHASE_BINS
        assert all(0 <= b["left_pct"] <= 100 for b in side["phases"])
    assert twin["budget_s"] == max(selectors.get_run(i).budget_hours for i in ids) * 3600


def _walk(ids: list[str], limit: int) -> list[compare.Aligned]:
    pages, after = [], None
    while True:
        found = compare.compare_page(ids, after=after, limit=limit, steps_only=True)
        pages.append(found.steps)
        assert len(pages) < 2000
        if found.steps.next is None:
            return pages
        after = found.steps.next


def _columns(pages: list[compare.Aligned], n: int) -> list[list[int]]:
    cols: list[list[int]] = [[] for _ in range(n)]
    for page in pages:
        for row in page.rows:
            for col, cell in enumerate(row.cells):
                if cell is not None:
                    cols[col].append(cell.index)
    return cols


def _all_indices(run_id: str) -> list[int]:
    return [s.index for s in selectors.step_index(run_id)]


def test_traces_with_clocks_are_aligned_by_elapsed_time_page_by_page(demo_ingested):
    report, _, _ = demo_ingested
    timed = [_id(r) for r in report.runs if r.timestamped and r.steps_planned > 5][:2]
    assert len(timed) == 2 and all(selectors.get_run(i).started_at for i in timed)
    for limit in (5, 13, 50):
        pages = _walk(timed, limit)
        assert {p.mode for p in pages} == {"time"}
        assert _columns(pages, 2) == [_all_indices(i) for i in timed]  # every step once, in order
        times = [row.at_s for p in pages for row in p.rows]
        assert times == sorted(times)  # rows in time order across pages
        for p in pages:
            assert all(sum(1 for r in p.rows if r.cells[c] is not None) <= limit for c in range(2))
        # A row holds steps from its time to the next row's: its time is its earliest step's (these demo traces'
        # clocks never go backwards), and no step of a later row is earlier.
        rows = [row for p in pages for row in p.rows]
        for row, following in zip(rows, rows[1:] + [None], strict=True):
            times = [c.elapsed_s for c in row.cells if c is not None and c.elapsed_s is not None]
            if times:
                assert row.at_s == min(times)
            if following is not None:
                assert all(t <= following.at_s or len(times) > 1 for t in times)


def test_a_run_without_clocks_is_aligned_by_position(demo_ingested):
    report, _, _ = demo_ingested
    untimed = next(_id(r) for r in report.runs if r.steps_planned > 5
                   and selectors.get_run(_id(r)).started_at is None)
    timed = next(_id(r) for r in report.runs if r.timestamped and r.steps_planned > 5)
    ids = [timed, untimed]
    pages = _walk(ids, 9)
    assert {p.mode for p in pages} == {"index"}
    assert _columns(pages, 2) == [_all_indices(i) for i in ids]
    first = pages[0].rows
    assert [r.cells[0].index for r in first[:3]] == _all_indices(timed)[:3]
    assert [r.cells[1].index for r in first[:3]] == _all_indices(untimed)[:3]
    assert all(r.at_s is None for p in pages for r in p.rows)


def test_the_page_and_more_steps(client, demo_ingested):
    report, _, _ = demo_ingested
    timed = [_id(r) for r in report.runs if r.timestamped and r.steps_planned > 30][:2]
    body = client.get(f"/compare/?runs={','.join(timed)}").content.decode()
    assert 'id="compare-steps"' in body and "Aligned by elapsed time" in body
    assert body.count('class="step-link"') <= 2 * 25
    assert f'href="/runs/{timed[0]}/?step=0#step-0"' in body
    first = compare.compare_page(timed, limit=25, steps_only=True).steps
    more = f"after={first.next[0]}%2C{first.next[1]}"
    assert more in body
    partial = client.get(f"/compare/?runs={','.join(timed)}&{more}", HTTP_HX_REQUEST="true",
                         HTTP_HX_TARGET="compare-more").content.decode()
    assert "<h1" not in partial and 'class="step-link"' in partial
    # From an elapsed time: each run starts at its first step at or after it.
    at = client.get(f"/api/compare?runs={','.join(timed)}&at=0.5").json()
    for n, run_id in enumerate(timed):
        expected = selectors.step_at_time(run_id, 1800)
        shown = [r["cells"][n]["index"] for r in at["steps"]["rows"] if r["cells"][n]]
        if shown:
            assert shown[0] == expected


def test_checkboxes_lead_to_a_one_parameter_link_and_unknown_runs_are_said(client, demo_ingested):
    report, _, _ = demo_ingested
    a, b = _id(report.runs[0]), _id(report.runs[1])
    answer = client.get(f"/compare/pick/?runs={a}&runs={b}")
    assert answer.status_code == 302 and answer["Location"] == f"/compare/?runs={a}%2C{b}"
    assert client.get("/compare/?runs=nosuchrun").status_code == 404
    assert client.get("/api/compare?runs=nosuchrun").status_code == 404
    body = client.get(f"/compare/?runs={a},nosuchrun").content.decode()
    assert "nosuchrun" in body and "left out" in body
    assert "Pick two or more runs" in client.get("/compare/").content.decode()
    runs_list = client.get("/runs/").content.decode()
    assert 'id="compare-form"' in runs_list and f'name="runs" value="{a}" form="compare-form"' in runs_list


def test_more_runs_than_fit_and_a_single_run_are_said(client, demo_ingested):
    report, _, _ = demo_ingested
    ids = [_id(r) for r in report.runs[:5]]
    answer = client.get("/compare/pick/?" + "&".join(f"runs={i}" for i in ids))
    assert answer.status_code == 302 and answer["Location"] == "/compare/?runs=" + "%2C".join(ids)  # none dropped
    body = client.get(answer["Location"]).content.decode()
    assert 'id="compare-capped"' in body and "the first 4 of the 5 asked for are shown" in body
    assert body.count('class="compare-run"') == 4 and f'data-run="{ids[4]}"' not in body
    one = client.get(f"/compare/?runs={ids[0]}").content.decode()
    assert 'id="compare-one"' in one and 'id="compare-capped"' not in one
    two = client.get(f"/compare/?runs={ids[0]},{ids[1]}").content.decode()
    assert 'id="compare-one"' not in two and 'id="compare-capped"' not in two


def test_attempts_of_a_cell_link_each_other_and_the_run_page_offers_comparisons(client, demo_ingested):
    report, _, _ = demo_ingested
    older = next(r for r in report.runs if not r.is_latest)
    counts = next(r for r in report.runs if r.is_latest and r.run_dir.split("/")[0] == older.run_dir.split("/")[0]
                  and (r.benchmark, r.base_model) == (older.benchmark, older.base_model))
    old_id, new_id = _id(older), _id(counts)
    old_page = client.get(f"/runs/{old_id}/").content.decode()
    assert f'<li class="peer-attempt" data-run="{new_id}">The attempt that counts' in old_page
    assert f'href="/compare/?runs={old_id},{new_id}"' in old_page
    new_page = client.get(f"/runs/{new_id}/").content.decode()
    assert f'<li class="peer-attempt" data-run="{old_id}">An older attempt' in new_page
    twin = client.get(f"/api/runs/{new_id}").json()
    assert {(p["run"]["id"], p["relation"]) for p in twin["peers"]} >= {(old_id, "attempt")}
    cell = selectors.get_run(new_id)
    for peer in twin["peers"]:
        run = peer["run"]
        assert (run["benchmark"], run["base_model"], run["suite"]) == (cell.benchmark, cell.base_model, cell.suite)


def test_a_leaderboard_cell_links_to_the_comparison_of_its_runs(client, demo_ingested):
    """A cell of a row from runs links to its runs side by side (2 or more: the first 4), or, with one run, to
    that run's "Compare with" (its cell's other agents and attempts)."""
    from leaderboard import selectors as board

    data = board.leaderboard(suite="posttrainbench", source="runs")
    body = client.get("/?source=runs").content.decode()
    checked = 0
    for row in data.rows:
        for cell in row.cells.values():
            if len(cell.run_ids) == 1:
                link = f'href="/runs/{cell.run_ids[0]}/#compare-with"'
            elif cell.run_ids:
                link = f'href="/compare/?runs={",".join(cell.run_ids[:4])}"'
            else:
                continue
            assert link in body, link
            checked += 1
            run = selectors.get_run(cell.run_ids[0])
            assert run.benchmark in row.cells
    assert checked >= 5
    # The run behind a one-run cell offers the other agents' runs of its cell.
    singles = [c.run_ids[0] for r in data.rows for c in r.cells.values() if len(c.run_ids) == 1]
    with_peers = 0
    for run_id in singles:
        page = client.get(f"/runs/{run_id}/").content.decode()
        assert 'id="compare-with"' in page
        peers = selectors.cell_peers(run_id)
        with_peers += bool(peers)
        for peer in peers:
            assert f'href="/compare/?runs={run_id},{peer.run.id}"' in page
    assert with_peers >= 1


def test_other_agents_are_the_ones_after_the_run_by_name_so_each_run_is_offered_evenly():
    """``pick_peers`` on a cell of 30 agents' latest runs plus an older attempt and a repeat: a run offers every
    attempt of its method, its agent's repeats and the PEERS_SHOWN other agents following its method by name
    (wrapping after the last), listed by name; so each run is offered by exactly PEERS_SHOWN other agents' pages
    (the first PEERS_SHOWN by name were offered by all 29)."""
    from collections import Counter
    from typing import NamedTuple

    from traces.selectors.compare import PEERS_SHOWN, pick_peers

    class R(NamedTuple):
        id: str
        method: str
        agent_key: str
        cluster_id: int
        is_latest: bool

    cell = [R(f"r{i:02d}", f"m{i:02d}", f"a{i:02d}", 100 + i, True) for i in range(30)]
    cell += [R("old05", "m05", "a05", 5, False), R("rep05", "m05_run2", "a05", 200, True)]
    peers = pick_peers(cell[5], cell)
    assert [(p.id, rel) for p, rel in peers] == [("old05", "attempt"), ("rep05", "repeat")] + [
        (f"r{i:02d}", "other") for i in range(6, 18)]
    wrapped = pick_peers(cell[25], cell)  # m26..m29, then from the first name on: m00..m05, m05_run2, m06
    assert [p.id for p, rel in wrapped if rel == "other"] == [
        "r00", "r01", "r02", "r03", "r04", "r05", "rep05", "r06", "r26", "r27", "r28", "r29"]
    latest = cell[:30]
    offered = Counter(p.id for run in latest for p, rel in pick_peers(run, latest) if rel == "other")
    assert len(offered) == 30 and set(offered.values()) == {PEERS_SHOWN}


def test_cursors_are_ascii_whole_numbers_from_minus_one(client, demo_ingested):
    """``after=`` cursors: a part that is not 1-9 ASCII digits (optionally ``-``) from -1 up reads as -1 (the start);
    "¹" passed ``str.isdigit()`` and then raised in ``int()``: the page answered 500 (found by the query fuzz)."""
    from traces.selectors.compare import parse_cursors

    assert parse_cursors("¹,3,-1,-5,x,٣") == [-1, 3, -1, -1]  # at most MAX_RUNS (4) parts
    assert parse_cursors("12, 7") == [12, 7] and parse_cursors("1234567890") == [-1] and parse_cursors("") == []
    run_id = selectors.list_runs(limit=1)[0][0].id
    for query in ({"runs": run_id, "after": "¹"}, {"runs": "", "after": "¹"}, {"runs": f"{run_id},{run_id}",
                                                                               "after": "²,٣"}):
        assert client.get("/compare/", query).status_code == 200, query


def test_a_side_file_holds_the_runs_phase_axis_for_every_larger_budget(demo_ingested):
    """The static export's side of a run (``compare_side``): its phase axis binned for its own budget and each
    larger one of the warehouse (a comparison's axis ends at its runs' largest budget), each as ``compare_page``
    bins it; its rows and first steps as the live comparison of that run alone shows them."""
    from ptbsite import warehouse

    report, _, _ = demo_ingested
    run_id = max(_one_per_format(report).values(), key=lambda i: selectors.get_run(i).step_count)
    run = selectors.get_run(run_id)
    own = run.budget_hours * 3600
    side = compare.compare_side(run_id, [own / 2, own, 2 * own])
    assert side is not None and [a.budget_s for a in side.axes] == [own, 2 * own]  # none below its own budget
    with warehouse.connect() as con:
        for axis in side.axes:
            assert axis.bins == compare.read_compare_run(con, run, axis.budget_s).phases
            assert len(axis.titles) == len(axis.bins)
    assert run.time_taken_s is not None
    assert [a.used_pct for a in side.axes] == [round(min(100.0, 100 * run.time_taken_s / b), 3) for b in (own, 2 * own)]
    alone = compare.compare_page([run_id], limit=compare.STEPS_SHOWN)
    assert alone is not None
    shown = {r.key: r.values[0] for r in alone.facts + alone.facets}
    assert {r.key: r.value for r in side.facts + side.judges + side.facets} == {
        k: v for k, v in shown.items() if not k.startswith("phase:")}
    assert [r.value if (side.axes[0].bins or r.nonzero) else "" for r in side.phases] == [
        v for k, v in shown.items() if k.startswith("phase:")]
    steps = [c for row in alone.steps.rows for c in row.cells if c is not None]
    assert [(s.index, s.output, s.input, s.output_cut) for s in side.steps[:compare.STEPS_SHOWN]] == [
        (s.index, s.output, s.input, s.output_cut) for s in steps]
    assert len(side.steps) == min(run.step_count, compare.STEPS_SHOWN + 1)


def test_a_bin_with_two_phases_tied_takes_the_first_by_name_every_time():
    """A phase-axis bin holding as many seconds of training as of evaluation is "evaluation" (the first by name)
    on every read: ``arg_max`` alone chose either, so the static side file and the live page could draw the same
    bin in two colours (seen in a test run, 1 in ~3)."""
    from types import SimpleNamespace

    import duckdb

    con = duckdb.connect()
    con.execute("SET threads = 4")
    con.execute("CREATE TABLE phases (run_id VARCHAR, phase VARCHAR, start_s DOUBLE, end_s DOUBLE)")
    width = 3600.0 / compare.PHASE_BINS
    rows = [("r", "training" if i % 2 else "evaluation", b * width + i * width / 4, b * width + (i + 1) * width / 4)
            for b in range(compare.PHASE_BINS) for i in range(4)]
    con.executemany("INSERT INTO phases VALUES (?, ?, ?, ?)", rows)
    for _ in range(20):
        _, bins = compare._phases(con, SimpleNamespace(id="r"), 3600.0)
        assert [b.phase for b in bins] == ["evaluation"] * compare.PHASE_BINS
