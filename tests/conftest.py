"""Shared fixtures: every test session gets its own warehouse file with the published data loaded once, and
warehouses of every kind (plain file, DuckLake with a SQLite catalog, DuckLake with a PostgreSQL catalog)."""
from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ptbsite import warehouse

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


# This test run's own page-cache folder (never the install's data/cache/pages, never another run's): set before
# any test or session fixture writes (a write publishes the warehouse version into the page cache).
PAGE_CACHE_FOLDER = Path(tempfile.mkdtemp(prefix="ptb-test-page-cache-"))


def pytest_configure(config) -> None:
    from django.conf import settings

    settings.CACHES = {**settings.CACHES, "pages": {
        "BACKEND": "ptbsite.filecache.AtomicAddFileBasedCache", "LOCATION": str(PAGE_CACHE_FOLDER)}}
    settings.PTB_PAGE_CACHE = False


def pytest_unconfigure(config) -> None:
    shutil.rmtree(PAGE_CACHE_FOLDER, ignore_errors=True)


@pytest.fixture(autouse=True)
def pages_computed_per_request(settings) -> None:
    """Tests see pages as computed (``PTB_PAGE_CACHE`` off), so a page cached by one test is never served to
    another whose warehouse differs; the cache itself is tested with it on (tests/test_page_cache.py)."""
    settings.PTB_PAGE_CACHE = False


@pytest.fixture(scope="session")
def published_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A warehouse file holding the shipped published data (the demo leaderboard)."""
    from django.conf import settings

    from leaderboard.services import import_published

    path = tmp_path_factory.mktemp("warehouse") / "published.duckdb"
    settings.PTB_WAREHOUSE = str(path)
    warehouse.reset_migration_cache()
    import_published()
    return path


@pytest.fixture
def use_published(published_warehouse: Path, settings) -> Iterator[Path]:
    """Point the warehouse setting at the session's published warehouse for one test."""
    settings.PTB_WAREHOUSE = str(published_warehouse)
    yield published_warehouse


@pytest.fixture
def fresh_warehouse(tmp_path: Path, settings) -> Iterator[Path]:
    """An empty warehouse file of the test's own."""
    path = tmp_path / "fresh.duckdb"
    settings.PTB_WAREHOUSE = str(path)
    warehouse.reset_migration_cache()
    yield path


# Playwright's sync API runs an event loop in the test thread; Django's ORM then refuses to run there.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"


@pytest.fixture(scope="module")
def browser():
    """Headless Debian Chromium driven by Playwright (its own browser download does not work here).

    Module-scoped: Playwright's sync API keeps an asyncio loop running in this thread while it is open, and
    inspect-ai's evaluations (other test modules) need to start their own loop.
    """
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--disable-quic"],
        )
        yield browser
        browser.close()


def open_page(browser, **context_options):
    """A fresh browser context and page (``context_options`` go to ``browser.new_context``, e.g. a phone's
    viewport); the page's uncaught script errors collect in ``page.js_errors``. Returns (context, page): close the
    context when done."""
    context = browser.new_context(**context_options)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.js_errors = errors
    return context, page


@pytest.fixture
def page(browser):
    """A fresh browser page at 1400x900; screenshots go to test-artifacts/ for a person to look at."""
    ARTIFACTS.mkdir(exist_ok=True)
    context, page = open_page(browser, viewport={"width": 1400, "height": 900})
    yield page
    context.close()


