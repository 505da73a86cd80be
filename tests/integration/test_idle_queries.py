"""An idle tick costs a constant number of SQL queries (<= 3), whatever the number of schedules."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from scheduler_app.clock import FakeClock
from scheduler_app.models import Occurrence, Schedule, bulk_create_schedules
from tests.integration.support import START, TASK, MemoryPublisher, ticker

pytestmark = pytest.mark.django_db(transaction=True)
FIRST_DUE = START + timedelta(hours=1)


def add_schedules(count: int) -> None:
    """``count`` active schedules, none due before FIRST_DUE (no service call: speed)."""
    bulk_create_schedules(
        [
            Schedule(
                task=TASK,
                kind="cron",
                rule="0 * * * *",
                next_run_at=FIRST_DUE + timedelta(seconds=i % 3600),
                created_at=START,
                updated_at=START,
            )
            for i in range(count)
        ],
        batch_size=1000,
    )


def idle_tick_queries(count: int) -> list[str]:
    add_schedules(count)
    clock = FakeClock(START)
    # The reconciler runs on its own slow cadence (RECONCILE_INTERVAL); this is the tick between.
    beat = ticker(
        MemoryPublisher(),
        clock,
        MAX_INTERVAL=7200.0,
        RECONCILE_INTERVAL=86400.0,
        MONITOR_INTERVAL=86400.0,
        HEALTH_STALE=86400.0,
    )
    beat.tick()  # the first tick takes the SQLite lease; later ones only renew it
    clock.advance(60)
    with CaptureQueriesContext(connection) as captured:
        result = beat.tick()
    assert (result.created, result.published, result.leader) == (0, 0, True)
    assert result.sleep == (FIRST_DUE - clock.now()).total_seconds()
    return [query["sql"] for query in captured.captured_queries]


@pytest.mark.parametrize("count", [10, 10_000])
def test_an_idle_tick_runs_at_most_three_queries(count: int) -> None:
    queries = idle_tick_queries(count)
    assert len(queries) <= 3, "\n".join(queries)


def test_the_idle_query_count_does_not_grow_with_the_schedules() -> None:
    small = idle_tick_queries(10)
    Schedule.objects.all().delete()
    assert len(idle_tick_queries(10_000)) == len(small)


@pytest.mark.postgres
def test_on_postgresql_an_idle_tick_is_one_statement() -> None:
    assert len(idle_tick_queries(10)) == 1


@pytest.mark.postgres
def test_the_probe_answers_what_the_two_queries_answer() -> None:
    """Earliest due and outbox work, through the states a row goes through."""
    from scheduler_app.dispatch.claim import earliest_due
    from scheduler_app.dispatch.outbox import has_publishable
    from scheduler_app.dispatch.probe import probe

    def agree(now: object) -> None:
        assert probe(now) == type(probe(now))(earliest_due(), has_publishable(now))  # type: ignore[arg-type]

    agree(START)  # nothing stored
    add_schedules(3)
    Schedule.objects.filter(next_run_at=FIRST_DUE).update(status="paused")
    clock = FakeClock(FIRST_DUE + timedelta(seconds=5))
    publisher = MemoryPublisher()
    publisher.down = True
    ticker(publisher, clock).tick()  # rows stay in the outbox, unleased
    for now in (START, clock.now(), clock.now() + timedelta(hours=2)):
        agree(now)
    Occurrence.objects.update(publish_lease_until=clock.now() + timedelta(seconds=30))
    agree(clock.now())  # leased: not publishable until the lease runs out
    agree(clock.now() + timedelta(seconds=31))
    Occurrence.objects.update(state="dispatched", publish_lease_until=None)
    agree(clock.now())


@pytest.mark.postgres
def test_postgresql_prepares_the_probe_unless_a_transaction_pooler_is_in_front() -> None:
    """The probe (same text every tick) is prepared by default, as the worker's statements
    are, so an idle tick stops paying for planning it; behind a transaction pooler
    (``DISABLE_SERVER_SIDE_CURSORS``) nothing is, unless the project's own
    ``OPTIONS["prepare_threshold"]`` asks."""
    from scheduler_app.dispatch.probe import probe

    def prepared() -> list[str]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT statement FROM pg_prepared_statements")
            return [text for (text,) in cursor.fetchall()]

    add_schedules(3)
    connection.settings_dict["DISABLE_SERVER_SIDE_CURSORS"] = True
    try:
        for _ in range(6):
            probe(START)
        assert prepared() == []
        connection.ensure_connection()
        raw = connection.connection
        raw.prepare_threshold = 2
        try:
            for _ in range(3):
                assert probe(START).due == FIRST_DUE
            (text,) = prepared()
            assert "EXISTS" in text and "next_run_at" in text
        finally:
            raw.prepare_threshold = None
            connection.close()  # the prepared statement goes with the connection
    finally:
        connection.settings_dict["DISABLE_SERVER_SIDE_CURSORS"] = False
    assert probe(START).due == FIRST_DUE
    (text,) = prepared()
    assert "EXISTS" in text and "next_run_at" in text


@pytest.mark.postgres
def test_the_prepared_probe_finds_the_outbox_through_its_partial_index() -> None:
    """A prepared statement gets a generic plan after five executions. The probe's states are
    in its text, so that plan still reads the outbox's partial index (``state = 'pending'``)
    of every partition; with the states as parameters it read every row of the ledger."""
    from scheduler_app.dispatch.probe import _compiled

    sql, params = _compiled(None)
    assert [name for name, _ in params] == ["p0"]  # only ``now``
    with connection.cursor() as cursor:
        cursor.execute("SET plan_cache_mode = force_generic_plan")
        cursor.execute("SET enable_seqscan = off")
        try:
            cursor.execute(f"PREPARE idle_probe AS {sql.native}")
            cursor.execute("EXPLAIN EXECUTE idle_probe('2026-01-01T00:00:00Z')")
            plan = "\n".join(line for (line,) in cursor.fetchall())
            cursor.execute("DEALLOCATE idle_probe")
        finally:
            cursor.execute("RESET plan_cache_mode")
            cursor.execute("RESET enable_seqscan")
    # The outbox's partial indexes, or that of the open rows (its predicate implies theirs).
    used = re.findall(r"(?:Scan on|Scan using) (scheduler_app_occurrence_\w+_idx)\b", plan)
    partial = ("_created_at_idx", "_not_before_idx", "_schedule_id_state_idx")
    assert used and all(name.endswith(partial) for name in used), plan
    assert "Seq Scan" not in plan, plan
