"""A run page's "Compare with" says what it offers (a new user's pass, branch nuz2): "The agents after this one by
name" stood under every list of other agents, also where it held every other agent of the cell (fewer than
PEERS_SHOWN), listed by method directory, not by the names shown (Opus 4.6, GPT-5.1 Codex Max (High), Kimi K2.5);
an empty list stood above it when the run had no other attempt or repeat, and an empty "Other agents" disclosure
when the cell had none."""
from __future__ import annotations

import re

import pytest

from traces import selectors
from traces.selectors import compare

pytestmark = pytest.mark.django_db


def _compare_with(client, run_id: str) -> str:
    body = client.get(f"/runs/{run_id}/").content.decode()
    return body[body.index('id="compare-with"'):body.index("</section>", body.index('id="compare-with"'))]


def test_the_note_under_the_other_agents_says_which_they_are(client, demo_ingested, monkeypatch):
    runs = selectors.list_runs(limit=500)[0]
    peers = {r.id: selectors.cell_peers(r.id) for r in runs}
    seen = {"others": 0, "own": 0, "none": 0}
    for run in runs:
        section = _compare_with(client, run.id)
        others = [p for p in peers[run.id] if p.relation == "other"]
        own = [p for p in peers[run.id] if p.relation != "other"]
        assert "after this one by name" not in section
        assert section.count('<ul class="peers">') == bool(own) + bool(others), run.id
        assert ('class="peer-others"' in section) == bool(others), run.id
        if others:
            assert len(others) < compare.PEERS_SHOWN
            note = re.search(r'<p class="muted peer-note">(.*?)</p>', section, re.S)[1]
            assert note.startswith("Each other agent's latest run of this cell; <a href=\"/runs/?benchmark=")
            seen["others"] += 1
        seen["own"] += bool(own)
        seen["none"] += not peers[run.id]
    assert seen["others"] and seen["own"], seen

    # As many other agents as a page offers (there may be more): the note says which ones it chose.
    run = next(r for r in runs if any(p.relation == "other" for p in peers[r.id]))
    monkeypatch.setattr(compare, "PEERS_SHOWN", 1)
    section = _compare_with(client, run.id)
    assert section.count('class="peer-other"') == 1
    assert ("The other agents whose method directories follow this run's by name (after the last, the first); "
            '<a href="/runs/?benchmark=') in section
