"""Public pages computed once per warehouse version (ptbsite.pagecache): the next GET after every kind of write
(an ingest and an import in another process, a reviewer's override through its endpoint, a rerun's and a judge
re-run's result through the worker API) shows the new data; a hit opens no warehouse; ETag / Last-Modified give
304; htmx partials have their own entries; signed-in (staff) pages are never served from or stored in the cache.
And the load shedding (ptbsite.overload): a full server answers 503 with Retry-After at once."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.test import Client, RequestFactory

from evaluator.models import RerunJob
from ptbsite import overload, warehouse
from ptbsite.warehouse import connections, version
from tests.conftest import WORKER_TOKEN, redis_url, use_file_page_cache
from tests.test_reruns_worker_api import _auth, _finish, _log_for, _start, running_job, scored_log  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def page_cache(tmp_path: Path, settings) -> Path:
    """The test's own file-based page cache (the embedded default's backend)."""
    settings.PTB_WORKER_TOKEN = WORKER_TOKEN
    return use_file_page_cache(settings, tmp_path / "page-cache")


@pytest.fixture
def own_published(published_warehouse: Path, tmp_path: Path, settings) -> Path:
    """A copy of the session's published warehouse that this test may write to."""
    path = tmp_path / "own.duckdb"
    shutil.copy(published_warehouse, path)
    settings.PTB_WAREHOUSE = str(path)
    warehouse.reset_migration_cache()
    return path


def _uncached(path: str, settings, **headers) -> bytes:
    """What the page is when computed now, without the cache."""
    settings.PTB_PAGE_CACHE = False
    try:
        response = Client().get(path, **headers)
        assert response.status_code == 200
        return response.content
    finally:
        settings.PTB_PAGE_CACHE = True


def _cached(client: Client, path: str, **headers):
    """GET ``path`` twice: the first computes (miss), the second is a hit with the same body; returns the hit."""
    first = client.get(path, **headers)
    assert first.status_code == 200 and first["X-Page-Cache"] == "miss", (path, first.status_code)
    second = client.get(path, **headers)
    assert second.status_code == 200 and second["X-Page-Cache"] == "hit" and second.content == first.content
    return second


def _manage(tmp_path: Path, *args: str) -> None:
    """Run a management command in another process on this test's warehouse (with another data folder, so with
    another page cache: only the version file next to the warehouse can tell this process about the write)."""
    from django.conf import settings

    env = {**os.environ, "PTB_WAREHOUSE": str(settings.PTB_WAREHOUSE), "PTB_DATA_DIR": str(tmp_path / "other"),
           "DJANGO_SETTINGS_MODULE": "ptbsite.settings"}
    env.pop("DATABASE_URL", None)
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr


def test_a_hit_is_served_without_opening_the_warehouse(own_published: Path, monkeypatch) -> None:
    client = Client()
    for path in ("/", "/api/leaderboard", "/plots/time-vs-score/", "/api/plots/time-spent"):
        first = client.get(path)
        assert first.status_code == 200 and first["X-Page-Cache"] == "miss"
    opened: list[str] = []
    real_open = connections._open
    monkeypatch.setattr(connections, "_open", lambda text: opened.append(text) or real_open(text))
    for path in ("/", "/api/leaderboard", "/plots/time-vs-score/", "/api/plots/time-spent"):
        again = client.get(path)
        assert again.status_code == 200 and again["X-Page-Cache"] == "hit"
    assert opened == []
    assert client.get("/?base_model=Qwen3-4B-Base")["X-Page-Cache"] == "miss"  # another query: computed
    assert opened  # ... from the warehouse


