"""The search budget at every way a rule comes in (security review 4, High): ``@scheduled`` +
``sync_schedules`` (dry run too), a schedule.v1 import (``--dry-run`` too) and
``schedule_preview`` ask the same question as the services (``first_slot``: the first slot,
the one before it and the two after it, within the settings' budget), so the review's rule is
refused with the same message on ``rule``, naming the task or the document, before anything
is written. The admin form: ``admin/test_search_budget_form.py``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from pytest_django.fixtures import Settings

from project.celery import app as celery_app
from project.demo.tasks import ping
from scheduler_app.authoring.declarations import ScheduleRegistry, isolated_registry, scheduled
from scheduler_app.authoring.sync import SyncReport, sync_schedules
from scheduler_app.clock import FakeClock
from scheduler_app.contract import ContractError, import_text
from scheduler_app.models import Schedule
from tests.integration.support import schedule

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 3, 20, tzinfo=UTC)
RARER = "the rule's slots are rarer than the scheduler searches for"
FINDING = {
    "kind": "solar",
    "rule": "sunrise 89.5 0",
    "timezone": "UTC",
    "active_window": "SAT 01:08-01:09",
    "window_policy": "skip",
}
"""The review's rule: its one slot (2027-03-20 01:08 UTC) is found, the ones around it never."""


@pytest.fixture
def declared() -> Iterator[ScheduleRegistry]:
    celery_app.loader.import_default_modules()  # before isolating: see isolated_registry()
    with isolated_registry() as fresh:
        yield fresh


@pytest.fixture(autouse=True)
def demo_tasks_allowed(settings: Settings) -> None:
    settings.SCHEDULER_ALLOWED_TASKS = ("demo.*",)


def declare_the_finding(objective: str = "polar") -> None:
    scheduled(
        solar="sunrise 89.5 0",
        timezone="UTC",
        window="SAT 01:08-01:09",
        window_policy="skip",
        objective=objective,
    )(ping)


def only_error(report: SyncReport) -> str:
    assert [entry.action for entry in report.entries] == ["error"], report.entries
    return report.entries[0].line()


# -- @scheduled + sync ----------------------------------------------------------------------


@pytest.mark.parametrize("dry_run", [True, False])
def test_sync_refuses_the_findings_declaration_naming_its_task(
    declared: ScheduleRegistry, dry_run: bool
) -> None:
    declare_the_finding()
    line = only_error(sync_schedules(clock=FakeClock(NOW), declarations=declared, dry_run=dry_run))
    assert line.startswith("error     demo.ping:polar (demo.ping): rule: ")
    assert RARER in line and "SCHEDULER_SEARCH_SPAN_DAYS" in line
    assert not Schedule.objects.exists()


def test_a_dry_run_of_a_declaration_changed_to_the_findings_rule_says_it_will_fail(
    declared: ScheduleRegistry,
) -> None:
    scheduled(cron="0 9 * * *", objective="polar")(ping)
    assert sync_schedules(clock=FakeClock(NOW), declarations=declared).ok
    with isolated_registry() as changed:
        declare_the_finding()
        for dry_run in (True, False):
            report = sync_schedules(clock=FakeClock(NOW), declarations=changed, dry_run=dry_run)
            assert RARER in only_error(report)
    assert Schedule.objects.get().rule == "0 9 * * *"


# -- schedule.v1 import ---------------------------------------------------------------------


def documents(*timings: dict[str, str]) -> str:
    """One document per timing, keyed ``k0``, ``k1`` ..."""
    return json.dumps(
        [
            {"key": f"k{index}", "target": {"task": "demo.ping"}, "timing": timing}
            for index, timing in enumerate(timings)
        ]
    )


