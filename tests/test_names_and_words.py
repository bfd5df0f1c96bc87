"""Names and words a visitor reads (issue 29): one display name per agent on the leaderboard, the analysis and the
runs list; the "Runs that used" chips only where they narrow something; questions and facets in words, not ids."""
from __future__ import annotations

import pytest

from export.exporter import Exporter
from traces import figures, selectors, services


pytestmark = pytest.mark.django_db


def test_an_agent_has_one_name_on_every_page(demo_ingested, client):
    runs = selectors.list_runs(limit=None)[0]
    names = {r.agent_key: r.agent_display for r in runs}
    assert any("(unlisted sweep)" in n for n in names.values())
    board = client.get("/api/leaderboard?source=runs").json()
    from_runs = {r["key"]: r["agent"] for r in board["rows"] if r["source"] == "runs"}
    assert from_runs and all(from_runs[k] == names[k] for k in from_runs), (from_runs, names)
    facts = selectors.run_facts("posttrainbench")
    legend = {t["name"] for t in figures.calibration(selectors.analysis("posttrainbench").points)["data"]
              if t.get("name")}
    plotted = {f.run.agent_key for f in facts if f.ratio is not None and f.base_score is not None}
    assert legend == {names[k] for k in plotted} and len(legend) > 1
    mix = [r["agent"] for r in client.get("/api/analysis").json()["method_mix"]]
    assert mix and set(mix) <= set(names.values())


def test_the_facet_chips_show_only_where_they_narrow_rows(demo_ingested, client, tmp_path):
    board = client.get("/").content.decode()
    assert 'data-facet="grpo"' in board and "Runs that used" in board
    frogs = client.get("/?suite=frogsgame").content.decode()
    assert "Runs that used" not in frogs and "data-facet=" not in frogs  # FrogsGame has no runs
    exported = Exporter(tmp_path).fetch("/").decode()  # the static export: no view from runs to narrow
    assert "Runs that used" not in exported and "data-facet=" not in exported
    narrowed = client.get("/?source=runs&facet=grpo").content.decode()
    assert "count only runs that used <strong>GRPO</strong>" in narrowed and "<strong>grpo</strong>" not in narrowed


def test_the_override_log_names_the_question(export_warehouse, client):  # noqa: F811
    run = next(r for r in selectors.list_runs(limit=None)[0] if r.state == "scored")
    services.override_verdict(run_id=run.id, kind="disallowed_model", flagged=True, reason="used an instruct model",
                              reviewer="reviewer")
    page = client.get(f"/runs/{run.id}/").content.decode()
    log = page[page.index('id="override-log"'):page.index("</table>", page.index('id="override-log"'))]
    assert "<td>Disallowed model</td>" in log and "disallowed_model</td>" not in log
