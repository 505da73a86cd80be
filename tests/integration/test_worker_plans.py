"""The plans PostgreSQL makes for the worker's claim and outcome statements.

A project that opts in to prepared statements (``prepare_threshold``) and generic plans
(``plan_cache_mode = force_generic_plan``, docs/deployment.md) gets one plan per statement for
any values: it must still read the ledger through its unique and partial indexes, and still
run each occurrence once. The claim's update must find its row by id, never by joining the
lookup with every row of the slot (a burst puts thousands of rows in one slot)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection

from scheduler_app.clock import FakeClock
from scheduler_app.models import Occurrence, OccurrenceState
from scheduler_app.worker import sql as worker_sql
from tests.integration.support import START, MemoryPublisher, schedule, ticker
from tests.integration.test_worker_slot import RUNS, deliver
from tests.integration.worker_support import due_one, fetch

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

SCAN = re.compile(
    r"(Seq Scan|Index Scan|Index Only Scan|Bitmap Index Scan) (?:using (\S+) )?on (\S+)"
)


@pytest.fixture
def generic_plans() -> Iterator[None]:
    with connection.cursor() as cursor:
        cursor.execute("SET plan_cache_mode = force_generic_plan")
        cursor.execute("SET enable_seqscan = off")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET plan_cache_mode")
            cursor.execute("RESET enable_seqscan")


def generic_plan(sql: worker_sql.Statement, params: dict[str, Any]) -> str:
    """EXPLAIN of ``sql``'s generic plan for ``params`` (prepared, then deallocated)."""
    values = sql.values(params)
    with connection.cursor() as cursor:
        cursor.execute(f"PREPARE worker_plan AS {sql.native}")
        try:
            marks = ", ".join(["%s"] * len(values))
            cursor.execute(f"EXPLAIN EXECUTE worker_plan({marks})", values)
            return "\n".join(line for (line,) in cursor.fetchall())
        finally:
            cursor.execute("DEALLOCATE worker_plan")


def ledger_scans(plan: str) -> list[tuple[str, str]]:
    """(scan kind, index) of every scan of an occurrence or attempt partition."""
    return [
        (kind, index or "")
        for kind, index, table in SCAN.findall(plan)
        if table.startswith(("scheduler_app_occurrence_", "scheduler_app_occurrenceattempt_"))
    ]


def claim_params(occurrence: Occurrence, clock: FakeClock) -> dict[str, Any]:
    """What ``worker.sql.claim`` binds for ``occurrence`` now (a worker "w")."""
    return {
        "id": str(occurrence.pk),
        "slot": occurrence.scheduled_for,
        "owner": "w",
        "worker": "w",
        "now": clock.now(),
        "lease_until": clock.now() + timedelta(seconds=60),
        "early": clock.now(),
        "task": occurrence.task,
        "code": "code",
    }


def test_the_constants_are_in_the_text_and_only_values_are_parameters() -> None:
    claim = worker_sql._claim_sql(True, "TRUE", "TRUE", "AND o.scheduled_for = %(slot)s")
    finish = worker_sql._finish_sql(True, True)
    retry = worker_sql._retry_sql("AND o.scheduled_for = %(slot)s")
    for statement in (claim, finish, retry):
        assert not set(statement.names) & set(worker_sql._CONSTANTS), statement.names
    assert "b.state = 'buffered'" in finish.text
    assert "o.state IN ('pending', 'dispatched', 'retrying')" in claim.text


def test_the_generic_plan_of_the_outcome_reads_the_open_rows_by_their_partial_index(
    generic_plans: None,
) -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock, task="tests.slot_counted")
    params: dict[str, Any] = {
        "id": str(occurrence.pk),
        "slot": occurrence.scheduled_for,
        "schedule_id": occurrence.schedule_id,
        "token": 1,
        "state": OccurrenceState.SUCCEEDED.value,
        "reason": "",
        "now": clock.now(),
        "error": "",
    }
    plan = generic_plan(worker_sql._finish_sql(False, True), params)
    scans = ledger_scans(plan)
    assert scans and not [scan for scan in scans if scan[0] == "Seq Scan"], plan
    # The buffered check may read the partial index of the open rows (the planner picks per
    # partition by cost): with the state as a parameter no partition could.
    buffered = [index for _, index in scans if index.endswith("_schedule_id_state_idx")]
    assert buffered, plan


