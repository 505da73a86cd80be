"""``backfill --dry-run`` shows the plan of any size and says the real run needs ``--yes``;
the cost estimate is a field the services accept (validated), so the plan prices it."""

from __future__ import annotations

from datetime import UTC, datetime
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from scheduler_app import services
from scheduler_app.clock import FakeClock
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.models import Occurrence, Schedule

pytestmark = pytest.mark.django_db
RANGE = ("--start", "2026-01-01T00:00", "--end", "2026-01-10T23:00")


@pytest.fixture(autouse=True)
def demo_tasks_allowed(settings: object) -> None:
    settings.SCHEDULER_ALLOWED_TASKS = ("demo.*",)  # type: ignore[attr-defined]


def nightly(**fields: Any) -> Schedule:
    return services.create_schedule(
        task="demo.ping",
        kind="cron",
        rule="0 6 * * *",
        timezone="Europe/Riga",
        key="nightly",
        clock=FakeClock(datetime(2026, 1, 1, tzinfo=UTC)),
        **fields,
    )


def backfill(*args: str) -> str:
    out = StringIO()
    call_command("backfill", "nightly", *RANGE, *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_a_dry_run_above_the_limit_shows_the_plan_and_what_the_run_needs(
    settings: object,
) -> None:
    settings.SCHEDULER_BACKFILL_MAX = 3  # type: ignore[attr-defined]
    nightly(cost_estimate=0.5)
    plan = backfill("--dry-run")
    assert "10 slot(s) in range, 0 already have an occurrence, 10 new" in plan
    assert "estimated cost 5" in plan
    assert "more than --max 3: it needs --yes" in plan
    assert not Occurrence.objects.exists()
    with pytest.raises(CommandError, match="more than --max 3; narrow the range or add --yes"):
        backfill()


def test_the_cost_estimate_is_set_and_changed_through_the_services() -> None:
    schedule = nightly(cost_estimate=2)
    assert schedule.cost_estimate == 2.0
    changed = services.update_schedule(schedule.pk, expected_version=1, cost_estimate=None)
    assert (changed.cost_estimate, changed.version) == (None, 1)


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), 1e13, "cheap", True])
def test_a_cost_estimate_that_is_not_a_cost_is_refused(bad: object) -> None:
    with pytest.raises(ScheduleValidationError, match="not a cost") as refused:
        nightly(cost_estimate=bad)
    assert refused.value.field == "cost_estimate"
    assert not Schedule.objects.exists()
