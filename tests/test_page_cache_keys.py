"""The page cache's key holds everything that decides an answer (issue 25, ptbsite.pagecache.page_inputs).

Per cached view: requests that differ in a declared input (each query parameter, each header) get, through the
cache, the same answer as computed without it, in either order; an unknown parameter or an undeclared header
makes no new entry and changes nothing; the HX-Target poisoning of the run page's search is the regression test;
every public view declares its inputs and the API's declarations are its operations' query parameters.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from django.core.cache import caches
from django.test import Client, RequestFactory
from django.urls import URLPattern, URLResolver, get_resolver

from ptbsite import pagecache
from ptbsite.api import api
from tests.conftest import use_file_page_cache

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def page_cache(tmp_path: Path, settings) -> Path:
    settings.PTB_PAGE_CACHE_STALE_SECONDS = 0
    return use_file_page_cache(settings, tmp_path / "page-cache")


def _patterns(resolvers=None, prefix: str = ""):
    """(route, name, callback) of every URL pattern."""
    for entry in resolvers if resolvers is not None else get_resolver().url_patterns:
        if isinstance(entry, URLResolver):
            namespace = f"{entry.namespace}:" if entry.namespace else ""
            for route, name, callback in _patterns(entry.url_patterns, prefix + str(entry.pattern)):
                yield route, namespace + name if name else name, callback
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern), entry.name or "", entry.callback


# URL names that are not public pages (staff, workers, sign-in, the API's own documents): never cached.
NOT_PUBLIC = ("admin:", "evaluator:", "api:openapi", "api:api-root", "api:worker", "api:list_jobs", "api:create_job",
              "api:get_job", "api:cancel_job", "api:rerun_judge", "api:list_workers", "api:override", "api:agreement",
              "login", "logout", "traces:override", "traces:compare_pick", "favicon",
              # the public's challenges: a form with the visitor's CSRF token, a POST, staff triage
              "traces:challenge", "api:create_challenge", "api:list_challenges", "api:triage")


def test_every_public_view_declares_its_inputs() -> None:
    public, private = [], []
    for route, name, callback in _patterns():
        inputs = pagecache._inputs_of(callback, "GET")
        is_private = not name or name.startswith(NOT_PUBLIC) or route.startswith("admin/")
        (private if is_private else public).append((route, name, inputs))
    assert len(public) == 34, public  # 37 before the analysis' five JSON slices became one /api/analysis, then +1: its chart's /analysis/calibration.json (issue 24)
    assert [p for p in public if p[2] is None] == []
    assert [p for p in private if p[2] is not None] == []


def test_the_api_declarations_are_the_operations_query_parameters() -> None:
    schema = api.get_openapi_schema()
    checked = 0
    for route, name, callback in _patterns():
        inputs = pagecache._inputs_of(callback, "GET")
        if inputs is None or not name.startswith("api:"):
            continue
        operation = schema["paths"]["/" + route.replace("<", "{").replace(">", "}")]["get"]
        query = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
        assert set(inputs.query) == query, route
        assert inputs.headers == ()
        checked += 1
    assert checked >= 13  # 17 before the analysis' five slices became one


@pytest.fixture
def run_paths(demo_ingested) -> dict[str, str]:
    runs = Client().get("/api/runs?limit=500").json()["runs"]
    run_id = max(runs, key=lambda r: r["step_count"] or 0)["id"]
    return {"run_id": run_id}


# Values each declared parameter is tried with (every other parameter absent); "" and a nonsense value always.
VALUES = {
    "suite": ["posttrainbench", "frogsgame"], "base_model": ["Qwen3-4B-Base", "Qwen3-1.7B-Base"],
    "sort": ["average", "agent", "score"], "dir": ["asc", "desc"], "source": ["runs", "all"], "flags": ["ignore"],
    "facet": ["grpo", "library:trl"], "agent": ["claude"], "benchmark": ["gsm8k"], "state": ["scored"],
    "flagged": ["1", "0"], "latest": ["1"], "after": ["3", "-1"], "limit": ["1", "2"], "trace": ["agent"],
    "kind": ["tool_call", "assistant"], "tool": ["bash", "Bash"], "q": ["the", "python"], "step": ["5", "40"],
    "at": ["hour 1", "0:30"], "before": ["10"], "field": ["input", "output"], "offset": ["0", "5"],
    "length": ["10", "100"], "topic": ["score", "methods"], "verdicts": ["any", "majority", "ignore"],
    "reviews": ["0"], "verdict": ["flagged", "clean"],
}
HEADER_VALUES = {"HX-Request": ["true", "1"], "HX-Target": ["trace-results", "compare-more", "board", "other"]}
# Parameters a view needs to answer 200 at all (the base every variant adds to; a variant's own value of the same
# parameter comes later, and the last value counts).
REQUIRED = {"/api/search": "q=the", "/api/compare": "runs={run_id}", "/compare/": "runs={run_id}"}


def _views(run_id: str) -> list[tuple[str, pagecache.PageInputs]]:
    """(a path of the view, its declared inputs) for every cached view, path parameters filled in (a view's
    required parameters: ``REQUIRED``, as the path's query)."""
    found = []
    for route, _name, callback in _patterns():
        inputs = pagecache._inputs_of(callback, "GET")
        if inputs is None:
            continue
        path = "/" + route.replace("<str:run_id>", run_id).replace("<int:index>", "1")
        path = path.replace("<run_id>", run_id).replace("<index>", "1")
        if path in REQUIRED:
            path += "?" + REQUIRED[path].format(run_id=run_id)
        found.append((path, inputs))
    return found


def _variants(inputs: pagecache.PageInputs) -> list[tuple[str, dict[str, str]]]:
    """(query string, headers) pairs: none; each declared parameter with each of its values, "" and nonsense; each
    declared header alone and with the others; an unknown parameter; an undeclared htmx header."""
    variants: list[tuple[str, dict[str, str]]] = [("", {}), ("utm_source=x&zz=1", {}),
                                                  ("", {"HTTP_HX_CURRENT_URL": "http://evil/", "HTTP_HX_TRIGGER": "t"})]
    for name in inputs.query:
        for value in [*VALUES.get(name, ["1"]), "", "nonsense-value"]:
            variants.append((f"{name}={value}", {}))
        variants.append((f"{name}=nonsense-value&{name}={VALUES.get(name, ['1'])[0]}", {}))  # the last one counts
    everything = {}
    for name, _ in inputs.headers:
        for value in HEADER_VALUES[name]:
            meta = "HTTP_" + name.upper().replace("-", "_")
            variants.append(("", {meta: value}))
            everything[meta] = value
    if len(inputs.headers) > 1:
        variants.append(("", {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "trace-results"}))
        variants.append(("q=the", {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "trace-results"}))
        variants.append(("q=the", {"HTTP_HX_REQUEST": "true"}))
    return variants


def _url(path: str, query: str) -> str:
    return f"{path}{'&' if '?' in path else '?'}{query}" if query else path


def _get(path: str, query: str, headers: dict[str, str]):
    response = Client(raise_request_exception=False).get(_url(path, query), **headers)
    return response.status_code, response.content


def _key(path: str, query: str, headers: dict[str, str], inputs: pagecache.PageInputs) -> str:
    request = RequestFactory().get(_url(path, query), **headers)
    pagecache.cut_to_inputs(request, inputs)
    return pagecache.cache_key(request, "token", inputs)


@pytest.mark.slow
def test_requests_differing_in_a_declared_input_never_share_an_entry_unless_their_answers_are_equal(
        run_paths, settings) -> None:
    """Ground truth: each variant computed with the cache off. Any two variants with the same cache key must have
    the same answer; then, through the cache (fresh per view), each variant gets its own answer. Unknown
    parameters and undeclared headers answer as the plain request."""
    views = _views(run_paths["run_id"])
    assert len(views) == 34  # the analysis chart's /analysis/calibration.json (issue 24)
    distinct_answers = shared = 0
    for path, inputs in views:
        variants = _variants(inputs)
        settings.PTB_PAGE_CACHE = False
        truth = [_get(path, query, headers) for query, headers in variants]
        assert truth[0][0] == 200, (path, truth[0][0])
        assert truth[1] == truth[0] and truth[2] == truth[0], f"{path}: an undeclared input changed the answer"
        distinct_answers += len(set(truth)) - 1
        by_key: dict[str, int] = {}
        for n, (query, headers) in enumerate(variants):
            first = by_key.setdefault(_key(path, query, headers, inputs), n)
            if first != n:
                shared += 1
                assert truth[n] == truth[first], (path, variants[first], variants[n])
        settings.PTB_PAGE_CACHE = True
        caches["pages"].clear()
        with pagecache._memo.lock:
            pagecache._memo.entries.clear()
            pagecache._memo.size = 0
        for (query, headers), expected in zip(variants, truth):
            assert _get(path, query, headers) == expected, (path, query, headers)
    assert distinct_answers > 100  # the declared inputs do change answers: the test compares different pages
    assert shared > 60  # and unknown inputs, repeated and normalised values do share entries


def _count_entries(location: Path) -> int:
    return sum(1 for _ in location.rglob("*.djcache"))


def test_unknown_parameters_make_no_new_entry(run_paths, page_cache: Path) -> None:
    client = Client()
    run = run_paths["run_id"]
    paths = ["/", "/runs/", f"/runs/{run}/", "/api/leaderboard", f"/api/runs/{run}/steps"]
    for path in paths:
        assert client.get(path)["X-Page-Cache"] == "miss"
    stored = _count_entries(page_cache)
    for n in range(20):
        for path in paths:
            response = client.get(f"{path}?cachebuster{n}={n}&utm_campaign={n}", HTTP_HX_TRIGGER=str(n))
            assert response["X-Page-Cache"] == "hit", path
    assert _count_entries(page_cache) == stored
    # repeated values: the last one is the input (request.GET.get), so one entry
    assert client.get("/api/runs?limit=5")["X-Page-Cache"] == "miss"
    assert client.get("/api/runs?limit=9&limit=5")["X-Page-Cache"] == "hit"
    # a presence header's value does not matter: HX-Request: 1 is HX-Request: true
    assert client.get(f"/runs/{run}/steps", HTTP_HX_REQUEST="true")["X-Page-Cache"] == "miss"
    assert client.get(f"/runs/{run}/steps", HTTP_HX_REQUEST="1")["X-Page-Cache"] == "hit"


def test_vary_names_the_declared_headers(run_paths) -> None:
    client = Client()
    run = run_paths["run_id"]
    expected = {"/": {"Cookie"}, f"/runs/{run}/": {"HX-Request", "HX-Target", "Cookie"},
                f"/runs/{run}/steps": {"HX-Request", "Cookie"}, f"/api/runs/{run}/steps": {"Cookie"}}
    for path, vary in expected.items():
        for _ in range(2):  # the miss and the hit
            assert {v.strip() for v in client.get(path)["Vary"].split(",")} == vary, path


@pytest.mark.parametrize("poison_first", [True, False])
def test_hx_target_poisoning_of_the_run_search(run_paths, poison_first: bool) -> None:
    """Issue 25: ``curl -H 'HX-Request: true' '/runs/<id>/?q=...'`` stored the whole page under the key every
    visitor's htmx search used, so each search rendered a whole page inside the results."""
    client = Client()
    path = f"/runs/{run_paths['run_id']}/?q=the"
    search = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "trace-results"}
    requests = [{"HTTP_HX_REQUEST": "true"}, search] if poison_first else [search, {"HTTP_HX_REQUEST": "true"}]
    answers = [client.get(path, **headers) for headers in requests]
    answers += [client.get(path, **headers) for headers in requests]  # now both from the cache
    curl, htmx = (answers[0], answers[1]) if poison_first else (answers[1], answers[0])
    assert b"<html" in curl.content and b"<html" not in htmx.content
    assert b'id="trace-results"' not in htmx.content or b"<body" not in htmx.content
    for again, first in zip(answers[2:], answers[:2]):
        assert again["X-Page-Cache"] == "hit" and again.content == first.content
    plain = client.get(path)
    assert plain.content == curl.content  # HX-Request without the search target is the whole page
    other = client.get(path, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="board")
    assert other["X-Page-Cache"] == "hit" and other.content == curl.content  # an unknown target: no new entry
