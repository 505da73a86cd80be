"""A partition made for rows that wait in DEFAULT moves them while beats and workers write to
them: no write to a moved row may be lost. (A statement planned before the new partition was
attached saw only DEFAULT and updated nothing once the row had moved: a ``run_scheduler``
race lost its handoff ids that way, issue 39's stop 45.)"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import transaction

from scheduler_app.clock import FakeClock
from scheduler_app.models import Occurrence, OccurrenceState
from scheduler_app.partitions import ddl
from scheduler_app.partitions.maintain import create_ahead
from scheduler_app.partitions.ranges import Interval
from tests.integration.partition_support import (
    JAN,
    occurrence,
    partition_counts,
    write_while_made,
)
from tests.integration.support import START, schedule

pytestmark = pytest.mark.postgres


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("january_dropped_after")
def test_a_write_that_waited_for_the_move_lands_on_the_moved_row() -> None:
    target = schedule(FakeClock(START), kind="interval", rule="1d")
    row = occurrence(target, datetime(2024, 1, 10, 12, tzinfo=UTC), state=OccurrenceState.RUNNING)
    row.save(force_insert=True)
    assert partition_counts()["default"] == 1
    written = write_while_made(
        JAN, lambda: Occurrence.objects.filter(pk=row.pk).update(handoff_id="job-1")
    )
    assert written == (1, 1)  # one row moved; one row written
    assert Occurrence.objects.get(pk=row.pk).handoff_id == "job-1"
    assert partition_counts()["p20240101"] == 1


@pytest.mark.django_db
def test_rows_that_land_between_the_look_and_the_locks_wait_for_the_next_try(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The look before the locks found no row to move; one landed before the locks: the
    partition is not made with the ledger held partly (the next try holds it whole)."""
    target = schedule(FakeClock(START), kind="interval", rule="1d")
    occurrence(target, datetime(2024, 1, 10, 12, tzinfo=UTC)).save(force_insert=True)
    looks = iter([False, True])
    monkeypatch.setattr(ddl, "holds_rows", lambda *args: next(looks))
    with pytest.raises(ddl.RowsLanded), transaction.atomic():
        ddl.create(JAN)
    assert "p20240101" not in partition_counts()
    monkeypatch.undo()
    with transaction.atomic():
        assert ddl.create(JAN) == 1
    assert partition_counts()["p20240101"] == 1


@pytest.mark.django_db
def test_partitions_made_together_take_their_locks_once_in_the_mode_the_move_needs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """January has no row waiting, February has one: one lock, of the whole ledger, for both
    (a stronger lock asked for after January's would wait for statements that wait for the
    DEFAULT January's holds: a deadlock)."""
    target = schedule(FakeClock(START), kind="interval", rule="1d")
    occurrence(target, datetime(2024, 2, 10, 12, tzinfo=UTC)).save(force_insert=True)
    taken: list[bool] = []
    original = ddl.lock

    def recording(cursor: object, parents: list[str], *, whole: bool = False) -> None:
        taken.append(whole)
        original(cursor, parents, whole=whole)

    monkeypatch.setattr(ddl, "lock", recording)
    report = create_ahead(datetime(2024, 1, 10, tzinfo=UTC), count=1, interval=Interval.MONTH)
    assert (report.created, report.moved) == (
        ("scheduler_app_occurrence_p20240101", "scheduler_app_occurrence_p20240201"),
        1,
    )
    assert taken == [True]
    assert partition_counts()["p20240201"] == 1
