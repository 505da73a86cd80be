"""Review 22: the schedule's runtime table (multi-table inheritance) and the ORM paths around it."""

from __future__ import annotations

import threading

import pytest
from django.contrib.auth import get_user_model
from django.db import connections, transaction
from django.db.models import F, Q

from scheduler_app.clock import FakeClock
from scheduler_app.models import Schedule, ScheduleRuntime, ScheduleStatus, bulk_create_schedules
from tests.integration.support import START, TASK, reload, schedule

pytestmark = pytest.mark.django_db(transaction=True)


def test_schedules_made_by_bulk_create_schedules_can_be_saved_again() -> None:
    """As with ``bulk_create``, the instances are stored rows afterwards: saving one updates it
    (an instance still "adding" is inserted again, as its id has a default: a duplicate key)."""
    made = [
        Schedule(
            task=TASK,
            kind="cron",
            rule="0 * * * *",
            next_run_at=START,
            created_at=START,
            updated_at=START,
        )
        for _ in range(2)
    ]
    bulk_create_schedules(made)
    made[0].name = "renamed"
    made[0].occurrence_count = 4
    made[0].save()
    stored = reload(made[0])
    assert (stored.name, stored.occurrence_count) == ("renamed", 4)


@pytest.mark.postgres
def test_a_runtime_update_filtered_over_a_nullable_join_runs() -> None:
    """``FOR UPDATE`` of the whole join is refused on the nullable side of an outer join (and
    would lock the owner's user row): the lock is taken on the schedule's two tables alone."""
    owner = get_user_model().objects.create(username="gone", is_active=False)
    owned = schedule(FakeClock(START), kind="interval", rule="60", name="owned")
    Schedule.objects.filter(pk=owned.pk).update(owner=owner)
    orphan = schedule(FakeClock(START), kind="interval", rule="60", name="orphan")
    kept = schedule(FakeClock(START), kind="interval", rule="60", name="kept")
    get_user_model().objects.filter(pk=owner.pk).update(is_active=True)
    paused = Schedule.objects.filter(
        Q(owner__isnull=True) | Q(owner__is_active=False), name="orphan"
    ).update(status=ScheduleStatus.PAUSED, pause_note="no owner")
    assert paused == 1
    assert reload(orphan).status == ScheduleStatus.PAUSED
    assert reload(kept).status == reload(owned).status == ScheduleStatus.ACTIVE


@pytest.mark.postgres
def test_a_definition_update_filtered_on_status_waits_for_a_concurrent_status_change() -> None:
    """``filter(status=active).update(pause_note=...)`` sets a definition field alone, but its
    filter reads the runtime table: run while another transaction completes the schedule
    (the runtime row alone, as the beat's advance does), it must wait and then find the row
    no longer active, not write the note on a completed schedule."""
    target = schedule(FakeClock(START), kind="interval", rule="60")
    done = threading.Event()
    result: list[int] = []

    def note_if_active() -> None:
        try:
            result.append(
                Schedule.objects.filter(pk=target.pk, status=ScheduleStatus.ACTIVE).update(
                    pause_note="noted while active"
                )
            )
            done.set()
        finally:
            connections["default"].close()

    with transaction.atomic():
        ScheduleRuntime.objects.filter(pk=target.pk).update(
            status=ScheduleStatus.COMPLETED, next_run_at=None
        )
        other = threading.Thread(target=note_if_active)
        other.start()
        assert not done.wait(0.5), "the compare-and-set did not wait for the runtime's lock"
    other.join(10)
    assert result == [0]
    stored = reload(target)
    assert (stored.status, stored.pause_note) == (ScheduleStatus.COMPLETED, "")


def test_a_runtime_update_with_an_expression_counts_its_rows() -> None:
    clock = FakeClock(START)
    made = [schedule(clock, kind="interval", rule="60", name=f"s{n}") for n in range(3)]
    rows = Schedule.objects.filter(name__in=["s0", "s1"], status=ScheduleStatus.ACTIVE)
    assert rows.update(occurrence_count=F("occurrence_count") + 2, pause_note="two") == 2
    stored = [reload(row) for row in made]
    assert [row.occurrence_count for row in stored] == [2, 2, 0]
    assert [row.pause_note for row in stored] == ["two", "two", ""]


def test_a_runtime_update_of_a_values_queryset_runs() -> None:
    made = schedule(FakeClock(START), kind="interval", rule="60")
    rows = Schedule.objects.filter(pk=made.pk).values("pk")
    assert rows.update(status=ScheduleStatus.PAUSED, pause_note="values") == 1
    assert reload(made).status == ScheduleStatus.PAUSED
