"""The worker names the occurrence's slot (``scheduled_for``, the ledger's partition key) in
every statement keyed by its id, taking it from the message only as a hint: a message whose
slot is missing, malformed, or another occurrence's still claims its own occurrence (by id),
never another one, and never runs it twice."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from celery.result import EagerResult
from django.db import connection
from django.test.utils import CaptureQueriesContext

from project.celery import app
from scheduler_app.clock import FakeClock
from scheduler_app.db.cursors import prepares
from scheduler_app.handoff.protocol import HEADER, context_headers
from scheduler_app.models import Occurrence, OccurrenceState
from scheduler_app.signals import _record_revoked
from scheduler_app.worker import claiming
from scheduler_app.worker.receiving import mark_received
from tests.integration.support import START
from tests.integration.worker_support import due_one, fetch

pytestmark = pytest.mark.django_db
RUNS: list[str] = []


@app.task(name="tests.slot_counted")
def slot_counted(**kwargs: Any) -> str:
    RUNS.append("ran")
    return "done"


@pytest.fixture(autouse=True)
def _clean() -> Any:
    RUNS.clear()
    yield
    RUNS.clear()


def deliver(occurrence: Occurrence, clock: FakeClock, **header: Any) -> EagerResult:
    """``occurrence``'s message, its scheduler header changed by ``header`` (a key set to
    None is left out)."""
    fields = {**context_headers(occurrence), **header}
    fields = {key: value for key, value in fields.items() if value is not None}
    slot_counted.clock = clock  # type: ignore[attr-defined]
    try:
        return slot_counted.apply(kwargs={}, task_id=str(occurrence.pk), headers={HEADER: fields})
    finally:
        del slot_counted.clock  # type: ignore[attr-defined]


def two_due(clock: FakeClock) -> tuple[Occurrence, Occurrence]:
    first = due_one(clock, task="tests.slot_counted")
    clock.advance(timedelta(minutes=7))
    return first, due_one(clock, task="tests.slot_counted")


@pytest.mark.parametrize(
    "slot",
    [
        pytest.param("other", id="another occurrence's slot"),
        pytest.param("2001-01-01T00:00:00Z", id="a slot no row has"),
        pytest.param("not a date", id="malformed"),
        pytest.param("2026-01-01T00:00:00", id="naive"),
        pytest.param(None, id="missing (an older message)"),
    ],
)
def test_a_wrong_or_missing_slot_claims_its_own_occurrence_once(
    slot: str | None, django_capture_on_commit_callbacks: Any
) -> None:
    clock = FakeClock(START)
    mine, other = two_due(clock)
    forged = context_headers(other)["scheduled_for"] if slot == "other" else slot
    with django_capture_on_commit_callbacks(execute=True):
        result = deliver(mine, clock, scheduled_for=forged)
    assert result.state == "SUCCESS" and RUNS == ["ran"]
    assert (fetch(mine).state, fetch(mine).attempts) == (OccurrenceState.SUCCEEDED, 1)
    assert (fetch(other).state, fetch(other).attempts) == (OccurrenceState.DISPATCHED, 0)

    with django_capture_on_commit_callbacks(execute=True):
        deliver(mine, clock, scheduled_for=forged)  # the same message again: a duplicate
        deliver(mine, clock)  # and with the true slot
    assert RUNS == ["ran"]
    assert fetch(mine).attempts == 1
    assert fetch(other).state == OccurrenceState.DISPATCHED


def test_the_claim_refuses_a_running_occurrence_whatever_slot_the_message_names() -> None:
    clock = FakeClock(START)
    mine, other = two_due(clock)
    first = claiming.claim(
        mine.pk, owner="w1", now=clock.now(), lease=timedelta(seconds=60),
        scheduled_for=mine.scheduled_for,
    )  # fmt: skip
    assert first.claimed
    for slot in (mine.scheduled_for, other.scheduled_for, None):
        again = claiming.claim(
            mine.pk, owner="w2", now=clock.now(), lease=timedelta(seconds=60), scheduled_for=slot
        )
        assert (again.claimed, again.reason) == (False, "already_running")
    assert fetch(mine).lease_owner == "w1" and fetch(other).state == OccurrenceState.DISPATCHED


@pytest.mark.postgres
def test_every_statement_of_a_delivery_names_the_slot(
    django_capture_on_commit_callbacks: Any,
) -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock, task="tests.slot_counted")
    with (
        CaptureQueriesContext(connection) as queries,
        django_capture_on_commit_callbacks(execute=False),
    ):
        deliver(occurrence, clock)
    statements = [query["sql"] for query in queries.captured_queries]
    assert len(statements) == 2, statements  # the claim and the outcome
    for sql in statements:
        assert "scheduled_for =" in sql, sql
    # The attempt is closed in its own partition too (the attempts are partitioned alike).
    assert "a.scheduled_for = " in statements[1], statements[1]


def test_a_receipt_with_a_wrong_slot_marks_its_own_occurrence() -> None:
    clock = FakeClock(START)
    mine, other = two_due(clock)
    lease = timedelta(seconds=30)
    for slot in (mine.scheduled_for, other.scheduled_for, None):
        assert mark_received(mine.pk, node="n", now=clock.now(), lease=lease, scheduled_for=slot)
    assert fetch(mine).received_by == "n" and fetch(other).received_by == ""


def test_a_revoke_with_a_wrong_slot_ends_its_own_occurrence() -> None:
    clock = FakeClock(START)
    mine, other = two_due(clock)
    _record_revoked(str(mine.pk), str(mine.pk), False, other.scheduled_for)
    assert (fetch(mine).state, fetch(mine).reason) == (OccurrenceState.CANCELLED, "revoked")
    assert fetch(other).state == OccurrenceState.DISPATCHED


def _seven_deliveries(capture: Any) -> None:
    clock = FakeClock(START)
    for _ in range(7):
        occurrence = due_one(clock, task="tests.slot_counted")
        with capture(execute=True):
            deliver(occurrence, clock)
        clock.advance(timedelta(minutes=3))
    assert len(RUNS) == 7


def _prepared() -> list[tuple[str, int, int]]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements")
        return list(cursor.fetchall())


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)  # as a worker runs: no test transaction around it
def test_the_workers_statements_are_prepared_and_planned_once_by_default(
    django_capture_on_commit_callbacks: Any,
) -> None:
    """Fast by default (issue 39): with Django's own ``prepare_threshold=None`` the worker's
    claim and outcome are prepared and keep one generic plan; Django's queries stay unprepared
    and psycopg's threshold is left as the project set it."""
    assert "prepare_threshold" not in connection.settings_dict["OPTIONS"]
    assert prepares()
    _seven_deliveries(django_capture_on_commit_callbacks)
    prepared = _prepared()
    assert prepared, "nothing prepared"
    texts = [text for text, _, _ in prepared]
    assert any("fencing_token" in text for text in texts), texts  # the claim
    assert all(text.startswith(("\nWITH", "WITH", "SELECT (SELECT")) for text in texts), texts
    assert all(custom == 0 for _, _, custom in prepared), prepared
    assert sum(generic for _, generic, _ in prepared) >= 14, prepared
    assert connection.connection.prepare_threshold is None
    with connection.cursor() as cursor:
        cursor.execute("SHOW plan_cache_mode")
        assert cursor.fetchone() == ("force_generic_plan",)


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("setting", "pooled"), [(False, False), (None, True)], ids=["turned-off", "pooler"]
)
def test_nothing_is_prepared_when_turned_off_or_behind_a_transaction_pooler(
    django_capture_on_commit_callbacks: Any, settings: Any, setting: bool | None, pooled: bool
) -> None:
    """``SCHEDULER_PREPARED_STATEMENTS = False``, or left to its default with
    ``DISABLE_SERVER_SIDE_CURSORS`` (PgBouncer in transaction mode): no statement is prepared."""
    settings.SCHEDULER_PREPARED_STATEMENTS = setting
    old = connection.settings_dict.get("DISABLE_SERVER_SIDE_CURSORS", False)
    connection.settings_dict["DISABLE_SERVER_SIDE_CURSORS"] = pooled
    try:
        assert not prepares()
        _seven_deliveries(django_capture_on_commit_callbacks)
        assert _prepared() == []
    finally:
        connection.settings_dict["DISABLE_SERVER_SIDE_CURSORS"] = old