def test_the_query_is_normalised_and_the_answer_carries_validators(own_published: Path) -> None:
    client = Client()
    first = client.get("/?source=all&base_model=Qwen3-4B-Base")
    assert first["X-Page-Cache"] == "miss"
    same = client.get("/?base_model=Qwen3-4B-Base&source=all")  # the same query in another order
    assert same["X-Page-Cache"] == "hit" and same.content == first.content
    assert first["ETag"].startswith('"') and first["ETag"] == same["ETag"]
    assert first["Cache-Control"] == "public, max-age=0, must-revalidate"
    vary = {v.strip() for v in first["Vary"].split(",")}
    assert vary == {"Cookie"}  # the leaderboard page reads no header (its view's page_inputs); the run page's: below
    run_vary = Client().get("/api/runs?limit=1")["Vary"]
    assert {v.strip() for v in run_vary.split(",")} == {"Cookie"}
    assert first["Last-Modified"]

    not_modified = client.get("/?base_model=Qwen3-4B-Base&source=all", HTTP_IF_NONE_MATCH=first["ETag"])
    assert not_modified.status_code == 304 and not_modified.content == b"" and not_modified["ETag"] == first["ETag"]
    since = client.get("/?base_model=Qwen3-4B-Base&source=all", HTTP_IF_MODIFIED_SINCE=first["Last-Modified"])
    assert since.status_code == 304
    other = client.get("/?base_model=Qwen3-4B-Base&source=all", HTTP_IF_NONE_MATCH='"something-else"')
    assert other.status_code == 200 and other.content == first.content


def test_htmx_partials_get_their_own_entries(demo_ingested) -> None:
    client = Client()
    run_id = client.get("/api/runs?limit=1").json()["runs"][0]["id"]
    path = f"/runs/{run_id}/steps?after=-1"
    page = _cached(client, path)
    partial = _cached(client, path, HTTP_HX_REQUEST="true")
    assert b"<html" in page.content and b"<html" not in partial.content  # two entries, neither served for the other
    assert page["ETag"] != partial["ETag"]


def test_signed_in_pages_are_never_served_from_or_stored_in_the_cache(demo_ingested, staff_client: Client) -> None:
    anonymous = Client()
    run_id = anonymous.get("/api/runs?limit=1").json()["runs"][0]["id"]
    path = f"/runs/{run_id}/"
    public = _cached(anonymous, path)
    assert b'id="override-form"' not in public.content
    for _ in range(2):
        staff = staff_client.get(path)
        assert staff.status_code == 200 and not staff.has_header("X-Page-Cache")
        assert b'id="override-form"' in staff.content and b"csrfmiddlewaretoken" in staff.content
        assert staff["Cache-Control"] == "private, no-cache" and "Cookie" in staff["Vary"]
    after = anonymous.get(path)
    assert after["X-Page-Cache"] == "hit" and after.content == public.content  # the staff page was not stored
    assert not Client().get(path, HTTP_AUTHORIZATION="Token x").has_header("X-Page-Cache")  # API credentials


def test_never_cached_paths_and_answers(own_published: Path, staff_client: Client) -> None:
    client = Client()
    for path in ("/api/runs/no-such-run", "/runs/no-such-run/"):  # a 404 is not kept
        assert client.get(path).status_code == 404
        assert not client.get(path).has_header("X-Page-Cache")
    assert not client.get("/reruns/").has_header("X-Page-Cache")
    assert not client.get("/admin/login/").has_header("X-Page-Cache")


def test_an_ingest_by_another_process_shows_on_the_next_get(own_published: Path, demo_tree, tmp_path: Path,
                                                            settings) -> None:
    client = Client()
    before = _cached(client, "/api/runs?limit=500")
    assert before.json()["runs"] == []
    board = _cached(client, "/runs/")
    _manage(tmp_path, "ingest", str(demo_tree.root), "--quiet")
    after = client.get("/api/runs?limit=500")
    assert after["X-Page-Cache"] == "miss" and len(after.json()["runs"]) == len(demo_tree.runs)
    assert after.content == _uncached("/api/runs?limit=500", settings)
    assert client.get("/runs/").content != board.content


def _edited_published(tmp_path: Path) -> Path:
    """A copy of the shipped published data with one score changed (GPT-5.2-Codex, Qwen3-1.7B-Base, gsm8k)."""
    from leaderboard.services import DEFAULT_PUBLISHED_DIR

    edited = tmp_path / "published"
    shutil.copytree(DEFAULT_PUBLISHED_DIR, edited)
    csv = edited / "data" / "aggregated_avg_GPT-5.2-Codex.csv"
    lines = csv.read_text().splitlines()
    header, row = lines[0].split(","), lines[1].split(",")
    row[header.index("gsm8k")] = "0.987654321"
    csv.write_text("\n".join([lines[0], ",".join(row), *lines[2:]]) + "\n")
    return edited


