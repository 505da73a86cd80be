"""Retiring a partition while its rows change (PostgreSQL): the keepers are found before the
ledger is locked, so rows replayed, finished again or inserted between that read and the lock
must still be kept; the trigger that notes them goes with the partition."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import OperationalError, connection

from scheduler_app.clock import FakeClock
from scheduler_app.models import FINAL_STATES, Occurrence, OccurrenceState
from scheduler_app.partitions import ddl, retire
from scheduler_app.partitions.drop import drop_before
from scheduler_app.partitions.maintain import create_ahead
from scheduler_app.partitions.ranges import Interval
from scheduler_app.services.replay import replay_occurrence
from tests.integration.partition_support import (
    ATTEMPTS,
    TABLE,
    fetch,
    occurrence,
    partition_counts,
)
from tests.integration.support import START, schedule

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]
JAN = datetime(2024, 1, 10, 12, 0, tzinfo=UTC)
CUTOFF = datetime(2024, 3, 1, tzinfo=UTC)
NOW = datetime(2024, 6, 1, tzinfo=UTC)
DAY = timedelta(days=1)


@pytest.fixture(autouse=True)
def no_partitions_left() -> Iterator[None]:
    """The partitions these tests make are committed: take them out again, whatever happens."""
    yield
    with connection.cursor() as cursor:
        for parent in (TABLE, ATTEMPTS):
            for partition in ddl.partitions(parent):
                if partition.range is not None and partition.range.start.year == 2024:
                    cursor.execute(f"ALTER TABLE {parent} DETACH PARTITION {partition.name}")
                    cursor.execute(f"DROP TABLE {partition.name}")
        for (name,) in fetch(
            "SELECT relname FROM pg_class WHERE relkind = 'r' AND "
            "(relname LIKE %s OR relname LIKE %s)",
            [f"{TABLE}%\\_retired\\_%", f"{TABLE}\\_%\\_changed"],
        ):
            cursor.execute(f"DROP TABLE {name}")


def in_another_connection(work: Callable[[], object]) -> None:
    """Run ``work`` in a thread, on its own connection, committed when it returns."""
    failures: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # re-raised in the test's thread
            failures.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if failures:
        raise failures[0]


def january() -> list[Occurrence]:
    """Twenty finished rows of one schedule in January (its own partition), none the latest
    (a row in April is)."""
    target = schedule(FakeClock(START), kind="interval", rule="1d")
    rows = [occurrence(target, JAN + DAY * n) for n in range(20)]
    rows[2].state = OccurrenceState.FAILED
    Occurrence.objects.bulk_create([*rows, occurrence(target, datetime(2024, 4, 1, tzinfo=UTC))])
    create_ahead(JAN, count=0, interval=Interval.MONTH)
    return rows


def test_rows_changed_between_the_read_and_the_lock_are_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rows = january()
    failed, succeeded = rows[2], rows[5]
    late = occurrence(failed.schedule, JAN + DAY * 20 + timedelta(hours=6))
    late.state, late.finished_at = OccurrenceState.SKIPPED, NOW
    found_before: list[set[object]] = []
    find_keepers = retire.find_keepers

    def then_change_rows(*args: Any) -> None:
        find_keepers(*args)
        found_before.append({pk for (pk,) in fetch("SELECT id FROM partition_found")})

        def change() -> None:
            # Replayed and run to the end again (final, finished after the cut-off) ...
            replay_occurrence(failed.pk, clock=FakeClock(NOW))
            Occurrence.objects.filter(pk=failed.pk).update(
                state=OccurrenceState.SUCCEEDED, finished_at=NOW
            )
            # ... replayed and not run yet (open), and a row inserted into the partition.
            replay_occurrence(succeeded.pk, force=True, clock=FakeClock(NOW))
            late.save(force_insert=True)

        in_another_connection(change)

    monkeypatch.setattr(retire, "find_keepers", then_change_rows)

    report = drop_before(CUTOFF, FINAL_STATES)

    assert report.partitions == (f"{TABLE}_p20240101",)
    assert found_before == [set()]  # at the read, all of January could go
    kept = set(Occurrence.objects.filter(scheduled_for__lt=CUTOFF).values_list("pk", flat=True))
    assert kept == {failed.pk, succeeded.pk, late.pk}
    assert (report.rows, report.kept) == (18, 3)
    assert Occurrence.objects.get(pk=failed.pk).state == OccurrenceState.SUCCEEDED
    assert partition_counts()["default"] == 4  # the three and April's
    assert fetch("SELECT count(*) FROM pg_trigger WHERE tgname = %s", [retire.TRIGGER]) == [(0,)]


def test_a_retire_that_failed_after_the_watch_is_done_again_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rows = january()
    retire_once = retire.retire

    def lock_not_granted(*args: object) -> int:
        raise OperationalError("canceling statement due to lock timeout")

    monkeypatch.setattr(retire, "retire", lock_not_granted)
    with pytest.raises(OperationalError):
        drop_before(CUTOFF, FINAL_STATES)
    assert fetch("SELECT count(*) FROM pg_trigger WHERE tgname = %s", [retire.TRIGGER]) == [(1,)]
    Occurrence.objects.filter(pk=rows[7].pk).update(state=OccurrenceState.RETRYING)
    monkeypatch.setattr(retire, "retire", retire_once)

    report = drop_before(CUTOFF, FINAL_STATES)

    assert (report.rows, report.kept) == (19, 1)
    assert list(Occurrence.objects.filter(scheduled_for__lt=CUTOFF)) == [rows[7]]
    assert fetch("SELECT count(*) FROM pg_trigger WHERE tgname = %s", [retire.TRIGGER]) == [(0,)]
    assert retire.retired_tables() == []
