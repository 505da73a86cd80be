"""The outbox checks every row it publishes against its schedule's stored version, rows made
and published in the same tick included (issue 37): a task, args or kwargs changed through the
ORM, past the services, is not handed off, whether the row is published from memory right after
the tick made it or read back from the outbox later. Without a query per row."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.db.models import JSONField, Value
from django.test.utils import CaptureQueriesContext

from scheduler_app.clock import FakeClock
from scheduler_app.context import OccurrenceContext
from scheduler_app.handoff.protocol import context_headers
from scheduler_app.models import Occurrence, OccurrenceState, Schedule, ScheduleVersion
from scheduler_app.safety.handoff import NOT_ITS_VERSION
from tests.integration.support import START, MemoryPublisher, rows, schedule, ticker

pytestmark = pytest.mark.django_db
MINUTE = timedelta(minutes=1)
TAMPERED = [
    {"task": "demo.other"},
    {"kwargs": {"n": 2, "admin": True}},
    {"args": ["rm -rf /"]},
    {"task": "demo.other", "kwargs": {}},
]


def every_minute(clock: FakeClock, n: int = 1) -> Schedule:
    return schedule(clock, kind="cron", rule="* * * * *", kwargs={"n": n})


def test_a_number_the_database_holds_equal_but_python_reads_otherwise_is_refused() -> None:
    """PostgreSQL holds 9007199254740993.0 equal to the version's 2**53 + 1; Python reads it
    as the float 2**53, which ``matches_version`` refuses: so must the claim's check."""
    clock, broker = FakeClock(START), MemoryPublisher()
    target = every_minute(clock, 2**53 + 1)
    cast = "::jsonb" if connection.vendor == "postgresql" else ""
    with connection.cursor() as cursor:  # past the services, as the literal a person typed
        cursor.execute(
            f"UPDATE scheduler_app_schedule SET kwargs = %s{cast} WHERE id = %s",
            ['{"n": 9007199254740993.0}', target.pk.hex if cast == "" else target.pk],
        )
    clock.set(START + MINUTE)
    assert ticker(broker, clock).tick().published == 0
    [row] = rows(target)
    assert (row.state, row.reason) == (OccurrenceState.SKIPPED, NOT_ITS_VERSION)


@pytest.mark.parametrize("changes", TAMPERED)
def test_a_row_of_a_schedule_changed_past_the_services_is_refused_in_its_own_tick(
    changes: dict[str, Any],
) -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    target = every_minute(clock)
    Schedule.objects.filter(pk=target.pk).update(**changes)  # no new version, no approval
    clock.set(START + MINUTE)
    result = ticker(broker, clock).tick()  # materialized and handed off from memory
    assert (result.created, result.published) == (1, 0)
    assert broker.sent == []
    [row] = rows(target)
    assert (row.state, row.reason) == (OccurrenceState.SKIPPED, NOT_ITS_VERSION)


def test_an_unchanged_schedule_is_published_in_its_own_tick() -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    target = every_minute(clock)
    clock.set(START + MINUTE)
    assert ticker(broker, clock).tick().published == 1
    [row] = rows(target)
    assert row.state == OccurrenceState.DISPATCHED
    assert broker.sent[0].schedule_version.definition["objective"] == target.objective


AGREEING = [
    {"kwargs": {"n": 1.0}},  # the same number
    {"kwargs": {"n": True}},  # Python's True == 1: the check has always let it pass
    {"args": {}},  # as [] too (``row.args or []``)
]


@pytest.mark.parametrize("changes", AGREEING)
def test_a_schedule_changed_past_the_services_to_what_its_version_equals_is_published(
    changes: dict[str, Any],
) -> None:
    """The claim compares the version with the schedule in the database; where the database
    and the outbox's check could disagree, the check decides, as for a row read back."""
    clock, broker = FakeClock(START), MemoryPublisher()
    target = every_minute(clock)
    Schedule.objects.filter(pk=target.pk).update(**changes)
    clock.set(START + MINUTE)
    assert ticker(broker, clock).tick().published == 1
    [row] = rows(target)
    assert row.state == OccurrenceState.DISPATCHED


def test_the_check_costs_no_query_per_row() -> None:
    clock = FakeClock(START)
    few = [every_minute(clock) for _ in range(2)]
    clock.set(START + MINUTE)
    beat = ticker(MemoryPublisher(), clock)
    beat.tick()
    clock.advance(MINUTE)
    with CaptureQueriesContext(connection) as small:
        beat.tick()
    many = [every_minute(clock) for _ in range(20)]
    clock.advance(MINUTE)
    beat.tick()  # the new schedules' first slot
    clock.advance(MINUTE)
    with CaptureQueriesContext(connection) as large:
        assert beat.tick().published == len(few) + len(many)
    version_reads = [q for q in large.captured_queries if "schedulever" in q["sql"].lower()]
    assert len(version_reads) <= 1, version_reads
    assert len(large.captured_queries) == len(small.captured_queries)


