"""What one scheduled delivery costs in SQL on the happy path (a counting test, not a timing
one): on PostgreSQL the claim is one statement and the outcome one more."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from project.demo.tasks import ping
from scheduler_app.clock import FakeClock
from scheduler_app.models import OccurrenceAttempt, OccurrenceState
from tests.integration.support import START
from tests.integration.worker_support import due_one, fetch, run

pytestmark = pytest.mark.django_db


def run_counted(on_commit: Any, *, receivers: bool = True) -> tuple[list[str], Any]:
    """Run one due occurrence; the statements it took, ``occurrence_finished``'s receivers
    included (they run on commit: at once on a worker, which runs in autocommit)."""
    clock = FakeClock(START)
    occurrence = due_one(clock, task="demo.ping")
    with CaptureQueriesContext(connection) as queries, on_commit(execute=receivers):
        result = run(ping, occurrence, clock)
    assert result.state == "SUCCESS"
    row = fetch(occurrence)
    assert (row.state, row.attempts) == (OccurrenceState.SUCCEEDED, 1)
    attempt = OccurrenceAttempt.objects.get(occurrence=row)
    assert (attempt.outcome, attempt.finished_at) == ("succeeded", row.finished_at)
    return [query["sql"] for query in queries.captured_queries], row


@pytest.mark.postgres
def test_the_worker_itself_takes_two_statements_on_postgresql(
    django_capture_on_commit_callbacks: Any,
) -> None:
    statements, _ = run_counted(django_capture_on_commit_callbacks, receivers=False)
    assert [s.split(None, 2)[:2] for s in statements] == [["WITH", "cur"], ["WITH", "locked"]]


@pytest.mark.postgres
def test_queries_per_occurrence_on_postgresql(django_capture_on_commit_callbacks: Any) -> None:
    """Two for the worker and none for ``occurrence_finished``'s monitoring receiver: the
    outcome hands it the schedule row it locked, which shows nothing to reset
    (``consecutive_failures`` is 0) and nothing to archive."""
    statements, _ = run_counted(django_capture_on_commit_callbacks)
    assert len(statements) == 2, statements


def test_queries_per_occurrence_on_sqlite(django_capture_on_commit_callbacks: Any) -> None:
    """The ORM path: bounded, if not as small (18 since a success moves the schedule's
    ``last_success_at``, one ``UPDATE``; PostgreSQL folds it into the outcome's statement)."""
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's count")
    statements, _ = run_counted(django_capture_on_commit_callbacks)
    assert len(statements) <= 18, statements
    assert sum("last_success_at" in s and s.startswith("UPDATE") for s in statements) == 1


def test_the_outcome_hands_its_locked_schedule_to_the_receivers(
    django_capture_on_commit_callbacks: Any,
) -> None:
    """On PostgreSQL ``occurrence_finished`` carries ``schedule=``, the row the outcome's
    statement locked, so receivers need not read it again; the occurrence is the ended row."""
    from scheduler_app import events

    if connection.vendor != "postgresql":
        pytest.skip("the one-statement outcome is PostgreSQL's")
    seen: list[dict[str, Any]] = []

    def receiver(sender: Any, **kwargs: Any) -> None:
        seen.append(kwargs)

    events.occurrence_finished.connect(receiver)
    try:
        _, row = run_counted(django_capture_on_commit_callbacks)
    finally:
        events.occurrence_finished.disconnect(receiver)
    (sent,) = seen
    assert sent["state"] == OccurrenceState.SUCCEEDED
    assert sent["schedule"].pk == row.schedule_id
    assert sent["schedule"].consecutive_failures == 0
    assert (sent["occurrence"].state, sent["occurrence"].finished_at) == (
        OccurrenceState.SUCCEEDED,
        row.finished_at,
    )
    assert sent["occurrence"].schedule.tenant == row.schedule.tenant
