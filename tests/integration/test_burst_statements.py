"""A burst costs the same statements whatever its size (issue 39's hot path): claiming,
planning, inserting, advancing, screening and handing off N due schedules runs no statement per
schedule or per occurrence. A change that reads a relation or a deferred field per row fails
here before it shows in ``make bench``."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from scheduler_app.clock import FakeClock
from tests.integration.support import START, MemoryPublisher, schedule, ticker

pytestmark = pytest.mark.django_db


def burst_statements(count: int) -> list[str]:
    """The statements of the tick that materializes and hands off ``count`` due schedules."""
    clock = FakeClock(START)
    for index in range(count):
        schedule(clock, kind="cron", rule="* * * * *", key=f"burst-{count}-{index}")
    beat = ticker(MemoryPublisher(), clock)
    clock.set(START + timedelta(seconds=30))
    beat.tick()  # the first tick's start-up jobs, nothing due yet
    clock.set(START + timedelta(minutes=1))
    with CaptureQueriesContext(connection) as queries:
        result = beat.tick()
    assert (result.created, result.published) == (count, count)
    return [query["sql"] for query in queries.captured_queries]


def test_a_burst_of_thirty_runs_the_statements_of_a_burst_of_three() -> None:
    small, large = burst_statements(3), burst_statements(30)
    # SQLite splits a bulk insert by its limit on a statement's parameters (Django's
    # ``bulk_create`` batches): a statement per batch, never one per row.
    batches = 0 if connection.vendor == "postgresql" else 1
    assert len(small) <= len(large) <= len(small) + batches, "\n".join(large)
