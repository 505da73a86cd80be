"""The beat's tick does Django's ``close_old_connections`` minus the health check (a ``SELECT
1`` round trip under ``CONN_HEALTH_CHECKS``) when the previous tick used the connection less
than a second ago; a tick that failed on its connection leaves it to be checked (and replaced)
next time."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import DatabaseError, connection

from project.celery import app as celery_app
from scheduler_app.beat import DurableScheduler
from scheduler_app.conf import get_settings
from scheduler_app.db import connections
from scheduler_app.ticker import TickResult

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


class QueryingTicker:
    """A tick that runs one statement (as an idle tick does), or fails like a lost database."""

    fail = False
    settings = get_settings()

    def tick(self) -> TickResult:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        if self.fail:
            connection.errors_occurred = True
            raise DatabaseError("server closed the connection unexpectedly")
        return TickResult(0, 0, 5.0)

    def settle(self) -> None:
        """What the real ticker does once after its first good tick (``gc.freeze``)."""


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each health check (``is_usable``) of the default connection, counted."""
    monkeypatch.setitem(connection.settings_dict, "CONN_HEALTH_CHECKS", True)
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", None)
    calls: list[int] = []
    usable = connection.is_usable

    def counted() -> bool:
        calls.append(1)
        return usable()

    monkeypatch.setattr(connection, "is_usable", counted)
    return calls


def beat(ticker: Any) -> DurableScheduler:
    scheduler = DurableScheduler(app=celery_app, ticker=ticker, lazy=True)
    scheduler.maybe_cleanup_results = lambda: None  # type: ignore[method-assign]
    return scheduler


def test_ticks_within_the_second_skip_the_health_check(
    checks: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    connection.close()
    ticking = beat(QueryingTicker())
    ticking.tick()  # a new connection: Django marks it checked
    monkeypatch.setattr(connections, "RECENTLY_USED", 3600.0)  # no wall-clock timing
    for _ in range(3):
        ticking.tick()
    assert checks == []
    monkeypatch.setattr(connections, "RECENTLY_USED", 0.0)  # idle longer than the window
    ticking.tick()
    assert checks == [1]


def test_a_tick_that_failed_on_its_connection_is_checked_next_time(
    checks: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connections, "RECENTLY_USED", 3600.0)
    ticker = QueryingTicker()
    ticking = beat(ticker)
    ticking.tick()
    ticker.fail = True
    assert ticking.tick() > 0  # the beat backs off, as for any database error
    ticker.fail = False
    ticking.tick()
    assert connection.errors_occurred is False
