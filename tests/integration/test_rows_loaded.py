"""``db.rows.loaded`` reads what ``list(queryset)`` reads, without ``Model.__init__``: every
field, every annotation, and an instance Django treats as loaded from its database."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import F, Value
from django.db.models.functions import Concat

from scheduler_app.clock import FakeClock
from scheduler_app.db.rows import loaded
from scheduler_app.dispatch.claim import claim_due
from scheduler_app.models import Schedule
from tests.integration.support import START, MemoryPublisher, schedule, ticker

pytestmark = pytest.mark.django_db


def test_loaded_equals_the_ordinary_read() -> None:
    clock = FakeClock(START)
    for n in range(3):
        schedule(clock, kind="cron", rule="* * * * *", kwargs={"n": n}, args=[n, "x"])
    query = Schedule.objects.annotate(label=Concat(F("task"), Value("!"))).order_by("id")
    ordinary, fast = list(query), loaded(query)
    assert [row.pk for row in fast] == [row.pk for row in ordinary]
    for one, other in zip(ordinary, fast, strict=True):
        for field in Schedule._meta.concrete_fields:
            assert getattr(other, field.attname) == getattr(one, field.attname), field.name
        assert other.label == one.label
        assert (other._state.adding, other._state.db) == (False, one._state.db)
    assert loaded(Schedule.objects.none()) == []


def test_a_loaded_row_saves_and_reads_its_relations_like_any_other() -> None:
    clock = FakeClock(START)
    made = schedule(clock, kind="cron", rule="* * * * *")
    [row] = loaded(Schedule.objects.filter(pk=made.pk))
    row.objective = "changed"
    row.save(update_fields=["objective"])
    assert Schedule.objects.get(pk=made.pk).objective == "changed"
    assert row.versions.count() == 1


def test_the_claim_reads_the_current_version_and_what_publishing_checks_of_it() -> None:
    """On PostgreSQL the version's stored task, args and kwargs come back only when they
    differ from the schedule's (the outbox then refuses its rows); elsewhere always."""
    clock = FakeClock(START)
    made = schedule(clock, kind="cron", rule="* * * * *", kwargs={"n": 1})
    tampered = schedule(clock, kind="cron", rule="* * * * *", kwargs={"n": 1})
    Schedule.objects.filter(pk=tampered.pk).update(kwargs={"n": 2})  # past the services
    claimed = {row.pk: row for row in claim_due(START + timedelta(minutes=1), 10)}
    assert claimed[made.pk].current_version_id == made.versions.get().pk  # type: ignore[attr-defined]
    agreed = claimed[made.pk].current_definition  # type: ignore[attr-defined]
    differs = claimed[tampered.pk].current_definition  # type: ignore[attr-defined]
    stored = {"task": made.task, "args": [], "kwargs": {"n": 1}}
    if connection.vendor == "postgresql":
        assert agreed == {"objective": made.objective}
        differs = differs["definition"]
    else:
        assert {key: agreed[key] for key in stored} == stored
    assert {key: differs[key] for key in stored} == stored


def test_the_claim_leaves_the_timestamps_the_beat_never_reads_unread() -> None:
    """And the batch still saves them: the advance sets ``updated_at``, ``created_at`` stays."""
    clock = FakeClock(START)
    made = schedule(clock, kind="cron", rule="* * * * *")
    [claimed] = claim_due(START + timedelta(minutes=1), 10)
    assert {"created_at", "updated_at"} <= claimed.get_deferred_fields()
    clock.set(START + timedelta(minutes=1))
    ticker(MemoryPublisher(), clock).tick()
    stored = Schedule.objects.get(pk=made.pk)
    assert (stored.created_at, stored.updated_at) == (made.created_at, clock.now())
    assert stored.last_scheduled_for == START.replace(second=0) + timedelta(minutes=1)