@pytest.fixture
def staff_client(db):
    """A Django test client logged in as a staff user ("reviewer")."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.create_user("reviewer", is_staff=True))
    return client


def use_file_page_cache(settings, location: Path) -> Path:
    """Turn the page cache on, on a file-based cache in ``location`` (the embedded default's backend); returns it."""
    settings.CACHES = {**settings.CACHES, "pages": {
        "BACKEND": "ptbsite.filecache.AtomicAddFileBasedCache", "LOCATION": str(location)}}
    settings.PTB_PAGE_CACHE = True
    return location


@pytest.fixture(scope="session")
def demo_tree(tmp_path_factory: pytest.TempPathFactory):
    """A generated results tree (12 runs, every scaffold format and state; no long run) and its DemoReport."""
    from demo.tree import make_demo_results

    return make_demo_results(root=tmp_path_factory.mktemp("demo") / "results", runs=12, seed=12, long_run=False)


@pytest.fixture(scope="session")
def demo_warehouse_state(published_warehouse: Path, demo_tree, tmp_path_factory: pytest.TempPathFactory):
    """A warehouse with the published data and the demo tree ingested (built once per session)."""
    import shutil

    from django.conf import settings

    from ingest.tree import ingest_tree

    path = tmp_path_factory.mktemp("warehouse") / "demo.duckdb"
    shutil.copy(published_warehouse, path)
    previous = settings.PTB_WAREHOUSE
    settings.PTB_WAREHOUSE = str(path)
    warehouse.reset_migration_cache()
    try:
        report = ingest_tree(root=demo_tree.root)
    finally:
        settings.PTB_WAREHOUSE = previous
    return report, path


@pytest.fixture(scope="session")
def exported_site(demo_warehouse_state, tmp_path_factory):
    """(tests.test_export.ExportedSite) One export of the demo warehouse and the search runs per test session,
    shared by the tests that only read the site; a test that changes the warehouse works on a copy of both
    (``site_copy``)."""
    import shutil

    from django.conf import settings

    from export.exporter import export_site

    from .test_export import ExportedSite, add_search_runs

    _, source = demo_warehouse_state
    folder = tmp_path_factory.mktemp("exported")
    path = folder / "export.duckdb"
    shutil.copy(source, path)
    previous = settings.PTB_WAREHOUSE
    settings.PTB_WAREHOUSE = str(path)
    warehouse.reset_migration_cache()
    try:
        added = add_search_runs(folder / "search-tree")
        report = export_site(folder / "site")
    finally:
        settings.PTB_WAREHOUSE = previous
        warehouse.reset_migration_cache()
    return ExportedSite(path, folder / "site", added, report)


@pytest.fixture
def shared_site(exported_site, settings):
    """The session's export, the warehouse setting pointing at its warehouse (read only: see site_copy)."""
    settings.PTB_WAREHOUSE = str(exported_site.warehouse)
    warehouse.reset_migration_cache()
    return exported_site


@pytest.fixture
def site_copy(exported_site, tmp_path, settings):
    """A copy of the session's warehouse and exported site (files with their mtimes) that this test may change."""
    import shutil

    from .test_export import ExportedSite

    path = tmp_path / "export.duckdb"
    shutil.copy(exported_site.warehouse, path)
    outdir = tmp_path / "site"
    shutil.copytree(exported_site.outdir, outdir)
    settings.PTB_WAREHOUSE = str(path)
    warehouse.reset_migration_cache()
    return ExportedSite(path, outdir, exported_site.added, exported_site.report)


@pytest.fixture
def demo_ingested(demo_warehouse_state, demo_tree, settings):
    """(DemoReport, IngestReport, warehouse path) with the warehouse setting pointing at the demo warehouse."""
    report, path = demo_warehouse_state
    settings.PTB_WAREHOUSE = str(path)
    return demo_tree, report, path


# --- rerun jobs (evaluator): a results tree with a tiny checkpoint, a real Celery worker on a real Redis ---

RERUN_METHOD = "claude_claude-opus-4-6_10h_run1"
RERUN_RUN_DIR = "gsm8k_Qwen_Qwen3-1.7B-Base_17000001"
WORKER_TOKEN = "test-worker-token"
# The module workers' judge command (a worker runs its own PTB_JUDGE_COMMAND; tests/judge_stub.py stands in for
# the harness's LLM judge, which needs an API key and the network).
JUDGE_COMMAND = json.dumps([sys.executable, str(Path(__file__).resolve().parent / "judge_stub.py"), "{run_dir}"])
GSM8K_ROWS = [
    {"input": "What is 2 + 3?", "target": "5"},
    {"input": "What is 10 - 4?", "target": "6"},
    {"input": "Natalia sold 48 clips in April and half as many in May. How many in all?", "target": "72"},
]


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Qwen2-architecture checkpoint with its tokenizer, built once per session (~3 s)."""
    from evaluator.tiny_model import build_tiny_checkpoint

    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "final_model")


@pytest.fixture(scope="session")
def templates_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A templates folder of our own standing in for the harness's src/eval/templates: ChatML under each file
    name evaluate.py asks for (qwen3.jinja, ...). Not the harness's bytes: provenance says so."""
    from evaluator.tiny_model import CHATML_TEMPLATE

    folder = tmp_path_factory.mktemp("templates")
    for name in ("qwen3.jinja", "llama3.jinja", "gemma3.jinja", "gemma3_tool_calling.jinja", "smollm.jinja"):
        (folder / name).write_text(CHATML_TEMPLATE)
    return folder


def local_dataset(folder: Path, benchmark: str, n: int = 3) -> Path:
    """A local copy of ``benchmark``'s Hugging Face dataset (``n`` synthetic rows, the `datasets` cache layout
    with its ptb-dataset.json) in ``folder``; returns the folder."""
    from demo.datasets import synthetic_rows
    from evaluator.hf_cache import write_local_dataset

    return write_local_dataset(folder, benchmark=benchmark, rows=synthetic_rows(benchmark, n),
                               description=f"{benchmark} test copy", synthetic=True).path


def write_run(root: Path, *, checkpoint: Path | None, run_dir: str = RERUN_RUN_DIR,
              contamination: str = "no contamination detected") -> Path:
    """One run directory of a results tree (scored 0.25, judged clean unless told), with ``checkpoint`` copied
    in as ``final_model/`` (None: no final model). Returns the run directory."""
    import json
    import shutil

    path = root / RERUN_METHOD / run_dir
    path.mkdir(parents=True)
    (path / "time_taken.txt").write_text("05:00:00\n")
    (path / "metrics.json").write_text(json.dumps({"accuracy": 0.25, "stderr": 0.01}))
    (path / "contamination_judgement.txt").write_text(contamination + "\n")
    (path / "disallowed_model_judgement.txt").write_text("only allowed use detected\n")
    (path / "solve_out.txt").write_text("I trained the model and saved it to final_model.\n")
    (path / "task").mkdir()
    (path / "task" / "train.py").write_text("print('training')\n")
    if checkpoint is not None:
        shutil.copytree(checkpoint, path / "final_model")
    return path


@pytest.fixture
def rerun_tree(tmp_path: Path, fresh_warehouse: Path, tiny_checkpoint: Path) -> dict:
    """A results tree with one scored run holding the tiny checkpoint, ingested into a fresh warehouse.

    Returns {"root", "run_dir", "run_id", "dataset", "gsm8k_cache"} (dataset: a 3-row gsm8k-format JSONL;
    gsm8k_cache: a local copy of openai/gsm8k with 3 synthetic test rows, for the real inspect_evals task)."""
    import json

    from traces.layout import run_id
    from ingest.tree import ingest_tree

    root = tmp_path / "results"
    run_dir = write_run(root, checkpoint=tiny_checkpoint)
    report = ingest_tree(root=root)
    assert report.stored == 1, report.problems
    dataset = tmp_path / "gsm8k_local.jsonl"
    dataset.write_text("".join(json.dumps(row) + "\n" for row in GSM8K_ROWS))
    return {"root": root, "run_dir": run_dir, "run_id": run_id(RERUN_METHOD, RERUN_RUN_DIR), "dataset": dataset,
            "gsm8k_cache": local_dataset(tmp_path / "gsm8k-cache", "gsm8k")}


class RedisDatabases:
    """Redis databases this test run owns, so two test runs on one machine never touch each other's queues.

    A database is claimed only while it is empty and no client has it selected (CLIENT LIST: a Celery worker still
    consuming it, e.g. one left by a killed test run, would take the new run's tasks), with ``SET
    ptb-test-claim:<n> <owner> NX EX`` in database 0 (a key no other client uses); only claimed databases are ever
    flushed, and the claims are released at the end of the session. Database 0 itself (the production default)
    is never claimed."""

    CLAIM_SECONDS = 4 * 3600

    def __init__(self, host: str = "127.0.0.1", port: int = 6379) -> None:
        import redis

        self.base = f"redis://{host}:{port}"
        self._control = redis.Redis.from_url(f"{self.base}/0")
        self._owner = f"{os.uname().nodename}:{os.getpid()}:{secrets.token_hex(4)}"
        self.claimed: list[int] = []

    def claim(self) -> int:
        """Claim one more empty database and return its number; RuntimeError when none of 1-15 is free."""
        import redis

        for db in range(1, 16):
            if db in self.claimed:
                continue
            if not self._control.set(f"ptb-test-claim:{db}", self._owner, nx=True, ex=self.CLAIM_SECONDS):
                if not self._reclaim_from_dead_owner(db):
                    continue
            if not self._selected(db):
                with redis.Redis.from_url(f"{self.base}/{db}") as client:  # closed: it would count as selecting db
                    empty = client.dbsize() == 0
                if empty:
                    self.claimed.append(db)
                    return db
            self._control.delete(f"ptb-test-claim:{db}")  # someone else's data or worker is there: leave it alone
        raise RuntimeError(f"no free Redis database (1-15) on {self.base}: every one is claimed, holds data or is "
                           "selected by a client")

    def _reclaim_from_dead_owner(self, db: int) -> bool:
        """Take over database ``db`` when its claim belongs to a test run on this machine whose process is gone (a
        killed run never released its claims, which would otherwise stay for CLAIM_SECONDS): its data are that
        dead run's, so the database is emptied. False when the owner lives, is elsewhere, a client still has the
        database selected (a worker of the dead run that outlived it: it would take this run's tasks), or another run
        won."""
        import redis

        key = f"ptb-test-claim:{db}"
        owner = (self._control.get(key) or b"").decode()
        host, _, rest = owner.partition(":")
        pid = rest.partition(":")[0]
        if host != os.uname().nodename or not pid.isdecimal() or _alive(int(pid)) or self._selected(db):
            return False
        with self._control.pipeline() as pipe:  # only if the claim is still the dead run's (WATCH)
            try:
                pipe.watch(key)
                if (pipe.get(key) or b"").decode() != owner:
                    return False
                pipe.multi()
                pipe.set(key, self._owner, ex=self.CLAIM_SECONDS)
                pipe.execute()
            except redis.WatchError:
                return False
        with redis.Redis.from_url(f"{self.base}/{db}") as client:
            client.flushdb()
        return True

    def _selected(self, db: int) -> int:
        """How many clients of the Redis server have database ``db`` selected (CLIENT LIST's ``db`` field): a
        Celery worker consuming it, or a test process publishing to it."""
        return sum(1 for client in self._control.client_list() if str(client.get("db")) == str(db))

    def url(self, index: int, *, flush: bool = False) -> str:
        """The URL of this run's ``index``-th database (claimed on first use); ``flush`` empties it first."""
        while len(self.claimed) <= index:
            self.claim()
        url = f"{self.base}/{self.claimed[index]}"
        if flush:
            import redis

            redis.Redis.from_url(url).flushdb()
        return url

    def release(self) -> None:
        import redis

        for db in self.claimed:
            redis.Redis.from_url(f"{self.base}/{db}").flushdb()
            if self._control.get(f"ptb-test-claim:{db}") == self._owner.encode():
                self._control.delete(f"ptb-test-claim:{db}")
        self.claimed.clear()


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this machine."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_REDIS: RedisDatabases | None = None


def redis_url(index: int = 0, *, flush: bool = False) -> str:
    """The URL of this test run's ``index``-th own Redis database (0: the module workers' queue)."""
    global _REDIS
    if _REDIS is None:
        _REDIS = RedisDatabases()
    return _REDIS.url(index, flush=flush)


def pytest_sessionfinish(session, exitstatus) -> None:
    if _REDIS is not None:
        _REDIS.release()


def use_broker(monkeypatch: pytest.MonkeyPatch, url: str) -> str:
    """Point this process's Celery app (the web side that queues jobs) at ``url``."""
    from ptbsite.celery import app

    monkeypatch.setattr(app.conf, "broker_url", url)
    monkeypatch.setattr(app.conf, "broker_transport_options", {})
    # The app keeps pools of connections and producers to the first broker it used (Celery's remote control,
    # e.g. the worker census, publishes through them): new ones for this broker.
    monkeypatch.setattr(app, "_pool", None)
    monkeypatch.setattr(app.amqp, "_producer_pool", None)
    return url


@pytest.fixture
def redis_broker(monkeypatch: pytest.MonkeyPatch) -> str:
    """The test's Celery app publishes to the Redis test database the module's worker consumes."""
    return use_broker(monkeypatch, redis_url())


# ``python -c _DIE_WITH_TEST_RUN <test run's pid> <python arguments>``: PR_SET_PDEATHSIG (Linux prctl 1) set to
# SIGKILL, then python exec'd with the arguments, so the process dies with the test run that started it. A worker
# that outlived a killed run (its own session: no signal reached it) kept consuming that run's Redis database, which
# the next run took over, and took the next run's tasks: in test_worker_faults' redelivery test it swept the unacked
# message after the visibility timeout, was told "job is running; nothing to do" and acknowledged it, so no worker
# got the message again after the test killed its own (issue 25).
_DIE_WITH_TEST_RUN = (
    "import ctypes, os, signal, sys\n"
    "if ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL) != 0: sys.exit('prctl(PR_SET_PDEATHSIG) failed')\n"
    "if os.getppid() != int(sys.argv[1]): sys.exit('the test run ended before its worker started')\n"
    "os.execv(sys.executable, [sys.executable, *sys.argv[2:]])\n"
)


class CeleryWorker:
    """A real ``celery -A ptbsite worker`` subprocess (its own process group, so it can be SIGKILLed whole), killed
    by the kernel when the test run dies (``_DIE_WITH_TEST_RUN``; the run's main thread must start it).

    It gets the broker URL, the worker token and a templates folder: its DATABASE_URL and PTB_WAREHOUSE point at
    paths that do not exist, so everything it does for a job goes through the web server's API. Its Hugging Face
    and XDG caches are empty folders of its own (no dataset is on it unless a job brings a local copy)."""

    def __init__(self, broker_url: str, log_path: Path, *, templates: Path | None = None,
                 env: dict[str, str] | None = None) -> None:
        import subprocess
        import sys

        self.log_path = log_path
        caches = log_path.parent / f"{log_path.stem}-caches"
        # the worker's own Hugging Face datasets cache (HF_HOME/datasets) and inspect-ai's copies of what it loaded
        self.hf_datasets_cache, self.inspect_cache = caches / "hf" / "datasets", caches / "xdg" / "inspect_ai"
        env = {**os.environ, "CELERY_BROKER_URL": broker_url, "PYTHONUNBUFFERED": "1",
               "DATABASE_URL": "sqlite:////nonexistent/worker-must-not-open.sqlite3",
               "PTB_WAREHOUSE": "/nonexistent/worker-must-not-open.duckdb", "PTB_WORKER_TOKEN": WORKER_TOKEN,
               "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
               "HF_HOME": str(caches / "hf"), "XDG_CACHE_HOME": str(caches / "xdg"),
               **({"PTB_TEMPLATES_DIR": str(templates)} if templates else {}), **(env or {})}
        self.process = subprocess.Popen(
            [sys.executable, "-c", _DIE_WITH_TEST_RUN, str(os.getpid()),
             "-m", "celery", "-A", "ptbsite", "worker", "--pool=solo", "--loglevel=INFO",
             "--without-gossip", "--without-mingle", "--without-heartbeat", "-n", f"test-{os.getpid()}@%h"],
            cwd=Path(__file__).resolve().parent.parent, env=env, stdout=log_path.open("wb"),
            stderr=subprocess.STDOUT, start_new_session=True,
        )
        self.wait_for("ready.", timeout=60)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for(self, text: str, *, timeout: float) -> None:
        import time

        deadline = time.monotonic() + timeout
        while text not in self.log():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"celery worker never logged {text!r}:\n{self.log()[-4000:]}")
            time.sleep(0.2)

    def kill(self) -> None:
        """SIGKILL the worker's whole process group (no chance to ack, report or clean up)."""
        import signal

        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        import signal
        import subprocess

        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture(scope="module")
