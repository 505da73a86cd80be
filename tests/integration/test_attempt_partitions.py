"""The attempt history partitioned like the ledger (migration 0016, PostgreSQL): each attempt
carries its occurrence's slot; its partitions are made with the ledger's and retired with them,
so retention drops a month of attempts instead of deleting them, keeping the keepers'."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor

from scheduler_app.clock import FakeClock
from scheduler_app.models import (
    FINAL_STATES,
    AttemptKind,
    Occurrence,
    OccurrenceAttempt,
    OccurrenceState,
)
from scheduler_app.partitions import ddl, retire
from scheduler_app.partitions.drop import drop_before
from scheduler_app.partitions.maintain import create_ahead
from scheduler_app.partitions.ranges import Interval
from scheduler_app.services.replay import replay_occurrence
from scheduler_app.worker import claiming, lifecycle
from tests.integration.partition_support import (
    ATTEMPTS,
    TABLE,
    fetch,
    key_columns,
    occurrence,
    partition_counts,
)
from tests.integration.support import START, schedule
from tests.integration.worker_support import due_one

BEFORE = [("scheduler_app", "0015_schedule_last_success")]
AFTER = [("scheduler_app", "0016_partition_attempts")]
JAN = datetime(2024, 1, 10, 12, 0, tzinfo=UTC)
CUTOFF = datetime(2024, 3, 1, tzinfo=UTC)
DAY = timedelta(days=1)
LONG_AGO = datetime(1990, 1, 1, tzinfo=UTC)
"""Older than any partition a test makes (migration 0014 makes none more than 10 years back)."""


def migrate(target: list[tuple[str, str]] | None) -> None:
    """To ``target``; None: to the latest migrations (where the other tests expect it)."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target or executor.loader.graph.leaf_nodes())


def attempt(row: Occurrence, number: int = 1, **fields: Any) -> OccurrenceAttempt:
    return OccurrenceAttempt(
        occurrence=row,
        scheduled_for=row.scheduled_for,
        number=number,
        started_at=row.scheduled_for,
        **fields,
    )


