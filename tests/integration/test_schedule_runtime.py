"""A schedule's runtime is a narrow table of its own (``models.runtime``): the beat's advance
writes that table alone, the earliest-due question reads it alone, and an edit and a claim of
the same schedule still wait for each other (the claim locks both rows)."""

from __future__ import annotations

import re
import threading
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext

from scheduler_app.clock import FakeClock
from scheduler_app.dispatch.bulk import ADVANCE_FIELDS, save_advanced
from scheduler_app.dispatch.claim import claim_due, earliest_due
from scheduler_app.dispatch.probe import probe
from scheduler_app.models import Schedule, ScheduleRuntime, ScheduleStatus
from tests.integration.support import START, MemoryPublisher, reload, schedule, ticker

pytestmark = pytest.mark.django_db(transaction=True)
RUNTIME = ScheduleRuntime._meta.db_table
DEFINITION = Schedule._meta.db_table
MINUTE = timedelta(minutes=1)


def tables_written(sql: str) -> set[str]:
    """The tables an INSERT or UPDATE statement writes."""
    return set(re.findall(r'^\s*(?:UPDATE|INSERT INTO)\s+"?(\w+)"?', sql, flags=re.IGNORECASE))


def tables_read(sql: str) -> set[str]:
    return set(re.findall(r'(?:FROM|JOIN)\s+"?(\w+)"?', sql, flags=re.IGNORECASE))


def test_every_field_the_advance_writes_is_a_runtime_field() -> None:
    local = {field.name for field in ScheduleRuntime._meta.local_concrete_fields}
    assert set(ADVANCE_FIELDS) <= local
    assert not local & {field.name for field in Schedule._meta.local_concrete_fields}


def test_the_advance_writes_the_runtime_table_alone() -> None:
    clock = FakeClock(START)
    made = [schedule(clock, kind="interval", rule="60", name=f"s{n}") for n in range(3)]
    with transaction.atomic(), CaptureQueriesContext(connection) as seen:  # the claim only reads
        claimed = claim_due(START + MINUTE, 10)
        for row in claimed:
            row.next_run_at = START + 5 * MINUTE
            row.occurrence_count += 1
            row.updated_at = START + MINUTE
        save_advanced(claimed)
    written = set().union(*(tables_written(query["sql"]) for query in seen.captured_queries))
    assert written == {RUNTIME}, seen.captured_queries
    for row in made:
        stored = reload(row)
        assert (stored.next_run_at, stored.occurrence_count) == (START + 5 * MINUTE, 1)


def test_a_tick_writes_no_row_of_the_definition_table() -> None:
    clock = FakeClock(START)
    schedule(clock, kind="interval", rule="60")
    clock.set(START + MINUTE)
    beat = ticker(MemoryPublisher(), clock)
    with CaptureQueriesContext(connection) as seen:
        assert beat.tick().published >= 1
    writes = [q["sql"] for q in seen.captured_queries if DEFINITION in tables_written(q["sql"])]
    assert writes == []
    assert any(RUNTIME in tables_written(q["sql"]) for q in seen.captured_queries)


def test_the_earliest_due_instant_is_read_from_the_runtime_table_alone() -> None:
    clock = FakeClock(START)
    first = schedule(clock, kind="interval", rule="60")
    schedule(clock, kind="interval", rule="3600")
    with CaptureQueriesContext(connection) as seen:
        assert earliest_due() == first.next_run_at
        assert probe(START).due == first.next_run_at
    for query in seen.captured_queries:
        assert DEFINITION not in tables_read(query["sql"]), query["sql"]
    assert RUNTIME in tables_read(seen.captured_queries[0]["sql"])


@pytest.mark.postgres
def test_the_earliest_due_plan_joins_nothing() -> None:
    clock = FakeClock(START)
    schedule(clock, kind="interval", rule="60")
    with CaptureQueriesContext(connection) as seen:
        earliest_due()
    [query] = seen.captured_queries
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")  # a tiny table: show the plan at scale
        cursor.execute(f"EXPLAIN {query['sql']}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("RESET enable_seqscan")
    assert "Join" not in plan and "Nested Loop" not in plan, plan
    assert f"on {DEFINITION} " not in plan and f"on {DEFINITION}\n" not in plan, plan
    assert "sched_due_idx" in plan, plan


@pytest.mark.postgres
def test_an_edit_waits_for_the_claim_that_holds_the_schedule() -> None:
    """The claim locks the definition row too (``FOR UPDATE`` of the join): a change of the
    definition made meanwhile waits for the tick's transaction to end."""
    target = schedule(FakeClock(START), kind="interval", rule="60")
    edited = threading.Event()

    def edit() -> None:
        try:
            Schedule.objects.filter(pk=target.pk).update(name="edited")
            edited.set()
        finally:
            connections["default"].close()

    with transaction.atomic():
        [claimed] = claim_due(START + MINUTE, 10)
        other = threading.Thread(target=edit)
        other.start()
        assert not edited.wait(0.5), "the edit did not wait for the claim's lock"
    other.join(10)
    assert edited.is_set() and reload(target).name == "edited"
    assert claimed.pk == target.pk


def test_a_compare_and_set_over_both_tables_checks_its_filter() -> None:
    target = schedule(FakeClock(START), kind="interval", rule="60")
    active = Schedule.objects.filter(pk=target.pk, status=ScheduleStatus.ACTIVE)
    assert active.update(status=ScheduleStatus.PAUSED, pause_note="why") == 1
    assert active.update(status=ScheduleStatus.PAUSED, pause_note="again") == 0
    stored = reload(target)
    assert (stored.status, stored.pause_note) == (ScheduleStatus.PAUSED, "why")


@pytest.mark.postgres
def test_a_compare_and_set_that_waited_for_a_concurrent_change_sees_it() -> None:
    """An ``update()`` of ``Schedule`` that sets a runtime field, filtered on ``status``, run
    while another transaction pauses the schedule: it waits for that transaction and then
    finds the row no longer active (0 rows), instead of selecting the id before the pause
    committed and writing over it (what Django's split update of a parent's field does)."""
    target = schedule(FakeClock(START), kind="interval", rule="60")
    done = threading.Event()
    result: list[int] = []

    def cancel_if_active() -> None:
        try:
            result.append(
                Schedule.objects.filter(pk=target.pk, status=ScheduleStatus.ACTIVE).update(
                    status=ScheduleStatus.CANCELLED, pause_note="cancelled meanwhile"
                )
            )
            done.set()
        finally:
            connections["default"].close()

    with transaction.atomic():
        ScheduleRuntime.objects.select_for_update().filter(pk=target.pk).update(
            status=ScheduleStatus.PAUSED
        )
        other = threading.Thread(target=cancel_if_active)
        other.start()
        assert not done.wait(0.5), "the compare-and-set did not wait for the pause's lock"
    other.join(10)
    assert result == [0]
    stored = reload(target)
    assert (stored.status, stored.pause_note) == (ScheduleStatus.PAUSED, "")


def test_an_update_of_definition_fields_by_id_is_one_statement() -> None:
    """``filter(pk=...)`` sets up the join to the runtime table through the parent link and
    trims it: such an update is not taken for one that reads the runtime (it would lock and
    select first: a statement more on the worker's path, and on a database migrated back
    before the runtime table, a query of a table that is not there)."""
    target = schedule(FakeClock(START), kind="interval", rule="60")
    with CaptureQueriesContext(connection) as queries:
        assert Schedule.objects.filter(pk=target.pk).update(name="renamed") == 1
    assert len(queries) == 1, [query["sql"] for query in queries]
    assert tables_written(queries[0]["sql"]) == {DEFINITION}