def celery_worker(tmp_path_factory: pytest.TempPathFactory, templates_dir: Path) -> Iterator[CeleryWorker]:
    """One worker for a test module, on a flushed Redis test database (use with ``redis_broker``)."""
    worker = CeleryWorker(redis_url(flush=True), tmp_path_factory.mktemp("worker") / "celery-worker.log",
                          templates=templates_dir, env={"PTB_JUDGE_COMMAND": JUDGE_COMMAND})
    yield worker
    worker.stop()


@pytest.fixture
def worker_settings(settings, live_server, tmp_path: Path):
    """Settings of a web server that workers call back: its live URL, the worker token, 1 s heartbeats and a
    per-test .eval log folder."""
    settings.PTB_PUBLIC_URL = live_server.url
    settings.PTB_WORKER_TOKEN = WORKER_TOKEN
    settings.PTB_JOB_HEARTBEAT_SECONDS = 1
    settings.PTB_EVAL_LOG_DIR = tmp_path / "evals"
    return settings


WAREHOUSE_KINDS = ("file", "ducklake-sqlite", "ducklake-postgres")
# The server holding DuckLake catalogs in tests: a database of its own per warehouse, dropped at the end.
POSTGRES_ADMIN = os.environ.get("PTB_TEST_POSTGRES", "host=127.0.0.1 port=5432 user=postgres dbname=postgres")