def test_an_import_by_another_process_shows_on_the_next_get(own_published: Path, tmp_path: Path, settings) -> None:
    client = Client()
    before = _cached(client, "/api/leaderboard")
    edited = _edited_published(tmp_path)
    _manage(tmp_path, "import_published", str(edited))
    after = client.get("/api/leaderboard", HTTP_IF_NONE_MATCH=before["ETag"])
    assert after.status_code == 200 and after["ETag"] != before["ETag"]
    assert after.content == _uncached("/api/leaderboard", settings) != before.content


def test_an_override_through_its_endpoint_shows_on_the_next_get(rerun_tree: dict, staff_client: Client,
                                                                settings) -> None:
    client = Client()
    run_id = rerun_tree["run_id"]
    runs = _cached(client, "/runs/")
    detail = _cached(client, f"/api/runs/{run_id}")
    board = _cached(client, "/?source=runs")
    assert b'class="badge override"' not in runs.content
    response = staff_client.post(f"/reruns/runs/{run_id}/override",
                                 {"kind": "contamination", "flagged": "true", "reason": "trained on the test split"})
    assert response.status_code == 302
    assert b'class="badge override"' in client.get("/runs/").content
    after = client.get(f"/api/runs/{run_id}", HTTP_IF_NONE_MATCH=detail["ETag"])
    assert detail.json()["flagged"] is False
    assert after.status_code == 200 and after.json()["flagged"] is True
    new_board = client.get("/?source=runs")
    assert board["X-Page-Cache"] == "hit"
    assert new_board["X-Page-Cache"] == "miss" and new_board.content == _uncached("/?source=runs", settings)


@pytest.mark.django_db
def test_a_rerun_result_through_the_worker_api_shows_on_the_next_get(
        running_job: RerunJob, scored_log: Path, tmp_path: Path, settings) -> None:  # noqa: F811
    client = Client()
    path = f"/api/runs/{running_job.run_id}"
    before = _cached(client, path)
    page = _cached(client, f"/runs/{running_job.run_id}/")
    response = _finish(client, running_job, _log_for(running_job, scored_log, tmp_path))
    assert response.status_code == 200 and response.json()["status"] == "succeeded"
    after = client.get(path)
    assert after["X-Page-Cache"] == "miss" and after.content != before.content
    assert after.content == _uncached(path, settings)
    assert client.get(f"/runs/{running_job.run_id}/").content != page.content


@pytest.mark.django_db
def test_a_judge_rerun_result_through_the_worker_api_shows_on_the_next_get(rerun_tree: dict, settings) -> None:
    client = Client()
    run_id = rerun_tree["run_id"]
    path = f"/api/runs/{run_id}"
    before = _cached(client, path)
    assert not any(v["attempt"] == "rerun" for v in before.json()["verdicts"])
    job = RerunJob.objects.create(kind=RerunJob.Kind.JUDGE, run_id=run_id, run_dir=str(rerun_tree["run_dir"]),
                                  celery_task_id="task-judge")
    _start(client, job)
    report = {"status": "succeeded", "verdict_files": {"contamination_judgement.txt": "contamination detected"}}
    response = client.post(f"/api/worker/jobs/{job.pk}/finish", {"report": json.dumps(report)}, **_auth(job))
    assert response.status_code == 200 and response.json()["status"] == "succeeded", response.content
    after = client.get(path)
    assert after["X-Page-Cache"] == "miss" and after.content == _uncached(path, settings) != before.content
    assert [(v["kind"], v["flagged"]) for v in after.json()["verdicts"] if v["attempt"] == "rerun"] == [
        ("contamination", True)]


def test_a_write_on_another_machine_shows_through_a_shared_redis_cache(own_published: Path, tmp_path: Path,
                                                                       settings, monkeypatch) -> None:
    """Web servers on two machines share a Redis page cache but not the version file (each machine has its own):
    a write on one is seen by the other through the version's copy in the cache."""
    from leaderboard.services import import_published

    settings.CACHES = {**settings.CACHES, "pages": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                                    "LOCATION": redis_url(3, flush=True)}}
    machine = {"file": tmp_path / "machine-a.version"}
    monkeypatch.setattr(version, "version_path", lambda text=None: machine["file"])
    client = Client()
    before = _cached(client, "/api/leaderboard")
    machine["file"] = tmp_path / "machine-b.version"  # the writer runs on machine B
    import_published(directory=_edited_published(tmp_path))
    machine["file"] = tmp_path / "machine-a.version"  # the reader on machine A, whose file did not change
    after = client.get("/api/leaderboard")
    assert after["X-Page-Cache"] == "miss" and after.content == _uncached("/api/leaderboard", settings) != before.content