@pytest.mark.parametrize("dry_run", [True, False])
def test_an_import_refuses_the_findings_rule_on_its_document(dry_run: bool) -> None:
    daily = {"kind": "cron", "rule": "0 9 * * *", "timezone": "UTC"}
    with pytest.raises(ContractError) as caught:
        import_text(documents(daily, FINDING), clock=FakeClock(NOW), dry_run=dry_run)
    problems = caught.value.problems
    # Formerly planned, then refused by the services at apply time as a problem of "file".
    assert [(p.label, p.path) for p in problems] == [("schedules[1]", "timing.rule")]
    assert problems[0].message.startswith(RARER)
    assert not Schedule.objects.exists()


def test_an_import_that_changes_a_schedule_to_the_findings_rule_names_the_document() -> None:
    schedule(FakeClock(NOW), kind="cron", rule="0 9 * * *", timezone="UTC", key="k0")
    with pytest.raises(ContractError) as caught:
        import_text(documents(FINDING), clock=FakeClock(NOW), dry_run=True)
    [problem] = caught.value.problems
    assert (problem.label, problem.path) == ("schedules[0]", "timing.rule")
    assert problem.message.startswith(RARER)
    assert Schedule.objects.get().rule == "0 9 * * *"


# -- schedule_preview -----------------------------------------------------------------------

SATURDAYS_ONLY = [
    "--cron",
    "0 9 * * *",
    "--window",
    "SAT 08:00-10:00",
    "--window-policy",
    "skip",
    "--after",
    "2026-03-16T00:00:00Z",  # a Monday: five daily candidates are refused before Saturday
    "--count",
    "3",
]


def preview(*args: str) -> str:
    out = StringIO()
    call_command("schedule_preview", *args, stdout=out)
    return out.getvalue()


def test_the_preview_command_searches_with_the_settings_budget(
    settings: Settings,
) -> None:
    assert preview(*SATURDAYS_ONLY).count("Sat 2026-") == 3  # the default budget sees them
    settings.SCHEDULER_SEARCH_SPAN_DAYS = 1
    table = preview(*SATURDAYS_ONLY)
    assert "Sat 2026-" not in table
    assert "No slots: the rule does not fire" not in table  # it does; the search stopped
    assert "Stopped: " + RARER in table
    assert "no slot within 1 days after 2026-03-16 00:00 UTC" in table
    answer = json.loads(preview(*SATURDAYS_ONLY, "--json"))
    assert answer["slots"] == []
    assert answer["stopped"].startswith(RARER)


def test_the_preview_command_stops_after_the_slots_it_found_and_says_why(
    settings: Settings,
) -> None:
    settings.SCHEDULER_SEARCH_CANDIDATES = 3  # Latvia's Christmas: three holidays in a row
    daily = ["--cron", "0 9 * * *", "--tz", "Europe/Riga", "--exclude-holidays", "LV"]
    table = preview(*daily, "--after", "2026-12-22T12:00:00Z", "--count", "3")
    slot, stopped = table.splitlines()[4:]  # after the description, heading and header
    assert slot == "Wed 2026-12-23 09:00:00 +02:00  2026-12-23T07:00:00Z"
    assert stopped == f"Stopped: {RARER}: 3 candidate times after 2026-12-23 07:00 UTC " + (
        "without a slot (the search budget, SCHEDULER_SEARCH_CANDIDATES); the active window, "
        "holidays, bounds or max_count reject nearly every time the rule produces. widen the "
        "active window, drop the holiday exclusion or max_count, pick a rule that fires more "
        "often, or raise SCHEDULER_SEARCH_SPAN_DAYS / SCHEDULER_SEARCH_CANDIDATES / "
        "SCHEDULER_SEARCH_SECONDS"
    )


def test_the_preview_command_names_a_bad_budget_setting(settings: Settings) -> None:
    settings.SCHEDULER_SEARCH_CANDIDATES = "lots"
    with pytest.raises(CommandError, match="SCHEDULER_SEARCH_CANDIDATES") as caught:
        preview(*SATURDAYS_ONLY)
    assert caught.value.returncode == 2