class WarehouseFactory:
    """Makes empty warehouses of each kind under one folder; PostgreSQL databases named ``ptb_test_<hex>``."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.databases: list[str] = []
        self.postgres_error: str | None = None
        self._count = 0

    def postgres_conninfo(self, dbname: str) -> str:
        return " ".join(p for p in POSTGRES_ADMIN.split() if not p.startswith("dbname=")) + f" dbname={dbname}"

    def _admin(self):
        import psycopg

        return psycopg.connect(POSTGRES_ADMIN, autocommit=True, connect_timeout=3)

    def make(self, kind: str) -> str:
        """A new empty warehouse of ``kind``, as a PTB_WAREHOUSE value; skips the test when PostgreSQL is down."""
        self._count += 1
        base = self.folder / f"{kind}-{self._count}"
        base.mkdir()
        if kind == "file":
            return str(base / "warehouse.duckdb")
        if kind == "ducklake-sqlite":
            return f"ducklake:sqlite:{base / 'catalog.sqlite'}?data={base / 'data'}"
        import psycopg

        name = f"ptb_test_{secrets.token_hex(4)}"
        try:
            with self._admin() as con:
                con.execute(f'CREATE DATABASE "{name}"')
        except psycopg.OperationalError as exc:
            message = f"PostgreSQL unreachable at {POSTGRES_ADMIN!r} ({exc}); .ci/run starts it in CI"
            if os.environ.get("PTB_TEST_REQUIRE_POSTGRES") == "1":  # set by .ci/run: there a skip would hide it
                pytest.fail(message)
            pytest.skip(message)
        self.databases.append(name)
        return f"ducklake:postgres:{self.postgres_conninfo(name)}?data={base / 'data'}"

    def drop_all(self) -> None:
        if not self.databases:
            return
        warehouse.close_connections()
        with self._admin() as con:
            for name in self.databases:
                con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def warehouse_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WarehouseFactory]:
    factory = WarehouseFactory(tmp_path_factory.mktemp("warehouses"))
    yield factory
    factory.drop_all()


@pytest.fixture(params=WAREHOUSE_KINDS)
def any_warehouse(request, warehouse_factory: WarehouseFactory, settings) -> Iterator[str]:
    """An empty warehouse of each kind in turn (the test runs three times); yields its PTB_WAREHOUSE value."""
    spec = warehouse_factory.make(request.param)
    settings.PTB_WAREHOUSE = spec
    warehouse.reset_migration_cache()
    yield spec


@pytest.fixture
def serve():
    """serve(OUTDIR) -> base URL: the folder served as plain files by ``python -m http.server`` on a free loopback
    port (Pagefind fetches its index over http), stopped after the test."""
    import socket
    import subprocess
    import time
    import urllib.request

    servers = []

    def start(outdir) -> str:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        servers.append(subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                                         "--directory", str(outdir)], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL))
        base = f"http://127.0.0.1:{port}/"
        for _ in range(100):
            try:
                urllib.request.urlopen(base, timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        return base

    yield start
    for server in servers:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture
def served(shared_site, serve):
    """(base URL, OUTDIR, the demo run with the most steps, the search runs): the session's export of the demo
    warehouse with ``add_search_runs``' two runs, served as plain files."""
    from traces import selectors

    from .test_export import SEARCH_METHOD

    run = max((r for r in selectors.list_runs(limit=None)[0] if r.method != SEARCH_METHOD), key=lambda r: r.step_count)
    return serve(shared_site.outdir), shared_site.outdir, run, shared_site.added


@pytest.fixture
def export_warehouse(demo_warehouse_state, tmp_path, settings) -> Path:
    """A copy of the demo warehouse (published data and the 12-run demo tree) this test may change."""
    _, source = demo_warehouse_state
    path = tmp_path / "export.duckdb"
    shutil.copy(source, path)
    settings.PTB_WAREHOUSE = str(path)
    warehouse.reset_migration_cache()
    return path
