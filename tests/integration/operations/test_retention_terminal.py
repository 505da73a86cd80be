"""Retention removes every terminal row, skipped at creation included (issue 35).

Rows the overlap policy or shadow mode skip are written final with no ``finished_at``; both
the batched delete and the partition drop must take them (only each schedule's latest row
stays), not keep them for ever (the batched path) or copy them into DEFAULT (the drop).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from scheduler_app.clock import FakeClock
from scheduler_app.models import FINAL_STATES, Occurrence, OccurrenceState, Schedule
from scheduler_app.monitoring.retention import prune
from scheduler_app.partitions.maintain import create_ahead
from scheduler_app.partitions.ranges import Interval
from tests.integration.partition_support import TABLE, occurrence, partition_counts
from tests.integration.support import START, MemoryPublisher, schedule, ticker

pytestmark = pytest.mark.django_db
DAY = timedelta(days=1)
JAN = datetime(2024, 1, 3, 0, 0, 10, tzinfo=UTC)
"""Older than any partition the test database was made with (those start at today's month)."""

TERMINAL = [
    (OccurrenceState.SUCCEEDED, ""),
    (OccurrenceState.FAILED, "error"),
    (OccurrenceState.FAILED, "lost_retry"),
    (OccurrenceState.EXPIRED, "deadline"),
    (OccurrenceState.SKIPPED, "overlap"),
    (OccurrenceState.SKIPPED, "shadow"),
    (OccurrenceState.SKIPPED, "not_approved"),
    (OccurrenceState.SKIPPED, "not_its_version"),
    (OccurrenceState.SKIPPED, "unpublishable"),
    (OccurrenceState.SKIPPED, "kill_switch"),
    (OccurrenceState.CANCELLED, "superseded"),
    (OccurrenceState.CANCELLED, "schedule_cancelled"),
    (OccurrenceState.CANCELLED, "revoked"),
]
"""Every final state, with the reasons the code writes; skipped ones both as written at
creation (no ``finished_at``) and as ended later (with one)."""


def ticked(clock: FakeClock, days: int, **fields: object) -> Schedule:
    """A daily schedule ticked by the real beat for ``days`` days."""
    target = schedule(clock, kind="interval", rule="1d", **fields)
    broker = MemoryPublisher()
    for _ in range(days):
        ticker(broker, clock).tick()
        clock.advance(DAY)
    return target


def fill(clock: FakeClock) -> dict[str, Schedule]:
    """Terminal rows of every kind, a day apart, starting at ``clock``'s instant; each schedule
    then gets one open-free latest row, the one retention keeps."""
    first = clock.now()
    made = {
        # Shadow mode, the documented migration path: every row skipped at creation.
        "shadow": ticked(FakeClock(first), 6, mode="shadow"),
        # Overlap ``skip``: the first run never ends, the next ones are skipped at creation.
        "overlap": ticked(FakeClock(first), 6, overlap_policy="skip"),
    }
    Occurrence.objects.filter(schedule=made["overlap"], state__in=open_states()).update(
        state=OccurrenceState.FAILED, reason="lost_retry", finished_at=first + timedelta(hours=1)
    )
    written = schedule(clock, kind="interval", rule="1d")
    rows = []
    for n, (state, reason) in enumerate(TERMINAL):
        slot = first + DAY * n
        rows.append(occurrence(written, slot, state=state, reason=reason))
        if state == OccurrenceState.SKIPPED:  # the same, written final at creation
            rows.append(
                occurrence(
                    written, slot + timedelta(hours=1), state=state, reason=reason, finished_at=None
                )
            )
    Occurrence.objects.bulk_create(rows)
    made["written"] = written
    return made


def open_states() -> list[str]:
    return [state for state in OccurrenceState.values if state not in FINAL_STATES]


def latest(target: Schedule) -> Occurrence:
    return Occurrence.objects.filter(schedule=target).latest("scheduled_for")


def test_the_fill_holds_rows_skipped_at_creation_without_finished_at() -> None:
    made = fill(FakeClock(START))
    for name in ("shadow", "overlap"):
        skipped = Occurrence.objects.filter(schedule=made[name], state=OccurrenceState.SKIPPED)
        assert skipped.count() >= 5 and {row.reason for row in skipped} == {name}
    assert not Occurrence.objects.exclude(state__in=FINAL_STATES).exists()
    assert Occurrence.objects.filter(finished_at__isnull=True).count() >= 10 + 6


def test_the_batched_delete_removes_every_terminal_row_but_each_latest() -> None:
    made = fill(FakeClock(START))
    keep = {latest(target).pk for target in made.values()}
    later = START + DAY * 100

    report = prune(timedelta(days=30), later, batch=7, by_partition=False)

    assert set(Occurrence.objects.values_list("pk", flat=True)) == keep
    assert report.deleted == 5 + 5 + len(TERMINAL) + 6 - 1
    assert prune(timedelta(days=30), later, dry_run=True).deleted == 0


def test_rows_skipped_at_creation_stay_until_the_cutoff_passes_their_creation() -> None:
    made = fill(FakeClock(START))
    recent = prune(timedelta(days=30), START + DAY * 2, by_partition=False)
    assert recent.deleted == 0
    shadow = Occurrence.objects.filter(schedule=made["shadow"])
    assert list(shadow.values_list("finished_at", flat=True)) == [None] * 6
    prune(timedelta(hours=1), START + DAY * 2 + timedelta(hours=2), by_partition=False)
    # Created on the first three days: older than the cut-off (the third day + 1 hour).
    assert sorted(shadow.values_list("created_at", flat=True)) == [
        START + DAY * n for n in range(3, 6)
    ]


@pytest.mark.postgres
def test_the_partition_drop_removes_every_terminal_row_and_moves_only_the_latest() -> None:
    made = fill(FakeClock(JAN))
    keep = {latest(target).pk for target in made.values()}
    create_ahead(JAN, count=1, interval=Interval.MONTH)  # January and February
    assert partition_counts()["default"] == 0
    cutoff = datetime(2024, 3, 1, tzinfo=UTC)

    report = prune(timedelta(days=1), cutoff + DAY)

    assert report.partitions == (f"{TABLE}_p20240101", f"{TABLE}_p20240201")
    assert report.batches == 0  # nothing left for the batched delete
    assert set(Occurrence.objects.values_list("pk", flat=True)) == keep
    assert partition_counts()["default"] == len(keep)  # not the skipped rows
