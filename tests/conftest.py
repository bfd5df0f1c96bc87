"""Shared fixtures: every test session gets its own warehouse file with the published data loaded once, and
warehouses of every kind (plain file, DuckLake with a SQLite catalog, DuckLake with a PostgreSQL catalog)."""
from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from ptbsite import warehouse

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


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


@pytest.fixture
def page(browser):
    """A fresh browser page; screenshots go to test-artifacts/ for a person to look at."""
    ARTIFACTS.mkdir(exist_ok=True)
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.js_errors = errors
    yield page
    context.close()


@pytest.fixture(scope="session")
def demo_tree(tmp_path_factory: pytest.TempPathFactory):
    """A generated results tree (12 runs, every scaffold format and state; no long run) and its DemoReport."""
    from traces.demo_results import make_demo_results

    return make_demo_results(root=tmp_path_factory.mktemp("demo") / "results", runs=12, seed=12, long_run=False)


@pytest.fixture(scope="session")
def demo_warehouse_state(published_warehouse: Path, demo_tree, tmp_path_factory: pytest.TempPathFactory):
    """A warehouse with the published data and the demo tree ingested (built once per session)."""
    import shutil

    from django.conf import settings

    from traces.services import ingest_tree

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


@pytest.fixture
def demo_ingested(demo_warehouse_state, demo_tree, settings):
    """(DemoReport, IngestReport, warehouse path) with the warehouse setting pointing at the demo warehouse."""
    report, path = demo_warehouse_state
    settings.PTB_WAREHOUSE = str(path)
    return demo_tree, report, path


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
            pytest.skip(f"PostgreSQL unreachable at {POSTGRES_ADMIN!r} ({exc}); .ci/run starts it in CI")
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
