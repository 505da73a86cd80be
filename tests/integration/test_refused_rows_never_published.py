"""A row the database refuses is never published: every message the beat hands off names a
row the ledger holds. (On SQLite ``INSERT OR IGNORE`` dropped a row its NOT NULL constraint
refused, and the tick published it anyway: a run with no durable row, refused by the worker
and lost.)"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db.models import JSONField, Value

from scheduler_app.clock import FakeClock
from scheduler_app.models import Occurrence, Schedule, ScheduleStatus
from tests.integration.support import START, MemoryPublisher, reload, schedule, ticker

pytestmark = pytest.mark.django_db


def test_a_row_the_database_refuses_is_not_published_and_its_schedule_says_why() -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    tampered = schedule(clock, kind="cron", rule="* * * * *")
    healthy = schedule(clock, kind="cron", rule="* * * * *")
    # JSON null args, past the services: SQLite stores it as NULL, which the ledger refuses;
    # PostgreSQL stores a JSON null.
    Schedule.objects.filter(pk=tampered.pk).update(args=Value(None, output_field=JSONField()))
    clock.set(START + timedelta(minutes=1))
    ticker(broker, clock).tick()
    stored = set(Occurrence.objects.values_list("pk", flat=True))
    assert {row.pk for row in broker.sent} <= stored  # nothing published without its row
    assert Occurrence.objects.filter(schedule=healthy).count() == 1
    if not Occurrence.objects.filter(schedule=tampered).exists():
        parked = reload(tampered)
        assert parked.status == ScheduleStatus.PAUSED
        assert "args" in parked.last_error
