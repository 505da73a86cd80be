"""The beat's claim reads only ``READ_COLUMNS`` of a schedule (issue 39's hot path): every other
column is left unread, and a tick over schedules that use every policy the beat applies never
reads one of them (each read would cost a query per schedule, in every burst)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from celery import Celery

from scheduler_app import events
from scheduler_app.clock import FakeClock
from scheduler_app.dispatch.claim import READ_COLUMNS, UNREAD_DEFINITION, claim_due
from scheduler_app.models import SEMANTIC_FIELDS, Occurrence, Schedule
from scheduler_app.publishing import CeleryPublisher
from scheduler_app.safety.killswitch import set_kill_switch
from scheduler_app.ticker import Ticker
from tests.integration.support import START, TASK, MemoryPublisher, schedule, ticker

pytestmark = pytest.mark.django_db

EVERY_POLICY: list[dict[str, Any]] = [
    {  # timing in a zone with DST, a window, holidays, bounds; deadline, jitter, catch-up
        "kind": "cron",
        "rule": "*/5 * * * *",
        "timezone": "Europe/Riga",
        "dst_nonexistent": "shift",
        "dst_ambiguous": "first",
        "active_window": "MON-FRI 00:00-23:00",
        "window_policy": "skip",
        "exclude_holidays": "lv",
        "ends_at": START + timedelta(days=30),
        "starts_at": START,
        "max_count": 1000,
        "misfire_policy": "catch_up",
        "max_lateness": 60,
        "catch_up_window": 7200,
        "catch_up_limit": 3,
        "deadline": 600,
        "jitter": 30,
        "args": [1, "x"],
        "kwargs": {"n": 1},
        "options": {"queue": "reports", "priority": 5},
        "tenant": "acme",
        "lateness_class": "maintenance",
        "max_per_day": 50,
    },
    {"kind": "cron", "rule": "* * * * *", "misfire_policy": "fire_once", "overlap_policy": "skip"},
    {"kind": "cron", "rule": "* * * * *", "overlap_policy": "buffer_one"},
    {"kind": "cron", "rule": "* * * * *", "overlap_policy": "cancel_previous", "mode": "shadow"},
    {"kind": "interval", "rule": "60s", "interval_mode": "fixed_delay"},
    {"kind": "interval", "rule": "90s", "starts_at": START, "misfire_policy": "skip"},
    {"kind": "rrule", "rule": "FREQ=MINUTELY;INTERVAL=2", "timezone": "America/New_York"},
    {"kind": "once", "rule": (START + timedelta(minutes=3)).isoformat()},
]


def test_the_claim_reads_its_columns_and_no_other() -> None:
    schedule(FakeClock(START), kind="cron", rule="* * * * *")
    [claimed] = claim_due(START + timedelta(minutes=1), 10)
    every = {field.attname for field in Schedule._meta.concrete_fields}
    assert set(READ_COLUMNS) <= every
    assert set(UNREAD_DEFINITION) < set(SEMANTIC_FIELDS)  # each name a part of the definition
    assert claimed.get_deferred_fields() == every - set(READ_COLUMNS)


def test_a_tick_of_every_policy_reads_no_column_the_claim_left_out(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    clock = FakeClock(START)
    made = [schedule(clock, **fields) for fields in EVERY_POLICY]
    read: list[tuple[str, list[str]]] = []
    refresh = Schedule.refresh_from_db

    def recorded(self: Schedule, *args: Any, fields: Any = None, **kwargs: Any) -> None:
        read.append((self.task, list(fields or [])))
        refresh(self, *args, fields=fields, **kwargs)

    monkeypatch.setattr(Schedule, "refresh_from_db", recorded)
    # A real publisher: its messages read the routing options (a memory broker, no server).
    app = Celery("claim-columns", broker="memory://", set_as_current=False)
    beat = Ticker(CeleryPublisher(app, clock=clock), clock=clock)
    for minutes in (1, 2, 4, 180, 181):  # on time, then three hours late (misfire policies)
        clock.set(START + timedelta(minutes=minutes))
        beat.tick()
    settings.SCHEDULER_APPROVAL_TASKS = (made[0].task,)  # the screen reads the approved version
    clock.set(START + timedelta(minutes=182))
    beat.tick()
    app.close()
    assert read == []
    made_rows = Occurrence.objects.filter(schedule__in=made)
    assert {row.schedule_id for row in made_rows} == {row.pk for row in made}


def test_a_receiver_naming_the_schedule_of_a_refused_row_costs_no_query_per_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rows the screen refuses in the tick that made them (a kill switch here) carry the
    claimed schedule to ``occurrence_finished``; a project's receiver (paging, chat) that
    names it reads its name or key (review 19)."""
    clock = FakeClock(START)
    made = [schedule(clock, kind="cron", rule="* * * * *", name=f"report {n}") for n in range(5)]
    set_kill_switch("task", TASK, enabled=True, reason="incident", now=START, by="ops")
    named: list[str] = []

    def page(sender: Any, occurrence: Occurrence, **_: Any) -> None:
        named.append(str(occurrence.schedule))

    read: list[list[str]] = []
    refresh = Schedule.refresh_from_db

    def recorded(self: Schedule, *args: Any, fields: Any = None, **kwargs: Any) -> None:
        read.append(list(fields or []))
        refresh(self, *args, fields=fields, **kwargs)

    monkeypatch.setattr(Schedule, "refresh_from_db", recorded)
    events.occurrence_finished.connect(page)
    try:
        clock.set(START + timedelta(minutes=1))
        ticker(MemoryPublisher(), clock).tick()
    finally:
        events.occurrence_finished.disconnect(page)
    assert sorted(named) == sorted(row.name for row in made)
    assert read == []
