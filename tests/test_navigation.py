"""Getting around (issue 17): the same navigation on every page, a log-in link for visitors, the user's name,
Reruns and Log out for staff, and styled 404/500 pages. Checked in headless Chromium, screenshots kept."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import RequestFactory
from django.views.defaults import server_error

from .conftest import ARTIFACTS

PUBLIC_PAGES = ["/", "/runs/", "/plots/", "/analysis/"]


def _nav(page) -> list[str]:
    return [t.strip() for t in page.locator("header.site nav a, header.site nav button").all_inner_texts()]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_every_public_page_has_the_same_navigation(live_server, use_published, page):
    for path in PUBLIC_PAGES:
        page.goto(live_server.url + path)
        assert _nav(page) == ["Leaderboard", "Runs", "Plots", "Analysis", "Judges", "API", "Search", "Log in"], path
    page.goto(live_server.url + "/")
    page.click("header.site nav >> text=Runs")
    page.wait_for_url("**/runs/")
    assert page.locator("h1").first.inner_text().strip() != ""
    assert page.js_errors == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_staff_log_in_from_the_header_and_see_reruns(live_server, use_published, page):
    get_user_model().objects.create_user("reviewer", password="a-long-test-password", is_staff=True)
    page.goto(live_server.url + "/plots/")
    page.click("header.site nav >> text=Log in")
    page.wait_for_url("**/login/?next=/plots/")  # the site's own sign-in page, with its navigation
    assert page.locator("main h1").inner_text() == "Log in"
    assert _nav(page) == ["Leaderboard", "Runs", "Plots", "Analysis", "Judges", "API", "Search", "Log in"]
    page.fill("#id_username", "reviewer")
    page.fill("#id_password", "not-the-password")
    page.click("main input[type=submit]")
    assert "do not match a staff account" in page.locator("main .error").inner_text()
    page.fill("#id_username", "reviewer")
    page.fill("#id_password", "a-long-test-password")
    page.click("main input[type=submit]")
    page.wait_for_url("**/plots/")  # back where the visitor was
    assert page.locator("header.site nav .user").inner_text() == "reviewer"
    assert _nav(page) == ["Leaderboard", "Runs", "Plots", "Analysis", "Judges", "API", "Reruns", "Challenges",
                          "Admin", "Search", "Log out"]
    page.screenshot(path=ARTIFACTS / "nav-staff.png")
    page.click("header.site nav >> text=Reruns")
    page.wait_for_url("**/reruns/")
    page.click("header.site nav >> text=Log out")
    page.goto(live_server.url + "/")
    assert _nav(page)[-1] == "Log in"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_missing_page_is_a_styled_404(live_server, use_published, page):
    response = page.goto(live_server.url + "/runs/no_such_run_dir_123/")
    assert response.status == 404
    assert page.locator("h1").inner_text() == "Page not found"
    assert _nav(page)[:4] == ["Leaderboard", "Runs", "Plots", "Analysis"]
    page.screenshot(path=ARTIFACTS / "404.png")


def test_a_server_error_is_a_styled_500_that_needs_no_context():
    """Django renders 500.html with an empty context (django.views.defaults.server_error): no user, no request."""
    response = server_error(RequestFactory().get("/"))
    html = response.content.decode()
    assert response.status_code == 500
    assert "<h1>Something went wrong</h1>" in html
    assert 'href="/runs/">Runs</a>' in html


@pytest.mark.django_db
def test_the_site_has_a_favicon(client):
    """Issue 29: /favicon.ico was a 404 (the export writes the same file at its root: tests/test_browser_export.py)."""
    response = client.get("/favicon.ico")
    assert response.status_code == 200 and response["Content-Type"] == "image/x-icon"
    assert b"".join(response.streaming_content)[:4] == b"\x00\x00\x01\x00"
    assert 'rel="icon" href="/static/favicon.ico"' in client.get("/login/").content.decode()
