"""Migration 0019 moves a schedule's runtime into its own table: on a database with rows, every
value survives, forward and back, and the versions and occurrences keep their schedule."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from scheduler_app.models import Occurrence, Schedule, ScheduleRuntime
from tests.integration.support import START

pytestmark = pytest.mark.django_db(transaction=True)
BEFORE = ("scheduler_app", "0018_drop_key_unique")
AFTER = ("scheduler_app", "0019_schedule_runtime")
RUNTIME = {
    "status": "paused",
    "interval_mode": "fixed_delay",
    "next_run_at": START + timedelta(hours=1),
    "last_scheduled_for": START,
    "missed_count": 3,
    "skipped_count": 4,
    "caught_up_count": 5,
    "occurrence_count": 6,
    "last_error": "zone vanished",
    "updated_at": START + timedelta(minutes=7),
}
DEFINITION = {"name": "nightly", "task": "demo.ping", "kind": "cron", "rule": "0 3 * * *"}
OTHER = {"task": "demo.ping", "kind": "interval", "rule": "60", "next_run_at": START}


def migrate(target: tuple[str, str] | None) -> Any:
    """To ``target`` (None: the latest); returns the executor (its loader knows the states)."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([target] if target else executor.loader.graph.leaf_nodes())
    return executor


def old_rows(executor: Any) -> tuple[Any, Any, Any]:
    apps = executor.loader.project_state(BEFORE).apps
    return tuple(
        apps.get_model("scheduler_app", name)
        for name in ("Schedule", "ScheduleVersion", "Occurrence")
    )


def populate(executor: Any) -> uuid.UUID:
    schedule_model, version_model, occurrence_model = old_rows(executor)
    made = schedule_model.objects.create(**DEFINITION, **RUNTIME, created_at=START)
    schedule_model.objects.create(**OTHER, created_at=START, updated_at=START)
    version = version_model.objects.create(
        id=uuid.uuid4(), schedule=made, version=1, definition={}, created_at=START
    )
    at_start = ("scheduled_for", "window_start", "window_end", "not_before", "created_at")
    occurrence_model.objects.create(
        id=uuid.uuid4(),
        schedule=made,
        schedule_version=version,
        idempotency_key="k",
        trigger="rule",
        **dict.fromkeys(at_start, START),
    )
    return made.pk


def test_a_populated_database_keeps_every_runtime_value_forward_and_back() -> None:
    executor = migrate(BEFORE)
    try:
        pk = populate(executor)
        migrate(AFTER)
        stored = Schedule.objects.get(pk=pk)
        assert {name: getattr(stored, name) for name in RUNTIME} == RUNTIME
        assert {name: getattr(stored, name) for name in DEFINITION} == DEFINITION
        assert ScheduleRuntime.objects.count() == Schedule.objects.count() == 2
        assert stored.versions.count() == 1
        assert Occurrence.objects.get(schedule_id=pk).schedule == stored
        executor = migrate(BEFORE)
        schedule_model = old_rows(executor)[0]
        back = schedule_model.objects.get(pk=pk)
        assert {name: getattr(back, name) for name in RUNTIME} == RUNTIME
    finally:
        migrate(None)
