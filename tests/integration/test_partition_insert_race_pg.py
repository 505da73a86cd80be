"""The beat inserts a slot's row while a new month's partition is attached: the insert that
routed its row to DEFAULT before the attach commits is refused by DEFAULT's new partition
constraint. That refusal is the race's, not the schedule's: no schedule may be parked for it,
and no slot lost (review 14 left it as a note; this test attacks it)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from django.db import IntegrityError, connection, transaction

from scheduler_app.clock import FakeClock
from scheduler_app.dispatch import materialize
from scheduler_app.dispatch.materialize import materialize_batch
from scheduler_app.models import Occurrence, Schedule, ScheduleStatus
from scheduler_app.partitions import ddl
from tests.integration.partition_support import (
    JAN,
    occurrence,
    partition_counts,
    write_while_made,
)
from tests.integration.support import reload, schedule

pytestmark = pytest.mark.postgres
NOW = datetime(2024, 1, 10, 12, tzinfo=UTC)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("january_dropped_after")
def test_a_slot_inserted_while_its_partition_is_attached_is_not_parked_nor_lost(
    caplog: pytest.LogCaptureFixture,
) -> None:
    target = schedule(FakeClock(NOW - timedelta(minutes=1)), kind="interval", rule="1m")
    assert "p20240101" not in partition_counts()
    write_while_made(JAN, lambda: materialize_batch(NOW, 100))  # nothing to move
    refused = [r for r in caplog.records if getattr(r, "action", "") == "materialize.batch_refused"]
    assert refused and "partition constraint" in refused[0].error  # the race really ran
    stored = reload(target)
    assert stored.status == ScheduleStatus.ACTIVE, stored.last_error
    made = sorted(
        Occurrence.objects.filter(schedule=target).values_list("scheduled_for", flat=True)
    )
    assert made == [NOW - timedelta(minutes=1), NOW], made  # every due slot, in its partition
    counts = partition_counts()
    assert (counts["p20240101"], counts["default"]) == (2, 0)


def partition_refusal(target: Schedule) -> IntegrityError:
    """A real ``violates partition constraint`` of the ledger's DEFAULT, as Django raises it:
    a row of January copied into DEFAULT once January has its partition."""
    ddl.create(JAN)
    row = occurrence(target, NOW)
    row.save(force_insert=True)
    with connection.cursor() as cursor:
        try:
            with transaction.atomic():
                cursor.execute(
                    f"INSERT INTO {ddl.default_name()} SELECT * FROM {ddl.table()} WHERE id = %s",
                    [row.pk],
                )
        except IntegrityError as exc:
            row.delete()
            return exc
    raise AssertionError("PostgreSQL took a row outside DEFAULT's bound")


@pytest.mark.django_db  # the partition it makes is rolled back with the test
def test_a_partition_refusal_schedule_by_schedule_parks_nothing_and_keeps_the_slot_due(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The race again while the batch is retried schedule by schedule: that schedule is left
    as stored (active, its slot still due), the others go on; the next tick makes its slot."""
    clock = FakeClock(NOW - timedelta(minutes=1))
    raced, other = (schedule(clock, kind="interval", rule="1m") for _ in range(2))
    refusal = partition_refusal(other)
    real_insert = materialize.insert_occurrences

    def insert(rows: list[Occurrence]) -> set[object]:
        if any(row.schedule_id == raced.pk for row in rows):
            raise refusal
        return real_insert(rows)

    monkeypatch.setattr(materialize, "insert_occurrences", insert)
    materialize_batch(NOW, 100)
    assert (reload(raced).status, reload(raced).next_run_at) == (
        ScheduleStatus.ACTIVE,
        NOW - timedelta(minutes=1),
    )
    assert Occurrence.objects.filter(schedule=raced).count() == 0
    assert Occurrence.objects.filter(schedule=other).count() == 2
    monkeypatch.undo()
    materialize_batch(NOW, 100)
    assert Occurrence.objects.filter(schedule=raced).count() == 2


def refused(code: str, constraint: str | None, table: str, *, driver: str) -> IntegrityError:
    """Django's ``IntegrityError`` over a driver's error: psycopg 3 names the code
    ``sqlstate``, psycopg2 ``pgcode``; both carry ``diag``."""
    diag = SimpleNamespace(constraint_name=constraint, table_name=table)
    cause = type("DriverError", (Exception,), {driver: code, "diag": diag})()
    error = IntegrityError("new row violates a check")
    error.__cause__ = cause
    return error


def test_only_defaults_partition_bound_is_taken_for_the_race() -> None:
    """A check constraint of the table (it names itself), a trigger's check violation or a
    bound of another table is the row's fault: it parks."""
    default = ddl.default_name()
    assert not ddl.moved_partition(refused("23514", "occ_state_check", default, driver="sqlstate"))
    assert ddl.moved_partition(refused("23514", None, default, driver="sqlstate"))
    # "no partition of relation ... found for row"
    assert not ddl.moved_partition(refused("23514", None, ddl.table(), driver="sqlstate"))
    assert not ddl.moved_partition(ValueError("bad value"))


def test_the_race_is_told_from_psycopg2s_error_too() -> None:
    default = ddl.default_name()
    assert ddl.moved_partition(refused("23514", None, default, driver="pgcode"))
    assert not ddl.moved_partition(refused("23505", None, default, driver="pgcode"))
