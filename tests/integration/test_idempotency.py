"""Idempotency keys and occurrence ids: derived from the schedule id and the UTC slot only."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from scheduler_app.clock import FakeClock
from scheduler_app.definition.schedule import (
    idempotency_key,
    occurrence_id,
    timing_for,
    version_id,
)
from scheduler_app.dispatch.materialize import plan_schedule
from scheduler_app.models import Occurrence, Schedule
from scheduler_app.services import update_schedule
from tests.integration.support import START, MemoryPublisher, reload, rows, schedule, ticker

SCHEDULE_ID = uuid.UUID("0b5f3b4e-8a59-4a5e-9a8a-2c6e3b1f0d11")
SLOT = datetime(2026, 3, 29, 1, 0, tzinfo=UTC)


def test_the_key_is_the_schedule_id_and_the_utc_slot() -> None:
    key = idempotency_key(SCHEDULE_ID, SLOT)
    assert key == f"{SCHEDULE_ID}:2026-03-29T01:00:00.000000Z"
    assert idempotency_key(str(SCHEDULE_ID), SLOT) == key


def test_the_same_instant_in_any_zone_gives_the_same_key_and_id() -> None:
    riga = SLOT.astimezone(ZoneInfo("Europe/Riga"))
    assert idempotency_key(SCHEDULE_ID, riga) == idempotency_key(SCHEDULE_ID, SLOT)
    assert occurrence_id(idempotency_key(SCHEDULE_ID, riga)) == occurrence_id(
        idempotency_key(SCHEDULE_ID, SLOT)
    )


def test_the_two_local_times_of_a_night_the_clocks_go_back_give_two_keys() -> None:
    """03:30 happens twice in Riga on 2026-10-25; the two differ only by ``fold``, and Python
    holds them equal (same hash): a key remembered per datetime gave both the first's."""
    riga = ZoneInfo("Europe/Riga")
    first = datetime(2026, 10, 25, 3, 30, tzinfo=riga)
    second = first.replace(fold=1)
    assert first == second  # why a cache keyed by the local time would mix them up
    keys = [idempotency_key(SCHEDULE_ID, when) for when in (first, second, second, first)]
    assert keys[0].endswith("2026-10-25T00:30:00.000000Z")
    assert keys[1].endswith("2026-10-25T01:30:00.000000Z")
    assert keys == [keys[0], keys[1], keys[1], keys[0]]


def test_keys_and_ids_are_stable_and_distinct() -> None:
    key = idempotency_key(SCHEDULE_ID, SLOT)
    assert {occurrence_id(key) for _ in range(5)} == {occurrence_id(key)}
    others = {
        idempotency_key(uuid.uuid4(), SLOT),
        idempotency_key(SCHEDULE_ID, SLOT + timedelta(microseconds=1)),
        idempotency_key(SCHEDULE_ID, SLOT + timedelta(hours=1)),
    }
    assert key not in others
    assert occurrence_id(key) not in {occurrence_id(other) for other in others}


def test_ids_are_the_uuid5_every_earlier_release_stored() -> None:
    """Rows already stored carry these ids: a faster way to compute them must give the same
    (uuid5 of the project's namespace), or a beat after an upgrade would plan a stored slot
    again under a new id."""
    key = idempotency_key(SCHEDULE_ID, SLOT)
    assert occurrence_id(key) == uuid.UUID("3cb7c181-2151-5aac-ad6c-7a0e8e778c5b")
    assert version_id(SCHEDULE_ID, 3) == uuid.UUID("d9cb322c-e199-5257-9646-c18512b57d0f")
    assert occurrence_id("manual:\u00e9\u2713") == uuid.UUID("88bc49c7-c6b9-526c-8ee5-5d35d4dd88ac")
    namespace = uuid.UUID("6f1d3c1e-1b7e-4d55-9a55-2f5b8f0a7c11")
    for name in (key, "", "x" * 5000, f"{uuid.uuid4()}:2030-01-01T00:00:00.000000Z"):
        assert occurrence_id(name) == uuid.uuid5(namespace, name)
        assert occurrence_id(name).version == 5


@pytest.mark.django_db
def test_stored_rows_use_the_derived_key_and_id_across_versions() -> None:
    clock = FakeClock(START)
    target = schedule(clock, kind="cron", rule="0 * * * *")
    beat = ticker(MemoryPublisher(), clock)
    clock.set(datetime(2026, 1, 5, 1, 0, 1, tzinfo=UTC))
    beat.tick()
    update_schedule(target.id, expected_version=1, clock=clock, kwargs={"v": 2})
    clock.set(datetime(2026, 1, 5, 2, 0, 1, tzinfo=UTC))
    beat.tick()
    for row in rows(target):
        assert row.idempotency_key == idempotency_key(target.id, row.scheduled_for)
        assert row.id == occurrence_id(row.idempotency_key)
    assert [r.schedule_version.version for r in rows(target)] == [1, 2]


@pytest.mark.django_db
def test_two_beats_planning_the_same_slot_store_one_row() -> None:
    clock = FakeClock(START)
    target = schedule(clock, kind="cron", rule="0 * * * *")
    now = datetime(2026, 1, 5, 1, 0, 1, tzinfo=UTC)
    first, second = plan_schedule(reload(target), now), plan_schedule(reload(target), now)
    assert [r.id for r in first] == [r.id for r in second]
    Occurrence.objects.bulk_create(first, ignore_conflicts=True)
    Occurrence.objects.bulk_create(second, ignore_conflicts=True)
    assert Occurrence.objects.count() == 1


def test_the_timing_of_the_second_0330_of_a_fall_back_night_is_its_own() -> None:
    """``timing_for`` of an unsaved schedule (as the admin's preview builds one) whose anchor
    is the second 03:30 of a night the clocks go back: the remembered timings are keyed by the
    UTC instant, not the local time Python holds equal to the first 03:30."""
    riga = ZoneInfo("Europe/Riga")
    first = datetime(2026, 10, 25, 3, 30, tzinfo=riga)
    second = first.replace(fold=1)
    fields = {"kind": "interval", "rule": "7200", "timezone": "Europe/Riga"}
    assert timing_for(Schedule(anchor=first, **fields)).rule.anchor == first.astimezone(UTC)
    assert timing_for(Schedule(anchor=second, **fields)).rule.anchor == second.astimezone(UTC)
    starts = [
        timing_for(Schedule(anchor=START, starts_at=when, **fields)).starts_at
        for when in (first, second)
    ]
    assert starts == [first.astimezone(UTC), second.astimezone(UTC)]