def insert_old_attempt(occurrence_id: Any, started_at: datetime) -> None:
    """An attempt as 0015 stores it (no slot): the model's insert would name the slot."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {ATTEMPTS} (occurrence_id, kind, number, worker, started_at, outcome, "
            "error, \"by\", note) VALUES (%s, 'run', 1, '', %s, '', '', '', '')",
            [Occurrence._meta.pk.get_db_prep_value(occurrence_id, connection), started_at],
        )


@pytest.fixture
def at_0015() -> Iterator[list[Occurrence]]:
    """Three occurrences in two months with an attempt each, and an attempt whose occurrence
    is gone, stored at 0015; emptied and at the latest migrations again afterwards."""
    target = schedule(FakeClock(START), kind="interval", rule="1d")
    # This month and the next: the test database's ledger has partitions for them.
    first = datetime.now(UTC).replace(day=1, hour=12, minute=0, second=0, microsecond=0)
    rows = [occurrence(target, first + DAY * n) for n in (0, 1, 40)]
    Occurrence.objects.bulk_create(rows)
    migrate(BEFORE)
    try:
        for row in rows:
            insert_old_attempt(row.pk, row.scheduled_for + timedelta(minutes=1))
        insert_old_attempt(occurrence(target, START - DAY * 400).pk, LONG_AGO)
        yield rows
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {ATTEMPTS}")
            cursor.execute(f"DELETE FROM {TABLE}")
        migrate(None)


def slots() -> dict[object, object]:
    return dict(fetch(f"SELECT occurrence_id, scheduled_for FROM {ATTEMPTS}"))


@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_every_attempt_its_occurrences_slot_on_any_database(
    at_0015: list[Occurrence],
) -> None:
    migrate(AFTER)
    by_occurrence = {
        row.occurrence_id: row.scheduled_for for row in OccurrenceAttempt.objects.all()
    }
    assert len(by_occurrence) == 4
    for row in at_0015:
        assert by_occurrence.pop(row.pk) == row.scheduled_for
    # The attempt whose occurrence is gone takes its own start.
    assert list(by_occurrence.values()) == [LONG_AGO]
    migrate(BEFORE)
    assert fetch(f"SELECT count(*) FROM {ATTEMPTS}") == [(4,)]


def partition_names(table: str) -> set[str]:
    return set(partition_counts(table))


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_populated_history_is_partitioned_like_the_ledger_and_back(
    at_0015: list[Occurrence],
) -> None:
    [(last_id,)] = fetch(f"SELECT max(id) FROM {ATTEMPTS}")
    migrate(AFTER)

    assert fetch("SELECT relkind FROM pg_class WHERE relname = %s", [ATTEMPTS]) == [("p",)]
    assert partition_names(ATTEMPTS) == partition_names(TABLE)
    counts = partition_counts(ATTEMPTS)
    first, _, later = at_0015
    assert counts[f"p{first.scheduled_for:%Y%m}01"] == 2
    assert counts[f"p{later.scheduled_for:%Y%m}01"] == 1
    assert counts["default"] == 1  # the orphan, older than every partition
    assert key_columns(f"{ATTEMPTS}_pkey") == ["id", "scheduled_for"]
    # The numbering goes on where the identity was.
    added = OccurrenceAttempt.objects.create(
        occurrence=first, scheduled_for=first.scheduled_for, number=2, started_at=START
    )
    assert added.pk == int(last_id) + 1  # type: ignore[call-overload]

    migrate(BEFORE)
    assert fetch("SELECT relkind FROM pg_class WHERE relname = %s", [ATTEMPTS]) == [("r",)]
    assert key_columns(f"{ATTEMPTS}_pkey") == ["id"]
    assert fetch(
        "SELECT attidentity FROM pg_attribute WHERE attrelid = %s::regclass AND attname = 'id'",
        [ATTEMPTS],
    ) == [("d",)]
    insert_old_attempt(first.pk, START)
    assert fetch(f"SELECT max(id) FROM {ATTEMPTS}") == [(added.pk + 1,)]
    assert fetch(f"SELECT count(*) FROM {ATTEMPTS}") == [(6,)]


@pytest.mark.postgres
@pytest.mark.django_db
def test_partitions_ahead_are_made_for_the_attempts_too_and_take_theirs_out_of_default() -> None:
    target = schedule(FakeClock(START), kind="interval", rule="1d")
    rows = [occurrence(target, JAN + DAY * n) for n in range(45)]
    Occurrence.objects.bulk_create(rows)
    OccurrenceAttempt.objects.bulk_create(attempt(row) for row in rows)
    assert partition_counts(ATTEMPTS)["default"] == 45

    create_ahead(JAN, count=1, interval=Interval.MONTH)

    counts = partition_counts(ATTEMPTS)
    assert (counts["p20240101"], counts["p20240201"], counts["default"]) == (22, 23, 0)
    assert partition_names(ATTEMPTS) == partition_names(TABLE)


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_hand_made_attempts_partition_is_left_alone() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TABLE {ATTEMPTS}_hand PARTITION OF {ATTEMPTS} "
            "FOR VALUES FROM ('2024-01-20') TO ('2024-02-10')"
        )
    create_ahead(JAN, count=1, interval=Interval.MONTH)
    names = partition_names(ATTEMPTS)
    assert {"hand", "p20240101", "p20240210"} <= names
    assert "p20240201" not in names


def january(count: int = 20) -> tuple[list[Occurrence], Occurrence]:
    """``count`` finished rows of one schedule in January (its own partition; a row in April
    is the latest), two attempts each; the row the first is kept for: still running."""
    target = schedule(FakeClock(START), kind="interval", rule="1d")
    rows = [
        occurrence(target, JAN + DAY * (n % 20) + timedelta(hours=n // 20)) for n in range(count)
    ]
    running = rows[3]
    running.state, running.finished_at = OccurrenceState.RUNNING, None
    Occurrence.objects.bulk_create([*rows, occurrence(target, datetime(2024, 4, 1, tzinfo=UTC))])
    OccurrenceAttempt.objects.bulk_create(attempt(row, n) for row in rows for n in (1, 2))
    create_ahead(JAN, count=0, interval=Interval.MONTH)
    return rows, running


def kept_attempts() -> list[tuple[object, ...]]:
    return fetch(f"SELECT occurrence_id, number FROM {ATTEMPTS} ORDER BY occurrence_id, number")


@pytest.mark.postgres
@pytest.mark.django_db
def test_retention_drops_the_month_of_attempts_with_its_rows_and_keeps_the_keepers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, running = january()

    def no_batches(name: str) -> str:
        raise AssertionError("the attempts' partition goes whole: no batched delete")

    monkeypatch.setattr(retire, "_batch_sql", no_batches)

    report = drop_before(CUTOFF, FINAL_STATES)

    assert report.partitions == (f"{TABLE}_p20240101",)
    assert (report.rows, report.kept, report.attempts) == (19, 1, 38)
    assert kept_attempts() == [(running.pk, 1), (running.pk, 2)]
    assert partition_counts(ATTEMPTS)["default"] == 2
    assert "p20240101" not in partition_names(ATTEMPTS)
    assert retire.retired_tables() == []
    assert fetch("SELECT count(*) FROM pg_class WHERE relname LIKE %s", ["%\\_retired\\_%"]) == [
        (0,)
    ]
    # The kept row's attempts are still found by its slot, and it can end.
    assert running.attempt_history.filter(scheduled_for=running.scheduled_for).count() == 2


@pytest.mark.postgres
@pytest.mark.django_db
def test_without_an_attempts_partition_of_the_range_the_attempts_go_in_batches() -> None:
    target = schedule(FakeClock(START), kind="interval", rule="1h")
    create_ahead(JAN, count=0, interval=Interval.MONTH)
    with connection.cursor() as cursor:  # as a retirement begun before 0016 would find it
        cursor.execute(f"ALTER TABLE {ATTEMPTS} DETACH PARTITION {ATTEMPTS}_p20240101")
        cursor.execute(f"DROP TABLE {ATTEMPTS}_p20240101")
    rows = [occurrence(target, JAN + timedelta(hours=n)) for n in range(100)]
    Occurrence.objects.bulk_create([*rows, occurrence(target, datetime(2024, 4, 1, tzinfo=UTC))])
    OccurrenceAttempt.objects.bulk_create(attempt(row, n) for row in rows for n in (1, 2))
    [partition] = [p for p in ddl.partitions() if p.name == f"{TABLE}_p20240101"]
    with transaction.atomic():
        retire.watch(partition)
    with transaction.atomic():
        assert retire.retire(partition, FINAL_STATES, CUTOFF) == 0
    retired = f"{TABLE}_retired_p20240101"
    [(pages,)] = fetch("SELECT pg_relation_size(%s) / 8192", [retired])
    assert int(pages) > 1  # type: ignore[call-overload]  # so more than one batch

    assert retire.finish_retired(retired, blocks=1) == (100, 200)

    assert OccurrenceAttempt.objects.count() == 0
    assert retire.retired_tables() == []


@pytest.mark.django_db
def test_attempts_written_by_the_worker_and_by_an_operator_carry_the_slot() -> None:
    clock = FakeClock(START)
    row = due_one(clock)
    won = claiming.claim(row.pk, owner="w1", now=clock.now(), lease=timedelta(seconds=60))
    assert won.claimed
    assert lifecycle.finish(
        row.pk,
        token=won.token,
        state=OccurrenceState.FAILED,
        reason="error",
        now=clock.now(),
        error="boom",
        claimed=won.occurrence,
    )
    replay_occurrence(row.pk, clock=clock)

    history = list(row.attempt_history.order_by("id"))
    assert [(a.kind, a.outcome) for a in history] == [
        (AttemptKind.RUN, OccurrenceState.FAILED),
        (AttemptKind.REPLAY, OccurrenceState.FAILED),
    ]
    assert {a.scheduled_for for a in history} == {row.scheduled_for}


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_migrating_back_with_a_retired_month_left_over() -> None:
    january()
    [partition] = [p for p in ddl.partitions() if p.name == f"{TABLE}_p20240101"]
    with transaction.atomic():
        retire.watch(partition)
    with transaction.atomic():
        retire.retire(partition, FINAL_STATES, CUTOFF)  # a beat stopped before finishing
    retired = [f"{TABLE}_retired_p20240101", f"{ATTEMPTS}_retired_p20240101"]
    try:
        # The retired attempts no longer name the sequence 0016 made, which backwards drops.
        migrate(BEFORE)
        assert fetch(f"SELECT count(*) FROM {retired[1]}") == [(38,)]
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TABLE IF EXISTS {', '.join(retired)}")
            cursor.execute(f"DELETE FROM {ATTEMPTS}")
            cursor.execute(f"DELETE FROM {TABLE}")
        migrate(None)
