"""A damaged, secret-laden run in headless Chromium (issue 13): the incomplete-trace state, the redaction count,
labelled events, the bytes-not-shown marker and the whole output, served as plain text that never runs."""
from __future__ import annotations

import pytest

from .conftest import ARTIFACTS
from .test_trace_integrity import INIT, j, tool_call, tool_result, write_run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_a_damaged_run_in_a_browser(live_server, fresh_warehouse, tmp_path, page):
    from ingest.tree import ingest_tree

    hostile = "<script>window.__pwned=1</script>"
    big = (hostile + " loss 0.5\n") * 40_000  # ~1.7 MB: stored cut at 256 KiB
    trace = "\n".join([INIT, j({"type": "rate_limit_event", "rate_limit_info": {"status": "allowed_warning"}}),
                       tool_call("toolu_1", "cat train.log && echo ghp_" + "R7x" * 12),
                       tool_result("toolu_1", big)]) + "\n"  # no result event: incomplete
    run_id = write_run(tmp_path / "tree", trace)
    report = ingest_tree(root=tmp_path / "tree")
    assert report.stored == 1, report.problems
    page.goto(f"{live_server.url}/runs/{run_id}/")
    assert page.locator("#trace-incomplete").inner_text() == "incomplete trace"
    assert page.locator("#secrets-redacted").inner_text().startswith("1 secret redacted")
    assert "rate limit" in page.locator("#steps .badge.label").all_inner_texts()
    marker = page.locator("#steps p.not-shown").first
    assert "bytes not shown" in marker.inner_text()
    page.screenshot(path=ARTIFACTS / "run-damaged.png", full_page=False)
    marker.locator("a").click()
    page.wait_for_url("**/steps/3/text?field=output")
    body = page.locator("body").inner_text()
    assert body.startswith(hostile) and "ghp_" not in body
    assert page.evaluate("window.__pwned") is None
    page.screenshot(path=ARTIFACTS / "run-damaged-text.png")
    assert page.js_errors == []
