"""Traces aligned by position have no empty first column (a new user's pass, branch nuz2): a comparison with a run
without clocks headed its first column "#" and left it empty on every row, ~60 px of a 390 px phone. Aligned by
time it is the rows' elapsed time, as before. The static page builds the same table
(tests/test_browser_export_compare.py compares it with the live one cell by cell)."""
from __future__ import annotations

import re

import pytest

from traces import selectors

from .test_compare import _id

pytestmark = pytest.mark.django_db


def _steps_table(body: str) -> str:
    return body[body.index('id="compare-steps"'):body.index("</table>", body.index('id="compare-steps"'))]


def test_rows_aligned_by_position_have_no_empty_first_column(client, demo_ingested):
    report, _, _ = demo_ingested
    untimed = next(_id(r) for r in report.runs if r.steps_planned > 30 and selectors.get_run(_id(r)).started_at is None)
    timed = [_id(r) for r in report.runs if r.timestamped and r.steps_planned > 30][:2]

    table = _steps_table(client.get("/compare/", {"runs": f"{timed[0]},{untimed}"}).content.decode())
    assert 'class="at"' not in table and "<th>#</th>" not in table
    head = re.search(r"<thead><tr>(.*?)</tr></thead>", table, re.S)[1]
    assert head.count("<th") == 2
    rows = re.findall(r"<tr>\s*(.*?)</tr>", table[table.index("<tbody"):], re.S)
    assert len(rows) > 20 and all(row.count('<td class="cell">') == 2 for row in rows if "compare-more" not in row)
    more = re.search(r'<tr id="compare-more"><td colspan="(\d+)"', table)
    assert more and more[1] == "2"
    # The next page (htmx) has the same columns.
    after = re.search(r'hx-get="\?([^"]+)"', table)[1].replace("&amp;", "&")
    rows = client.get(f"/compare/?{after}", HTTP_HX_REQUEST="true").content.decode()
    assert rows.count('<td class="cell">') >= 2 and 'class="at"' not in rows

    table = _steps_table(client.get("/compare/", {"runs": ",".join(timed)}).content.decode())
    assert '<th class="at">Elapsed</th>' in table
    assert re.search(r'<td class="at">\d+:\d\d:\d\d</td>', table)
    assert re.search(r'<tr id="compare-more"><td colspan="3"', table)
