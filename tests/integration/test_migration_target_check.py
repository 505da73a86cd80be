"""Migration 0011 (the target CHECK constraints) names rows it would refuse, and the fix."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from scheduler_app.clock import FakeClock
from scheduler_app.models import Schedule
from tests.integration.support import START, schedule

pytestmark = pytest.mark.django_db(transaction=True)
BEFORE = [("scheduler_app", "0010_handoff_calendar_fields")]
AFTER = [("scheduler_app", "0011_target_check")]


def migrate(target: list[tuple[str, str]] | None) -> None:
    """To ``target``; None: to the latest migrations (where the other tests expect it)."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target or executor.loader.graph.leaf_nodes())


def test_a_stored_unknown_target_stops_the_migration_with_the_fix() -> None:
    odd = schedule(FakeClock(START), kind="interval", rule="60")  # today's columns
    migrate(BEFORE)
    try:
        Schedule.objects.filter(pk=odd.pk).update(target="rq")
        with pytest.raises(RuntimeError, match=r"target is 'rq', not one of celery, django_tasks"):
            migrate(AFTER)
        Schedule.objects.filter(pk=odd.pk).update(target="celery")
    finally:
        migrate(None)