def test_the_generic_plan_of_the_claim_reads_no_partition_whole(generic_plans: None) -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock, task="tests.slot_counted")
    params = claim_params(occurrence, clock)
    for slot in ("AND o.scheduled_for = %(slot)s", ""):
        plan = generic_plan(worker_sql._claim_sql(True, "TRUE", "TRUE", slot), params)
        scans = ledger_scans(plan)
        assert scans and not [scan for scan in scans if scan[0] == "Seq Scan"], plan


def test_with_generic_plans_every_occurrence_runs_once(
    django_capture_on_commit_callbacks: Any,
) -> None:
    """Prepared from the first run (threshold 0), planned once: 7 deliveries and their
    duplicates, each occurrence run once and recorded."""
    connection.ensure_connection()
    raw = connection.connection
    raw.prepare_threshold = 0
    try:
        with connection.cursor() as cursor:
            cursor.execute("SET plan_cache_mode = force_generic_plan")
        clock = FakeClock(START)
        delivered = []
        for _ in range(7):
            occurrence = due_one(clock, task="tests.slot_counted")
            with django_capture_on_commit_callbacks(execute=True):
                deliver(occurrence, clock)
                deliver(occurrence, clock)  # a duplicate delivery
            delivered.append(fetch(occurrence))
            clock.advance(timedelta(minutes=3))
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
                " WHERE statement LIKE %s",
                ["%WITH cur AS%"],
            )
            plans = cursor.fetchall()
    finally:
        raw.prepare_threshold = None
        connection.close()  # the prepared statements and the setting go with the connection
    assert len(RUNS) == 7
    assert [(o.state, o.attempts) for o in delivered] == [(OccurrenceState.SUCCEEDED, 1)] * 7
    assert plans == [(14, 0)]  # the claim: 7 runs and 7 refused duplicates, never replanned


def many_in_one_slot(clock: FakeClock, count: int) -> Occurrence:
    """``count`` every-minute schedules due at one instant, ticked: the last one's row."""
    targets = [
        schedule(clock, kind="interval", rule="60s", task="tests.slot_counted")
        for _ in range(count)
    ]
    (due,) = {target.next_run_at for target in targets}
    assert due is not None
    clock.set(due)
    ticker(MemoryPublisher(), clock).tick()
    return fetch(Occurrence.objects.get(schedule=targets[-1]))


def lookup_joins(node: dict[str, Any]) -> list[tuple[str, int]]:
    """(join filter, rows it removed) of every join with the claim's lookup (the ``cur`` CTE)
    in an ``EXPLAIN (ANALYZE, FORMAT JSON)`` plan."""
    found = []
    condition = str(node.get("Join Filter", ""))
    if re.search(r"\bcur(_\d+)?\.", condition):
        found.append((condition, int(node.get("Rows Removed by Join Filter", 0))))
    for child in node.get("Plans", []):
        found.extend(lookup_joins(child))
    return found


def test_the_claim_finds_its_row_by_id_among_a_full_slot() -> None:
    """Fifty occurrences in one slot: the claim's update reads its own row, not each of the
    fifty joined with the lookup (the plan that made a 1,000-row slot cost 3.8 ms a claim).
    Only joins with the lookup count: how the lookup itself joins its row with the schedule
    is the planner's choice (on a table this small a seq scan with a join filter)."""
    clock = FakeClock(START)
    occurrence = many_in_one_slot(clock, 50)
    params = claim_params(occurrence, clock)
    sql = worker_sql._claim_sql(True, "TRUE", "TRUE", "AND o.scheduled_for = %(slot)s")
    with connection.cursor() as cursor:
        cursor.execute("SAVEPOINT claim_plan")
        try:
            cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql.text}", params)
            (document,) = cursor.fetchone()
        finally:
            cursor.execute("ROLLBACK TO SAVEPOINT claim_plan")
    plan = json.loads(document) if isinstance(document, str) else document
    joins = lookup_joins(plan[0]["Plan"])
    assert not [removed for _, removed in joins if removed >= 10], (joins, plan)
    assert Occurrence.objects.filter(scheduled_for=occurrence.scheduled_for).count() == 50