def test_while_one_request_computes_a_new_version_the_others_get_the_previous_page(own_published: Path, settings,
                                                                                   tmp_path: Path) -> None:
    from django.core.cache import caches

    from leaderboard.services import import_published
    from ptbsite import pagecache

    client = Client()
    before = _cached(client, "/api/leaderboard")
    import_published(directory=_edited_published(tmp_path))  # a write: a new version
    key = pagecache.cache_key(RequestFactory().get("/api/leaderboard"), version.current().token)
    cache = caches["pages"]
    assert cache.add(key + ":computing", 1, timeout=10)  # another request is computing the new version's page
    stale = client.get("/api/leaderboard")
    assert stale["X-Page-Cache"] == "stale" and stale.content == before.content
    cache.delete(key + ":computing")  # ... and is done (without storing, here)
    fresh = client.get("/api/leaderboard")
    assert fresh["X-Page-Cache"] == "miss" and fresh.content == _uncached("/api/leaderboard", settings) != before.content

    # A page never computed before, whose computation is under way elsewhere: wait for it, then compute it here.
    settings.PTB_SLOT_WAIT_SECONDS = 0.3
    key = pagecache.cache_key(RequestFactory().get("/api/plots/time-spent"), version.current().token)
    assert cache.add(key + ":computing", 1, timeout=10)
    started = time.monotonic()
    cold = client.get("/api/plots/time-spent")
    assert cold["X-Page-Cache"] == "miss" and time.monotonic() - started >= 0.3


# --- load shedding ---

def test_a_full_process_answers_503_with_retry_after_at_once(settings) -> None:
    settings.PTB_MAX_INFLIGHT, settings.PTB_SLOT_WAIT_SECONDS, settings.PTB_OVERLOAD_RETRY_AFTER = 2, 0.3, 2
    release, inside = threading.Event(), threading.Semaphore(0)

    def slow_view(request):
        from django.http import HttpResponse

        inside.release()
        release.wait(10)
        return HttpResponse("done")

    middleware = overload.ConcurrencyLimitMiddleware(slow_view)
    factory = RequestFactory()
    holders = [threading.Thread(target=middleware, args=(factory.get("/runs/"),)) for _ in range(2)]
    for thread in holders:
        thread.start()
    for _ in holders:
        assert inside.acquire(timeout=5)  # both slots are held
    try:
        started = time.monotonic()
        page = middleware(factory.get("/"))
        waited = time.monotonic() - started
        assert page.status_code == 503 and page["Retry-After"] == "2" and 0.25 < waited < 2
        api = middleware(factory.get("/api/leaderboard"))
        assert api.status_code == 503 and json.loads(api.content) == {"detail": "The server is busy; try again in a "
                                                                                "moment."}
        assert api["Retry-After"] == "2" and api["Cache-Control"] == "no-store"
        # The workers' results are never shed (the view here would block: answer from another thread).
        done: list = []
        worker = threading.Thread(target=lambda: done.append(middleware(factory.post("/api/worker/jobs/1/finish"))))
        worker.start()
        time.sleep(0.5)
        assert worker.is_alive() and not done  # it went through to the view instead of a 503
    finally:
        release.set()
        for thread in holders:
            thread.join(5)
    worker.join(5)
    assert done and done[0].status_code == 200
    assert middleware(factory.get("/")).status_code == 200  # slots free again