@pytest.mark.parametrize(
    "stored",
    [
        {"task": None},  # a key present with null: checked, not taken for absent
        {"task": "demo.other"},
        {"kwargs": {"n": 2}},
        {"args": [1]},
    ],
)
def test_a_version_changed_past_the_services_refuses_its_rows_in_their_own_tick(
    stored: dict[str, Any],
) -> None:
    """The claim reads only the checked parts of the version's definition (on PostgreSQL);
    what it reads still decides as the whole document did."""
    clock, broker = FakeClock(START), MemoryPublisher()
    target = every_minute(clock)
    version = ScheduleVersion.objects.get(schedule=target, version=target.version)
    version.definition = {**version.definition, **stored}
    version.save(update_fields=["definition"])
    clock.set(START + MINUTE)
    assert ticker(broker, clock).tick().published == 0
    [row] = rows(target)
    assert (row.state, row.reason) == (OccurrenceState.SKIPPED, NOT_ITS_VERSION)


def test_a_version_without_the_checked_keys_publishes_with_its_own_empty_objective() -> None:
    """The objective a message carries is its version's, in the tick that made the row as
    when the row is read back from the outbox, and the worker's context says the same: a
    version without one says ``""``, never the schedule's objective of the moment."""
    clock, broker = FakeClock(START), MemoryPublisher()
    target = every_minute(clock)
    Schedule.objects.filter(pk=target.pk).update(objective="the monthly close")
    version = ScheduleVersion.objects.get(schedule=target, version=target.version)
    version.definition = {"rule": "* * * * *", "name": "only the rule"}
    version.save(update_fields=["definition"])
    clock.set(START + MINUTE)
    assert ticker(broker, clock).tick().published == 1
    [sent] = broker.sent
    [row] = rows(target)
    read_back = Occurrence.objects.select_related("schedule_version", "schedule").get(pk=row.pk)
    assert context_headers(sent)["objective"] == ""
    assert context_headers(read_back)["objective"] == ""
    assert OccurrenceContext.from_occurrence(read_back, attempt=1).objective == ""


def test_a_versions_objective_is_the_one_its_message_carries_in_its_own_tick() -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    target = every_minute(clock)
    version = ScheduleVersion.objects.get(schedule=target, version=target.version)
    version.definition = {**version.definition, "objective": "the monthly close"}
    version.save(update_fields=["definition"])
    clock.set(START + MINUTE)
    assert ticker(broker, clock).tick().published == 1
    assert context_headers(broker.sent[0])["objective"] == "the monthly close"


@pytest.mark.parametrize("stored", [[1], ["task"], "task", 7])
def test_a_version_that_is_no_object_refuses_its_rows_and_stalls_no_other(stored: Any) -> None:
    """Written past the services, a definition that is no JSON object matches no row: its
    rows end ``not_its_version``, and the other schedules of the batch publish."""
    clock, broker = FakeClock(START), MemoryPublisher()
    odd, healthy = every_minute(clock), every_minute(clock)
    ScheduleVersion.objects.filter(schedule=odd).update(definition=Value(stored, JSONField()))
    clock.set(START + MINUTE)
    assert ticker(broker, clock).tick().published == 1
    assert [row.schedule_id for row in broker.sent] == [healthy.pk]
    [row] = rows(odd)
    assert (row.state, row.reason) == (OccurrenceState.SKIPPED, NOT_ITS_VERSION)


def test_a_version_stored_as_json_null_reads_as_one_without_the_checked_keys() -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    target = every_minute(clock)
    ScheduleVersion.objects.filter(schedule=target).update(definition=Value(None, JSONField()))
    clock.set(START + MINUTE)
    assert ticker(broker, clock).tick().published == 1


def test_args_python_reads_as_empty_are_left_to_python_even_when_the_texts_agree() -> None:
    """Review 17: version and schedule both hold the args ``1e-400`` (past the services).
    jsonb keeps that number exactly, so the texts agree; Python reads it as ``0.0``, which
    ``row.args or []`` makes ``[]``, and ``matches_version`` refuses the row. The claim must
    not publish in the row's own tick what the outbox would refuse when reading it back."""
    clock, broker = FakeClock(START), MemoryPublisher()
    target = every_minute(clock)
    version = ScheduleVersion.objects.get(schedule=target, version=target.version)
    postgresql = connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        if postgresql:
            cursor.execute(
                "UPDATE scheduler_app_scheduleversion SET definition = jsonb_set(definition,"
                " '{args}', '1e-400'::jsonb) WHERE id = %s",
                [version.pk],
            )
            cursor.execute(
                "UPDATE scheduler_app_schedule SET args = '1e-400'::jsonb WHERE id = %s",
                [target.pk],
            )
        else:
            cursor.execute(
                "UPDATE scheduler_app_scheduleversion SET definition = json_set(definition,"
                " '$.args', json('1e-400')) WHERE id = %s",
                [version.pk.hex],
            )
            cursor.execute(
                "UPDATE scheduler_app_schedule SET args = '1e-400' WHERE id = %s", [target.pk.hex]
            )
    clock.set(START + MINUTE)
    assert ticker(broker, clock).tick().published == 0
    [row] = rows(target)
    assert (row.state, row.reason) == (OccurrenceState.SKIPPED, NOT_ITS_VERSION)
