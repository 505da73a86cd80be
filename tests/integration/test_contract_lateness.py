"""Lateness classes through the contract and the service API."""

from __future__ import annotations

import json
from typing import Any

import pytest

from scheduler_app.clock import FakeClock
from scheduler_app.contract import ContractError, export_all, import_text
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.models import Schedule
from scheduler_app.services import create_schedule, update_schedule
from tests.integration.support import START

pytestmark = pytest.mark.django_db


def document(**policies: Any) -> str:
    return json.dumps(
        [
            {
                "key": "reminder",
                "target": {"type": "task", "task": "demo.ping"},
                "timing": {"kind": "cron", "rule": "0 9 * * *"},
                "policies": policies,
            }
        ]
    )


def test_a_document_class_sets_defaults_and_explicit_policies_win() -> None:
    clock = FakeClock(START)
    import_text(document(lateness_class="HUMAN_REMINDER", deadline=120), clock=clock)
    row = Schedule.objects.get()
    assert (row.lateness_class, row.max_lateness, row.misfire_policy, row.deadline) == (
        "human_reminder",
        60,
        "fire_once",
        120,
    )
    exported = json.loads(export_all(style="spec"))["schedules"][0]
    assert exported["policies"]["lateness_class"] == "HUMAN_REMINDER"
    assert (exported["misfire"], exported["max_lateness_s"]) == ("FIRE_ONCE", 60)
    # A re-import of the same document is unchanged; a new class with a kept policy keeps it.
    assert (
        import_text(document(lateness_class="human_reminder", deadline=120), clock=clock)
        .plan.changes[0]
        .action
        == "unchanged"
    )
    import_text(document(lateness_class="maintenance", misfire="fire_once"), clock=clock)
    row.refresh_from_db()
    assert (row.lateness_class, row.max_lateness, row.misfire_policy, row.deadline) == (
        "maintenance",
        3600,
        "fire_once",
        21600,
    )


def test_real_time_in_a_document_is_refused_with_its_path() -> None:
    with pytest.raises(ContractError) as caught:
        import_text(document(lateness_class="real_time"), clock=FakeClock(START))
    [problem] = caught.value.problems
    assert problem.path == "policies.lateness_class"
    assert "use a dedicated real-time system" in problem.message


def test_the_service_api_takes_a_class() -> None:
    clock = FakeClock(START)
    row = create_schedule(
        clock=clock, task="demo.ping", kind="cron", rule="0 9 * * *", lateness_class="maintenance"
    )
    assert (row.max_lateness, row.misfire_policy, row.deadline) == (3600, "fire_once", 21600)
    row = update_schedule(row.pk, expected_version=1, clock=clock, lateness_class="business_batch")
    assert (row.max_lateness, row.misfire_policy, row.deadline) == (900, "catch_up", 3600)
    with pytest.raises(ScheduleValidationError, match="dedicated real-time system"):
        create_schedule(
            clock=clock, task="demo.ping", kind="cron", rule="0 9 * * *", lateness_class="real_time"
        )
