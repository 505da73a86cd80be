"""Migration 0014 on a populated ledger: partitioned by month on PostgreSQL, every row kept,
uniqueness still enforced, and back again; on SQLite only the key constraint changes."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

from scheduler_app.clock import FakeClock
from scheduler_app.dispatch.bulk import insert_occurrences
from scheduler_app.models import (
    Occurrence,
    OccurrenceAttempt,
    Schedule,
    Trigger,
)
from tests.integration.partition_support import (
    TABLE,
    fetch,
    key_columns,
    occurrence,
    partition_counts,
)
from tests.integration.support import START, schedule

pytestmark = pytest.mark.django_db(transaction=True)
BEFORE = [("scheduler_app", "0013_ledger_indexes")]
AFTER = [("scheduler_app", "0014_partition_ledger")]
FIRST = datetime(2025, 10, 3, 6, 0, tzinfo=UTC)
STRAY_PAST = datetime(1999, 12, 31, 23, 0, tzinfo=UTC)
STRAY_FUTURE = datetime(2099, 1, 1, tzinfo=UTC)


def migrate(target: list[tuple[str, str]] | None) -> None:
    """To ``target``; None: to the latest migrations (where the other tests expect it)."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target or executor.loader.graph.leaf_nodes())


def hourly(count: int) -> Iterator[datetime]:
    """``count`` slots 7 hours apart from FIRST: about five months for 500."""
    return (FIRST + timedelta(hours=7 * n) for n in range(count))


def populate(target: Schedule) -> Schedule:
    """At 0013: 500 rows over five months, two strays (1999, 2099), three attempts, of
    ``target`` (made at the latest migration: the model's schedule columns are today's)."""
    slots = [*hourly(500), STRAY_PAST, STRAY_FUTURE]
    Occurrence.objects.bulk_create([occurrence(target, slot) for slot in slots])
    first = Occurrence.objects.get(scheduled_for=FIRST)
    for n in (1, 2, 3):  # at 0013 the attempts have no slot: the model's insert would name it
        fetch(
            "INSERT INTO scheduler_app_occurrenceattempt (occurrence_id, kind, number, "
            'worker, started_at, outcome, error, "by", note) '
            "VALUES (%s, 'run', %s, '', %s, '', '', '', '') RETURNING id",
            [Occurrence._meta.pk.get_db_prep_value(first.pk, connection), n, FIRST],
        )
    return target


def snapshot() -> list[tuple[object, ...]]:
    return list(
        Occurrence.objects.order_by("scheduled_for").values_list(
            "id", "scheduled_for", "idempotency_key", "state", "finished_at"
        )
    )


def foreign_keys_to_ledger() -> list[tuple[object, ...]]:
    return fetch(
        "SELECT conname FROM pg_constraint WHERE confrelid = %s::regclass AND contype = 'f'",
        [TABLE],
    )


def assert_duplicates_refused(target: Schedule) -> None:
    again = occurrence(target, FIRST)
    with pytest.raises(IntegrityError), transaction.atomic():
        Occurrence.objects.bulk_create([again])
    # A manual row of the same slot: outside the rule-slot constraint, caught by the key.
    manual = occurrence(target, FIRST, trigger=Trigger.MANUAL)
    with pytest.raises(IntegrityError), transaction.atomic():
        Occurrence.objects.bulk_create([manual])
    with transaction.atomic():
        assert insert_occurrences([occurrence(target, FIRST)]) == set()


@pytest.fixture
def populated() -> Iterator[Schedule]:
    """A ledger populated at 0013; the latest migrations again afterwards."""
    target = schedule(FakeClock(START), kind="interval", rule="3600")
    migrate(BEFORE)
    try:
        yield populate(target)
    finally:
        # Emptied first: migrating forward with these rows would make a partition for every
        # month back to 2016, which retention tests on this database would then drop.
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM scheduler_app_occurrenceattempt")
            cursor.execute(f"DELETE FROM {TABLE}")
        migrate(None)


@pytest.mark.postgres
def test_a_populated_ledger_is_partitioned_by_month_and_back(populated: Schedule) -> None:
    before = snapshot()
    migrate(AFTER)
    assert fetch("SELECT relkind FROM pg_class WHERE relname = %s", [TABLE]) == [("p",)]
    assert snapshot() == before
    counts = partition_counts()
    # Each month's rows in its own partition; the strays in DEFAULT.
    months: dict[str, int] = {}
    for slot in hourly(500):
        month = f"p{slot:%Y%m}01"
        months[month] = months.get(month, 0) + 1
    assert len(months) == 5
    assert {name: counts[name] for name in months} == months
    assert counts["default"] == 2
    assert sum(counts.values()) == 502
    assert key_columns(f"{TABLE}_pkey") == ["id", "scheduled_for"]
    assert key_columns("occ_key_unique") == ["idempotency_key", "scheduled_for"]
    assert foreign_keys_to_ledger() == []
    first = Occurrence.objects.get(scheduled_for=FIRST)
    assert first.attempt_history.count() == 3
    assert_duplicates_refused(populated)
    first.delete()  # Django still cascades to the attempts
    assert OccurrenceAttempt.objects.count() == 0

    migrate(BEFORE)
    assert fetch("SELECT relkind FROM pg_class WHERE relname = %s", [TABLE]) == [("r",)]
    assert snapshot() == [row for row in before if row[1] != FIRST]
    assert key_columns(f"{TABLE}_pkey") == ["id"]
    assert key_columns("occ_key_unique") == ["idempotency_key"]
    assert len(foreign_keys_to_ledger()) == 1


def catalog_names() -> set[object]:
    """The ledger's index and constraint names, as the database has them."""
    indexes = fetch("SELECT indexname FROM pg_indexes WHERE tablename = %s", [TABLE])
    constraints = fetch("SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass", [TABLE])
    return {name for (name,) in [*indexes, *constraints]}


@pytest.mark.postgres
def test_the_partitioned_ledger_has_every_index_and_constraint_of_the_model() -> None:
    meta = Occurrence._meta
    declared = {index.name for index in meta.indexes} | {c.name for c in meta.constraints}
    assert declared <= catalog_names()


@pytest.mark.postgres
def test_the_migration_keeps_every_index_and_constraint_name(populated: Schedule) -> None:
    before = catalog_names()
    migrate(AFTER)
    assert catalog_names() == before


def test_the_migration_keeps_every_row_on_any_database(populated: Schedule) -> None:
    before = snapshot()
    migrate(AFTER)
    assert snapshot() == before
    assert_duplicates_refused(populated)
    migrate(BEFORE)
    assert snapshot() == before
