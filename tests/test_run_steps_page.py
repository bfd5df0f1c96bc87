"""``/runs/<id>/steps``: the htmx "load more" partial, or without htmx a page of its own with previous/next links."""
from __future__ import annotations

import pytest

from traces import selectors

pytestmark = pytest.mark.django_db


def _longest_run():
    return max(selectors.list_runs(limit=None)[0], key=lambda r: r.step_count)


def test_without_htmx_a_page_of_steps_links_to_its_neighbours(client, demo_ingested):
    run = _longest_run()
    html = client.get(f"/runs/{run.id}/steps?after=9&limit=10").content.decode()
    assert "<html" in html and 'id="step-10"' in html and 'id="step-19"' in html and 'id="step-20"' not in html
    assert f'href="/runs/{run.id}/steps?limit=10&amp;after=-1" rel="prev"' in html
    assert f'href="/runs/{run.id}/steps?limit=10&amp;after=19" rel="next"' in html
    assert f'href="/runs/{run.id}/?step=12#step-12"' in html
    first = client.get(f"/runs/{run.id}/steps?after=-1&limit=10").content.decode()
    assert 'rel="prev"' not in first


def test_htmx_gets_the_partial_and_the_run_page_takes_a_page_size(client, demo_ingested):
    run = _longest_run()
    partial = client.get(f"/runs/{run.id}/steps?after=9&limit=10", headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in partial and 'id="step-10"' in partial
    page = client.get(f"/runs/{run.id}/?limit=5").content.decode()
    assert 'id="step-4"' in page and 'id="step-5"' not in page
    assert f'hx-get="/runs/{run.id}/steps?limit=5&amp;after=4"' in page
