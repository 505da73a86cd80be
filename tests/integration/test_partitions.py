"""The partitioned ledger kept by the beat: partitions created ahead (rows moved out of
DEFAULT), retention by dropping whole partitions (keepers kept), the command, the checks."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import OperationalError, connection

from scheduler_app.admin.paging import _estimate
from scheduler_app.checks import partition_errors
from scheduler_app.clock import FakeClock
from scheduler_app.conf import SchedulerSettings
from scheduler_app.models import FINAL_STATES, Occurrence, OccurrenceAttempt, OccurrenceState
from scheduler_app.monitoring.retention import prune
from scheduler_app.partitions import ddl, maintain, retire
from scheduler_app.partitions.drop import drop_before
from scheduler_app.partitions.maintain import PartitionKeeper, create_ahead
from scheduler_app.partitions.ranges import Interval
from tests.integration.partition_support import TABLE, occurrence, partition_counts
from tests.integration.support import START, MemoryPublisher, schedule, ticker

pytestmark = pytest.mark.django_db
JAN = datetime(2024, 1, 10, 12, 0, tzinfo=UTC)
"""Older than any partition the test database was made with (those start at today's month)."""
DAY = timedelta(days=1)


def days(first: datetime, count: int) -> list[datetime]:
    return [first + DAY * n for n in range(count)]


@pytest.mark.postgres
def test_partitions_ahead_are_created_once_and_take_their_rows_out_of_default() -> None:
    target = schedule(FakeClock(START), kind="interval", rule="1d")
    Occurrence.objects.bulk_create(occurrence(target, slot) for slot in days(JAN, 45))
    assert partition_counts()["default"] == 45

    report = create_ahead(JAN, count=2, interval=Interval.MONTH)

    assert report.created == tuple(f"{TABLE}_p2024{m}01" for m in ("01", "02", "03"))
    assert report.moved == 45
    counts = partition_counts()
    assert (counts["p20240101"], counts["p20240201"], counts["default"]) == (22, 23, 0)
    assert Occurrence.objects.count() == 45
    assert create_ahead(JAN, count=2, interval=Interval.MONTH).created == ()
    # Weeks after months: only the days no partition holds yet.
    weekly = create_ahead(datetime(2024, 3, 28, tzinfo=UTC), count=1, interval=Interval.WEEK)
    assert weekly.created == (f"{TABLE}_p20240401",)


@pytest.mark.postgres
def test_retention_drops_old_partitions_whole_and_keeps_what_it_must() -> None:
    clock = FakeClock(START)
    target, quiet = (schedule(clock, kind="interval", rule="1d") for _ in range(2))
    rows = [occurrence(target, slot) for slot in days(JAN, 60)]
    rows[3].state, rows[3].finished_at = OccurrenceState.RUNNING, None
    rows[4].finished_at = JAN + DAY * 200  # finished after the cut-off
    last_of_quiet = occurrence(quiet, JAN)
    Occurrence.objects.bulk_create([*rows, last_of_quiet])
    OccurrenceAttempt.objects.bulk_create(
        OccurrenceAttempt(
            occurrence=row, scheduled_for=row.scheduled_for, number=1, started_at=row.scheduled_for
        )
        for row in (rows[0], rows[3], last_of_quiet)
    )
    create_ahead(JAN, count=2, interval=Interval.MONTH)
    cutoff = datetime(2024, 3, 1, tzinfo=UTC)

    report = drop_before(cutoff, FINAL_STATES)

    assert report.partitions == (f"{TABLE}_p20240101", f"{TABLE}_p20240201")
    assert (report.rows, report.kept, report.attempts) == (49, 3, 1)
    kept = {row.pk for row in Occurrence.objects.filter(scheduled_for__lt=cutoff)}
    assert kept == {rows[3].pk, rows[4].pk, last_of_quiet.pk}
    assert partition_counts()["default"] == 3
    assert OccurrenceAttempt.objects.count() == 2  # the keepers' attempts stay
    assert Occurrence.objects.filter(scheduled_for__gte=cutoff).count() == 9
    assert retire.retired_tables() == []


@pytest.mark.postgres
def test_prune_drops_partitions_then_deletes_the_rest_in_batches() -> None:
    target = schedule(FakeClock(START), kind="interval", rule="1d")
    Occurrence.objects.bulk_create(occurrence(target, slot) for slot in days(JAN, 60))
    create_ahead(JAN, count=0, interval=Interval.MONTH)  # January only: the rest in DEFAULT
    report = prune(timedelta(days=1), datetime(2024, 2, 15, tzinfo=UTC), batch=5)
    assert report.partitions == (f"{TABLE}_p20240101",)
    assert report.deleted == 22 + 13 and report.batches == 3
    assert Occurrence.objects.count() == 25


def refusing(message: str) -> Callable[..., int]:
    """A stand-in for ``ddl.create`` that fails as PostgreSQL would."""

    def refuse(*args: object, **kwargs: object) -> int:
        raise OperationalError(message)

    return refuse


@pytest.mark.postgres
def test_a_failure_is_logged_and_tried_again_later(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(ddl, "create", refusing("canceling statement due to lock timeout"))
    keeper = PartitionKeeper(SchedulerSettings(PARTITIONS_AHEAD=1))
    with caplog.at_level(logging.WARNING, logger="scheduler_app.partitions"):
        assert keeper.maybe_run(JAN) is None
    [record] = [r for r in caplog.records if getattr(r, "action", "") == "partitions.failed"]
    assert "lock timeout" in record.error  # type: ignore[attr-defined]
    monkeypatch.undo()
    assert keeper.maybe_run(JAN + maintain.RETRY / 2) is None  # not yet
    report = keeper.maybe_run(JAN + maintain.RETRY)
    assert report is not None and len(report.created) == 2
    assert keeper.maybe_run(JAN + maintain.RETRY + timedelta(minutes=59)) is None


@pytest.mark.postgres
def test_the_beat_ticks_on_when_partition_maintenance_fails(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(ddl, "create", refusing("permission denied for schema public"))
    clock = FakeClock(START)
    schedule(clock, kind="interval", rule="60")
    clock.advance(120)
    with caplog.at_level(logging.WARNING, logger="scheduler_app.partitions"):
        result = ticker(MemoryPublisher(), clock).tick()
    assert result.created == 3 and result.published == 3
    assert [r for r in caplog.records if getattr(r, "action", "") == "partitions.failed"]
    assert partition_counts()["default"] == 3  # the rows wait in DEFAULT for their partition


@pytest.mark.postgres
def test_the_command_lists_creates_and_drops() -> None:
    target = schedule(FakeClock(START), kind="interval", rule="1d")
    Occurrence.objects.bulk_create(occurrence(target, slot) for slot in days(JAN, 45))
    create_ahead(JAN, count=1, interval=Interval.MONTH)
    out = StringIO()
    call_command("scheduler_partitions", stdout=out)
    assert f"{TABLE}_p20240101" in out.getvalue() and "DEFAULT" in out.getvalue()
    call_command("scheduler_partitions", "--create-ahead", "1", stdout=out)
    assert "created 0 partition(s)" in out.getvalue()  # today's month exists since migrating
    call_command("scheduler_partitions", "--drop-before", "2024-02-01", stdout=out)
    assert "dropped 1 partition(s) before 2024-02-01 00:00 UTC: 22 occurrence(s)" in out.getvalue()
    with pytest.raises(CommandError, match="'soon' is not a date"):
        call_command("scheduler_partitions", "--drop-before", "soon")
    with pytest.raises(CommandError, match="is in the future"):
        call_command("scheduler_partitions", "--drop-before", "2999-01-01")
    with pytest.raises(CommandError, match="from 0 to 1000"):
        call_command("scheduler_partitions", "--create-ahead", "-1")


@pytest.mark.postgres
def test_the_admin_estimate_adds_up_the_partitions() -> None:
    target = schedule(FakeClock(START), kind="interval", rule="1d")
    Occurrence.objects.bulk_create(occurrence(target, slot) for slot in days(JAN, 45))
    create_ahead(JAN, count=1, interval=Interval.MONTH)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {TABLE}")
    assert _estimate("default", TABLE) == 45


def test_on_sqlite_the_command_says_what_partitions_need() -> None:
    if connection.vendor == "postgresql":
        pytest.skip("SQLite only")
    with pytest.raises(CommandError, match="partitions need PostgreSQL and migration 0014"):
        call_command("scheduler_partitions")
    assert create_ahead(JAN, count=3, interval=Interval.MONTH) == maintain.CreateReport()


def test_the_check_refuses_unknown_partition_settings() -> None:
    assert partition_errors("month", 3) == []
    errors = partition_errors("year", -1)
    assert [e.id for e in errors] == ["scheduler_app.E007"] * 2
    assert "'year', not one of 'month', 'week', 'day'" in errors[0].msg
    assert partition_errors("day", True)[0].id == "scheduler_app.E007"


@pytest.mark.postgres
@pytest.mark.parametrize("skip", [False, True], ids=["index read", "skip scan"])
def test_the_latest_row_of_each_schedule_is_kept_by_either_search(skip: bool) -> None:
    clock = FakeClock(START)
    moved_on, stopped, far = (schedule(clock, kind="interval", rule="1d") for _ in range(3))
    rows = {
        target: [occurrence(target, slot) for slot in days(JAN, 5)]
        for target in (moved_on, stopped, far)
    }
    later = [
        occurrence(moved_on, datetime(2024, 4, 1, tzinfo=UTC)),
        occurrence(far, datetime(2099, 1, 1, tzinfo=UTC)),  # no partition: in DEFAULT
    ]
    Occurrence.objects.bulk_create([*(row for each in rows.values() for row in each), *later])
    create_ahead(JAN, count=0, interval=Interval.MONTH)
    [partition] = [p for p in ddl.partitions() if p.name == f"{TABLE}_p20240101"]
    assert partition.range is not None

    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id FROM ({retire.keepers_sql(partition.name, skip=skip)}) k",
            [list(FINAL_STATES), datetime(2024, 3, 1, tzinfo=UTC), partition.range.end],
        )
        kept = {pk for (pk,) in cursor.fetchall()}

    assert kept == {rows[stopped][-1].pk}


@pytest.mark.postgres
def test_the_skip_scan_is_chosen_for_many_rows_per_schedule() -> None:
    for _ in range(3):
        schedule(FakeClock(START), kind="interval", rule="1d")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE scheduler_app_schedule")

        def pays(rows: int) -> bool:
            return retire.skip_scan_pays(
                cursor, ddl.Partition(name="p", range=None, estimated_rows=rows)
            )

        assert not pays(-1)  # never analysed: the index read, whatever its size
        assert not pays(retire.SKIP_SCAN_ROWS_PER_SCHEDULE * 3)
        assert pays(retire.SKIP_SCAN_ROWS_PER_SCHEDULE * 3 + 1)
