"""Anything a visitor puts in a public view's query parameters answers below 500 (issue 25): numbers are read by
ptbsite.query (ASCII digits only, else 400) or ninja's types (422); the digits ``str.isdigit()`` accepts but
``int()`` refuses (``²``) answered 500 before."""
from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.test import Client
from hypothesis import HealthCheck, example, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from tests.test_page_cache_keys import _views

pytestmark = pytest.mark.django_db


@pytest.fixture
def views(demo_ingested, settings) -> list[tuple[str, str]]:
    """(path, parameter) of every parameter of every public view (ptbsite.pagecache.page_inputs), on the demo
    warehouse's longest run; the page cache off, so each request computes its page."""
    settings.PTB_PAGE_CACHE = False
    runs = Client().get("/api/runs?limit=500").json()["runs"]
    run_id = max(runs, key=lambda r: r["step_count"] or 0)["id"]
    return [(path, name) for path, inputs in _views(run_id) for name in inputs.query]


def _run_page(views: list[tuple[str, str]]) -> str:
    return next(p for p, _ in views if p.startswith("/runs/") and p.count("/") == 3)


def _status(path: str, query: dict[str, str], **headers: str) -> int:
    return Client(raise_request_exception=False).get(f"{path}?{urlencode(query)}", **headers).status_code


@pytest.mark.parametrize("path, name", [
    ("/runs/{run}/", "step"), ("/runs/{run}/", "limit"), ("/runs/{run}/steps", "after"),
    ("/runs/{run}/steps", "before"), ("/runs/{run}/steps/1/text", "offset"), ("/runs/{run}/steps", "limit"),
])
@pytest.mark.parametrize("digit", ["²", "٣", "①", "1²", "-²", "1e3", " 1", "99999999999999999999999"])
def test_a_digit_that_is_not_ascii_answers_400(views, path: str, name: str, digit: str) -> None:
    run_id = _run_page(views).split("/")[2]
    assert _status(path.format(run=run_id), {name: digit}) == 400
    assert _status(path.format(run=run_id), {name: digit}, HTTP_HX_REQUEST="true") == 400


def test_the_listed_views_answer_ascii_numbers(views) -> None:
    run = _run_page(views)
    for path, query in ((run, {"step": "3"}), (run, {"limit": "7"}), (run + "steps", {"after": "-1"}),
                        (run + "steps", {"before": "5"}), (run + "steps/1/text", {"offset": "0"})):
        assert _status(path, query) == 200, (path, query)


TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60)


@hypothesis_settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                               HealthCheck.too_slow])
@given(data=st.data())
@example(data=None)  # every view once with every parameter "²"
def test_arbitrary_text_in_any_parameter_of_any_public_view_is_no_5xx(views, data) -> None:
    if data is None:
        for path, name in views:
            assert _status(path, {name: "²"}) < 500, (path, name)
        return
    path, name = data.draw(st.sampled_from(views))
    value = data.draw(TEXT)
    others = data.draw(st.dictionaries(st.sampled_from([n for p, n in views if p == path]), TEXT, max_size=3))
    status = _status(path, {**others, name: value})
    assert status < 500, (path, {**others, name: value}, status)
