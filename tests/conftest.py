"""Shared fixtures. Tests that need a server fail (not skip) when CI is set and it is missing."""

from __future__ import annotations

import os
import socket
from urllib.parse import urlparse

import pytest
from django.conf import settings
from pytest_django.plugin import blocking_manager_key

from scheduler_app.handoff.allowlist import app_tasks

IN_CI = bool(os.environ.get("CI"))
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/15")


def _reachable(url: str, default_port: int) -> bool:
    parsed = urlparse(url)
    try:
        with socket.create_connection(
            (parsed.hostname or "127.0.0.1", parsed.port or default_port), 2
        ):
            return True
    except OSError:
        return False


def require_server(name: str, url: str, default_port: int) -> None:
    """Skip locally, fail in CI, with a message that says how to start the server."""
    if _reachable(url, default_port):
        return
    message = f"{name} is not reachable at {url}; start it (see docs/deployment.md) or set the URL"
    if IN_CI:
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def using_postgres() -> bool:
    return settings.DATABASES["default"]["ENGINE"].endswith("postgresql")


def pytest_sessionstart(session: pytest.Session) -> None:
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith("postgres") and not _reachable(url, 5432):
        pytest.exit(f"PostgreSQL is not reachable at {url}; start it or unset DATABASE_URL", 3)
    # The Celery app's first autodiscovery runs Celery's Django fix-up, which calls
    # ``django.setup()`` and so applies ``settings.LOGGING`` again, removing every handler of the
    # root logger, pytest's ``caplog`` handler included. Run it once here, before any test, so
    # that a test that happens to be first to ask for the task list does not lose its records.
    # The fix-up also runs Django's system checks, which on Django 6 open a connection (a
    # JSONField asks SQLite whether it supports JSON): allowed here, before any test.
    with session.config.stash[blocking_manager_key].unblock():
        app_tasks()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if using_postgres():
        return
    for item in items:
        if item.get_closest_marker("postgres"):
            item.add_marker(
                pytest.mark.skip(reason="needs PostgreSQL: runs in the `make test-postgres` pass")
            )


@pytest.fixture
def redis_url() -> str:
    require_server("Redis", REDIS_URL, 6379)
    return REDIS_URL


TEST_TASK_PATTERNS = (
    *("demo.*", "e2e.*", "tests.*", "torture.*", "lazy.*", "shared.*"),
    *("reports.*", "sync.*", "billing.*", "lead.*", "docs_examples.*"),  # the docs' examples
)
"""The tasks the tests schedule. The allowlist (``SCHEDULER_ALLOWED_TASKS``) refuses every
other target; tests of the allowlist itself override this."""


@pytest.fixture(autouse=True)
def _unsettled(monkeypatch: pytest.MonkeyPatch) -> None:
    """A beat settles its process after its first tick (``gc.freeze``, ``Ticker.settle``); the
    test process runs thousands of tickers and must keep collecting its garbage.
    ``tests/integration/test_settle.py`` tests the real one."""
    from scheduler_app.ticker import Ticker

    monkeypatch.setattr(Ticker, "settle", lambda self: None)


@pytest.fixture(autouse=True)
def _schedulable_test_tasks(settings: object) -> None:
    if not hasattr(settings, "SCHEDULER_ALLOWED_TASKS"):
        settings.SCHEDULER_ALLOWED_TASKS = TEST_TASK_PATTERNS  # type: ignore[attr-defined]
