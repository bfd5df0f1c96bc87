"""A full-page screenshot of every kind of page, for a person to review (issue 17), under test-artifacts/pages/:
the leaderboard, the plots index and each plot, the runs list, a run (from the start and from a deep link), a page
of steps, a judge's trace, the analysis page, the API docs, the log-in page, the staff pages and a 404; each page
answers, draws its charts and raises no script error. ``test-artifacts/pages/index.txt`` lists file and URL."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import get_resolver

from traces import selectors

from .conftest import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SHOTS = ARTIFACTS / "pages"
CHARTS_DRAWN = ("() => [...document.querySelectorAll('[data-figure], [data-figure-src]')]"
                ".every(el => el.dataset.drawn === 'true')")


def _plot_paths() -> list[tuple[str, str]]:
    """Every plot page the leaderboard app routes (``leaderboard:plot-*``, no parameters), as (name, path)."""
    leaderboard = next(p for p in get_resolver().url_patterns if getattr(p, "namespace", None) == "leaderboard")
    return sorted((p.name, "/" + str(p.pattern)) for p in leaderboard.url_patterns
                  if (p.name or "").startswith("plot-") and not p.pattern.converters)


def _shoot(page, base: str, name: str, path: str, *, status: int = 200) -> str:
    response = page.goto(base + path)
    assert response is not None and response.status == status, (path, response and response.status)
    page.wait_for_load_state("networkidle")
    page.wait_for_function(CHARTS_DRAWN, timeout=20_000)
    assert page.title() and page.locator("h1, h2, #site-name").first.inner_text().strip(), path
    file = SHOTS / f"{name}.png"
    page.screenshot(path=file, full_page=True)
    assert file.stat().st_size > 10_000, file
    return f"{file.name}\t{path}"


def test_a_screenshot_of_every_page(live_server, demo_ingested, page):
    SHOTS.mkdir(parents=True, exist_ok=True)
    runs = selectors.list_runs(limit=None)[0]
    run = max(runs, key=lambda r: r.step_count)
    judged = next(r for r in runs if len(selectors.trace_names(r.id)) > 1)
    judge_trace = selectors.trace_names(judged.id)[1]
    multi = next(r for r in runs if {v.judge for v in r.verdicts} >= {"gpt5_4", "kimi"})
    plots = _plot_paths()
    assert {"plot-time-vs-score", "plot-per-benchmark"} <= {n for n, _ in plots}
    public = [("leaderboard", "/"), ("leaderboard-from-runs", "/?source=all"), ("plots", "/plots/"),
              *plots, ("runs", "/runs/"), ("runs-sorted", "/runs/?sort=score&dir=desc"), ("run", f"/runs/{run.id}/"),
              ("run-deep-link", f"/runs/{run.id}/?step=120"), ("steps", f"/runs/{run.id}/steps?after=49"),
              ("search-all", "/search/?q=%22import+torch%22"), ("compare-runs", f"/compare/?runs={run.id},{judged.id}"),
              ("judge-trace", f"/runs/{judged.id}/?trace={judge_trace}"), ("analysis", "/analysis/"),
              ("api-docs", "/api/docs"), ("login", "/login/"),
              # issue 26: the judges of the May-2026 era per question, a judging rule, the report card, a challenge
              ("run-judges", f"/runs/{multi.id}/"), ("leaderboard-any-judge", "/?source=runs&verdicts=any"),
              ("judges", "/judges/"), ("challenge-form", f"/challenges/runs/{multi.id}/new?question=contamination")]
    listed = [_shoot(page, live_server.url, name, path) for name, path in public]
    page.set_viewport_size({"width": 390, "height": 844})  # a phone: the judge panel and the report card
    listed += [_shoot(page, live_server.url, f"{name}-390", path) for name, path in public if name in (
        "run-judges", "judges", "leaderboard-any-judge")]
    page.set_viewport_size({"width": 1400, "height": 900})  # the context's own size again
    listed.append(_shoot(page, live_server.url, "404", "/runs/no_such_run_dir_123/", status=404))
    assert page.locator("h1").inner_text() == "Page not found"
    assert page.js_errors == [], page.js_errors

    get_user_model().objects.create_user("reviewer", password="a-long-test-password", is_staff=True)
    page.goto(live_server.url + "/login/?next=/reruns/")
    page.fill("#id_username", "reviewer")
    page.fill("#id_password", "a-long-test-password")
    page.click("input[type=submit]")
    page.wait_for_url("**/reruns/")
    assert page.locator("header.site nav .user").inner_text() == "reviewer"
    staff = [("staff-reruns", "/reruns/"), ("staff-run", f"/runs/{run.id}/"), ("staff-challenges", "/challenges/?status=all"),
             ("staff-admin", "/admin/")]
    listed += [_shoot(page, live_server.url, name, path) for name, path in staff[:2]]
    assert page.locator("#staff-tools").is_visible()  # the run page as staff see it
    listed += [_shoot(page, live_server.url, name, path) for name, path in staff[2:]]
    (SHOTS / "index.txt").write_text("\n".join(listed) + "\n")
    assert len(listed) == len(public) + 3 + 1 + len(staff) and page.js_errors == [], page.js_errors
