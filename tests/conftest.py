"""Shared fixtures: every test session gets its own warehouse file with the published data loaded once."""
from __future__ import annotations

import os
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

    Module-scoped: Playwright's sync API keeps an event loop running in the test thread while it is open,
    and inspect-ai (later test modules) refuses to start its own loop inside a running one.
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