def test_static_files_and_cached_pages_answer_while_the_slots_are_full(own_published: Path, settings,
                                                                        monkeypatch) -> None:
    """Through the whole middleware stack: with every slot of the process held, a cached page and a static file
    still answer 200, an uncached page answers 503 with Retry-After."""
    settings.PTB_MAX_INFLIGHT, settings.PTB_SLOT_WAIT_SECONDS = 1, 0.2
    limiters: list[overload.ConcurrencyLimitMiddleware] = []
    real_init = overload.ConcurrencyLimitMiddleware.__init__

    def init(self, get_response) -> None:
        real_init(self, get_response)
        limiters.append(self)

    monkeypatch.setattr(overload.ConcurrencyLimitMiddleware, "__init__", init)
    client = Client()
    assert client.get("/api/plots/time-spent").status_code == 200  # cached now
    assert len(limiters) == 1, "ConcurrencyLimitMiddleware is in settings.MIDDLEWARE, once"
    slots = limiters[0].slots
    assert slots is not None and slots.acquire(timeout=1)
    try:
        assert client.get("/api/plots/time-spent")["X-Page-Cache"] == "hit"
        busy = client.get("/api/plots/time-vs-score")
        assert busy.status_code == 503 and busy["Retry-After"] == str(settings.PTB_OVERLOAD_RETRY_AFTER)
        assert client.get("/static/css/site.css").status_code == 200
    finally:
        slots.release()
    assert client.get("/api/plots/time-vs-score").status_code == 200


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _timed_get(url: str) -> tuple[int, float, str | None]:
    """(status, seconds, Retry-After) of one GET."""
    started = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            response.read()
            return response.status, time.monotonic() - started, None
    except urllib.error.HTTPError as exc:
        exc.read()
        return exc.code, time.monotonic() - started, exc.headers.get("Retry-After")


SLOT_WAIT, BURST = 0.25, 48


def test_the_server_sheds_a_burst_with_503_and_still_serves_static_files(own_published: Path, tmp_path: Path) -> None:
    """``manage.py serve`` (gthread) with one slot and the page cache off: a burst of requests at once for a computed
    page answer 200 or 503 with Retry-After, none later than the slot wait plus a few page times; a static file
    asked during the burst answers within a second. The burst is BURST requests against a SLOT_WAIT of 0.25 s: the
    page got fast enough (~20 ms) that 24 requests against 0.5 s were all served within the wait, none shed."""
    port = _free_port()
    env = {**os.environ, "PTB_WAREHOUSE": str(own_published), "PTB_DATA_DIR": str(tmp_path / "data"),
           "DJANGO_STATIC_ROOT": str(tmp_path / "static"), "DJANGO_SETTINGS_MODULE": "ptbsite.settings",
           "PTB_PAGE_CACHE": "0", "PTB_MAX_INFLIGHT": "1", "PTB_SLOT_WAIT_SECONDS": str(SLOT_WAIT),
           "PTB_OVERLOAD_RETRY_AFTER": "3"}
    env.pop("DATABASE_URL", None)
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    server = subprocess.Popen([sys.executable, "manage.py", "serve", "--workers", "1", "--threads", "64", "--bind",
                               f"127.0.0.1:{port}"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        started = time.monotonic()
        while True:
            assert server.poll() is None, server.stdout.read() if server.stdout else ""
            try:
                if _timed_get(base + "/static/css/site.css")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() - started < 60, "the server did not start"
            time.sleep(0.3)
        one_page = _timed_get(base + "/")[1]
        with ThreadPoolExecutor(max_workers=BURST + 1) as pool:
            burst = [pool.submit(_timed_get, base + "/") for _ in range(BURST)]
            time.sleep(0.2)
            static = pool.submit(_timed_get, base + "/static/css/site.css").result()
            answers = [f.result() for f in burst]
    finally:
        server.terminate()
        server.wait(timeout=30)
    statuses = sorted({a[0] for a in answers})
    assert statuses == [200, 503], answers
    assert all(a[2] == "3" for a in answers if a[0] == 503)
    shed = [a[1] for a in answers if a[0] == 503]
    assert max(shed) < SLOT_WAIT + 4 * one_page + 2, (shed, one_page)  # waited for a slot, not behind the whole burst
    assert static[0] == 200 and static[1] < 1.0, static


def test_warming_computes_the_most_visited_pages_before_anyone_asks(own_published: Path, settings) -> None:
    from ptbsite import pagecache

    warmed = pagecache.warm()
    assert [path for path, _, _ in warmed][:3] == ["/", "/api/leaderboard", "/plots/"]
    assert all(status == 200 for _, status, _ in warmed) and len(warmed) == len(settings.PTB_PAGE_WARM)
    client = Client()
    for path in ("/", "/api/leaderboard", "/plots/time-vs-score/", "/api/plots/per-benchmark", "/analysis/"):
        first = client.get(path)  # the very first visitor's request
        assert first.status_code == 200 and first["X-Page-Cache"] == "hit", path
        assert first.content == _uncached(path, settings)
    settings.PTB_PAGE_CACHE = False
    assert pagecache.warm() == []  # nothing to fill
