"""Before a delivery the worker skips Django's connection health check (``SELECT 1``) when the
previous delivery used the connection less than a second ago, and still recovers from a
connection that died in that second: the claim's error hands the delivery back to the broker
and the next delivery reconnects."""

from __future__ import annotations

import pytest
from django.db import connection

from scheduler_app.clock import FakeClock
from scheduler_app.db import connections
from scheduler_app.db.connections import close_old, mark_used
from scheduler_app.models import OccurrenceState
from tests.integration.support import START
from tests.integration.test_worker_claim_redelivery import (
    BODY_RUNS,
    Broker,
    beat_message,
    copy_message,
    deliver,
)
from tests.integration.test_worker_hook_connections import terminate_backend
from tests.integration.worker_support import due_one, fetch, load_task_modules

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


class Checks:
    """Counts Django's health checks (``is_usable``) on the default connection."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        usable = connection.is_usable

        def counted() -> bool:
            self.count += 1
            return usable()

        monkeypatch.setattr(connection, "is_usable", counted)


def query() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def test_a_connection_used_within_the_second_is_not_checked_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    query()
    checks = Checks(monkeypatch)
    mark_used(now=100.0)
    close_old(now=100.0 + connections.RECENTLY_USED / 2)
    query()
    assert checks.count == 0
    close_old(now=100.0 + connections.RECENTLY_USED * 2)
    query()
    assert checks.count == 1  # idle longer: Django's check as before


def test_a_connection_that_errored_is_checked_however_recent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    query()
    mark_used(now=100.0)
    checks = Checks(monkeypatch)
    connection.errors_occurred = True
    close_old(now=100.1)
    assert checks.count == 1


def test_a_connection_that_died_within_the_second_costs_one_redelivery(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    load_task_modules()
    BODY_RUNS.clear()
    broker = Broker()
    broker.install(monkeypatch)
    monkeypatch.setattr(connections, "RECENTLY_USED", 3600.0)  # never checked: no timing
    clock = FakeClock(START)
    occurrence = due_one(clock, task="tests.claim_counted")
    query()
    mark_used()
    terminate_backend()  # the database restarted right after the last delivery

    deliver(beat_message(occurrence), clock)  # no health check: the claim meets the dead one
    assert BODY_RUNS == [] and fetch(occurrence).state == OccurrenceState.DISPATCHED
    (copy,) = broker.sent

    deliver(copy_message(copy), clock)  # a new connection: claimed and run, once
    assert BODY_RUNS == ["ran"]
    assert (fetch(occurrence).state, fetch(occurrence).attempts) == (OccurrenceState.SUCCEEDED, 1)
    BODY_RUNS.clear()


def test_mark_used_skips_a_closed_connection() -> None:
    connection.close()
    mark_used(now=1.0)
    close_old(now=1.1)
    assert connection.connection is None
    query()  # opens a new one, checked by nobody (Django marks a new connection as checked)
