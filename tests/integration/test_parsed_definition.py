"""A definition parsed once: ``parse_definition`` builds it (defaults, canonical form, checks,
timing) and ``create_schedule(definition=...)`` stores it as it is. The sync of ``@scheduled``,
the import of a schedule.v1 file and the admin's add and change pages hand the services the
definition they parsed, so a created or changed schedule's definition is checked exactly once
on each of these paths."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django_webtest import DjangoTestApp

from project.celery import app as celery_app
from project.demo.tasks import echo
from scheduler_app.authoring import importing
from scheduler_app.authoring.declarations import ScheduleRegistry, isolated_registry, scheduled
from scheduler_app.authoring.sync import sync_schedules
from scheduler_app.clock import FakeClock
from scheduler_app.definition import parsed
from scheduler_app.definition.policies import CatchUp
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.models import Schedule, ScheduleVersion
from scheduler_app.safety.actors import COMMAND
from scheduler_app.services import Definition, create_schedule, parse_definition, update_schedule
from scheduler_app.services import schedules as schedule_services
from tests.integration.admin.support import (
    A_NEW_SCHEDULE,
    ADD_URL,
    change_url,
    page_errors,
    schedule_form,
    submit,
)
from tests.integration.support import START, TASK

pytestmark = pytest.mark.django_db


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every definition ``validate_definition`` checks, in order: where a definition is parsed,
    and where ``update_schedule`` checks the changes it was given as keywords."""
    seen: list[dict[str, Any]] = []
    real = parsed.validate_definition

    def counted(values: dict[str, Any]) -> Any:
        seen.append(dict(values))
        return real(values)

    monkeypatch.setattr(parsed, "validate_definition", counted)
    monkeypatch.setattr(schedule_services, "validate_definition", counted)
    return seen


def test_a_definition_is_its_canonical_fields_and_their_timing() -> None:
    definition = parse_definition(
        {"task": TASK, "kind": "INTERVAL", "rule": "15m", "timezone": "Europe/Riga"},
        now=START,
    )
    assert isinstance(definition, Definition)
    columns = definition.columns
    assert (columns["kind"], columns["rule"], columns["timezone"]) == (
        "interval",
        "900",
        "Europe/Riga",
    )
    assert columns["misfire_policy"] == "catch_up"  # the store's default
    assert columns["anchor"] == START.replace(microsecond=0)
    assert definition.timing.kind == "interval"
    columns["rule"] = "60"  # a copy: the definition is as it was checked
    assert definition.columns["rule"] == "900"


def test_nothing_changes_a_definition_after_its_checks() -> None:
    kwargs = {"report": "daily"}
    definition = parse_definition(
        {"task": TASK, "kind": "cron", "rule": "0 9 * * *", "kwargs": kwargs}, now=START
    )
    kwargs["report"] = "x" * 100_000  # the caller's own dict, changed after parsing
    definition.columns["kwargs"]["password"] = "hunter2"  # a copy of what was checked
    definition.columns["rule"] = "* * * * *"
    row = create_schedule(definition=definition, clock=FakeClock(START))
    assert (row.kwargs, row.rule) == ({"report": "daily"}, "0 9 * * *")


def test_a_definition_is_built_only_by_parsing_it() -> None:
    checked = parse_definition({"task": TASK, "kind": "cron", "rule": "0 9 * * *"}, now=START)
    with pytest.raises(TypeError, match="parse_definition"):
        Definition(
            {"task": "celery.backend_cleanup", "kind": "cron", "rule": "* * * * *"}, checked.timing
        )


def test_fields_that_are_not_part_of_a_definition_are_left_out() -> None:
    definition = parse_definition(
        {"task": TASK, "kind": "cron", "rule": "0 9 * * *", "name": "daily", "owner": None},
        now=START,
    )
    assert "name" not in definition.columns and "owner" not in definition.columns


def test_the_lateness_class_fills_in_and_kept_fields_win() -> None:
    given = {"task": TASK, "kind": "cron", "rule": "0 9 * * *", "lateness_class": "maintenance"}
    classed = parse_definition(given, now=START)
    assert classed.columns["misfire_policy"] == "fire_once"
    kept = parse_definition(given, now=START, kept={"misfire_policy": "skip"})
    assert kept.columns["misfire_policy"] == "skip"


def test_an_error_names_the_field_as_given() -> None:
    with pytest.raises(ScheduleValidationError) as caught:
        parse_definition({"task": TASK, "kind": "cron", "rule": "61 * * * *"}, now=START)
    assert caught.value.field == "cron.minute"
    with pytest.raises(ScheduleValidationError) as caught:
        parse_definition(
            {"task": TASK, "kind": "cron", "rule": "0 9 * * *", "overlap_policy": "sometimes"},
            now=START,
        )
    assert caught.value.field == "overlap_policy"


def test_the_services_store_a_parsed_definition_without_checking_it_again(
    checks: list[dict[str, Any]],
) -> None:
    definition = parse_definition({"task": TASK, "kind": "cron", "rule": "0 9 * * *"}, now=START)
    assert len(checks) == 1
    row = create_schedule(definition=definition, clock=FakeClock(START), user=COMMAND, name="nine")
    assert len(checks) == 1  # not parsed again
    assert (row.kind, row.rule, row.name, row.version) == ("cron", "0 9 * * *", "nine", 1)
    assert row.next_run_at == datetime(2026, 1, 5, 9, tzinfo=UTC)
    stored = ScheduleVersion.objects.get(schedule=row).definition
    assert (stored["kind"], stored["rule"]) == ("cron", "0 9 * * *")


def test_keywords_still_work_and_are_parsed_once(checks: list[dict[str, Any]]) -> None:
    row = create_schedule(clock=FakeClock(START), task=TASK, kind="cron", rule="0 9 * * *")
    assert len(checks) == 1
    assert row.rule == "0 9 * * *"


@pytest.mark.parametrize("field", ["task", "rule", "misfire_policy", "text"])
def test_a_field_given_beside_the_definition_and_in_it_is_refused(field: str) -> None:
    definition = parse_definition({"task": TASK, "kind": "cron", "rule": "0 9 * * *"}, now=START)
    with pytest.raises(ScheduleValidationError) as caught:
        create_schedule(definition=definition, clock=FakeClock(START), **{field: "x"})
    assert (caught.value.field, caught.value.code) == (field, "given_twice")
    assert not Schedule.objects.exists()


def test_a_parsed_definition_still_needs_a_future_slot() -> None:
    past = (START - timedelta(days=1)).isoformat()
    definition = parse_definition({"task": TASK, "kind": "once", "rule": past}, now=START)
    with pytest.raises(ScheduleValidationError) as caught:
        create_schedule(definition=definition, clock=FakeClock(START))
    assert caught.value.code == "no_future_slot"
    assert not Schedule.objects.exists()


@pytest.fixture
def declared() -> Iterator[ScheduleRegistry]:
    celery_app.loader.import_default_modules()  # before isolating: see isolated_registry()
    with isolated_registry() as fresh:
        yield fresh


def test_a_declaration_is_parsed_once_on_its_way_to_the_store(
    declared: ScheduleRegistry, checks: list[dict[str, Any]]
) -> None:
    scheduled(cron="30 6 * * *", misfire=CatchUp(window="2h", limit=3), objective="dawn")(echo)
    report = sync_schedules(clock=FakeClock(START), declarations=declared)
    assert [entry.action for entry in report.entries] == ["create"]
    assert len(checks) == 1
    row = Schedule.objects.get(key="demo.echo:dawn")
    assert (row.misfire_policy, row.catch_up_window, row.catch_up_limit) == ("catch_up", 7200, 3)


def test_an_imported_schedule_is_parsed_once_on_its_way_to_the_store(
    checks: list[dict[str, Any]],
) -> None:
    wanted = importing.Desired(
        label="file.json#0",
        fields={"task": TASK, "kind": "cron", "rule": "0 7 * * 1-5", "key": "weekday-seven"},
    )
    now = datetime(2026, 3, 2, 12, tzinfo=UTC)
    plan = importing.plan([wanted], now)
    assert not plan.problems and [c.action for c in plan.changes] == ["create"]
    [row] = importing.apply(plan.changes, clock=FakeClock(now))
    assert len(checks) == 1
    assert (row.key, row.rule) == ("weekday-seven", "0 7 * * 1-5")


def test_a_schedule_added_from_the_rendered_admin_page_is_parsed_once(
    django_app: DjangoTestApp, checks: list[dict[str, Any]]
) -> None:
    admin = User.objects.create_superuser("admin", "admin@example.com", "pw")
    form = schedule_form(django_app, ADD_URL, admin)
    response = submit(form, "_save", **A_NEW_SCHEDULE)
    assert response.status_code == 302, page_errors(response)
    assert len(checks) == 1  # the form's check; the services store what it parsed
    stored = Schedule.objects.get()
    assert (stored.task, stored.name) == (A_NEW_SCHEDULE["task"], A_NEW_SCHEDULE["name"])


def test_a_schedule_changed_from_the_rendered_admin_page_is_parsed_once(
    django_app: DjangoTestApp, checks: list[dict[str, Any]]
) -> None:
    admin = User.objects.create_superuser("admin", "admin@example.com", "pw")
    schedule = create_schedule(clock=FakeClock(START), task=TASK, kind="cron", rule="0 9 * * *")
    form = schedule_form(django_app, change_url(schedule), admin)
    checks.clear()
    response = submit(form, "_save", repeat="advanced", rule="30 9 * * *", max_attempts="5")
    assert response.status_code == 302, page_errors(response)
    assert len(checks) == 1  # the form's check; the services store what it parsed
    schedule.refresh_from_db()
    assert (schedule.rule, schedule.max_attempts, schedule.version) == ("30 9 * * *", 5, 2)


def test_an_update_with_a_definition_changes_what_differs_and_checks_nothing_again(
    checks: list[dict[str, Any]],
) -> None:
    clock = FakeClock(START)
    row = create_schedule(clock=clock, task=TASK, kind="cron", rule="0 9 * * *", name="nine")
    wanted = parse_definition(
        {
            "task": TASK,
            "kind": "cron",
            "rule": "0 10 * * *",
            "lateness_class": "maintenance",
            "max_lateness": 120,
        },
        now=START,
    )
    assert len(checks) == 2
    updated = update_schedule(
        row.pk, expected_version=1, definition=wanted, clock=clock, name="ten"
    )
    assert len(checks) == 2  # not parsed again
    assert (updated.rule, updated.name, updated.version) == ("0 10 * * *", "ten", 2)
    # The definition's values, not the class defaults applied again over them.
    assert (updated.lateness_class, updated.max_lateness) == ("maintenance", 120)
    assert updated.next_run_at == datetime(2026, 1, 5, 10, tzinfo=UTC)
    same = update_schedule(row.pk, expected_version=2, definition=wanted, clock=clock)
    assert same.version == 2  # nothing differs: no new version


def test_an_update_refuses_a_field_given_beside_the_definition_and_in_it() -> None:
    clock = FakeClock(START)
    row = create_schedule(clock=clock, task=TASK, kind="cron", rule="0 9 * * *")
    wanted = parse_definition({"task": TASK, "kind": "cron", "rule": "0 10 * * *"}, now=START)
    with pytest.raises(ScheduleValidationError) as caught:
        update_schedule(row.pk, expected_version=1, definition=wanted, clock=clock, rule="x")
    assert caught.value.code == "given_twice"
    row.refresh_from_db()
    assert (row.rule, row.version) == ("0 9 * * *", 1)


def test_a_changed_declaration_is_parsed_once_on_its_way_to_the_store(
    declared: ScheduleRegistry, checks: list[dict[str, Any]]
) -> None:
    clock = FakeClock(START)
    scheduled(cron="30 6 * * *", objective="dawn")(echo)
    sync_schedules(clock=clock, declarations=declared)
    with isolated_registry() as changed:
        scheduled(cron="45 6 * * *", objective="dawn", lateness_class="maintenance")(echo)
        checks.clear()
        report = sync_schedules(clock=clock, declarations=changed)
    assert [entry.action for entry in report.entries] == ["update"]
    assert len(checks) == 1
    row = Schedule.objects.get(key="demo.echo:dawn")
    assert (row.rule, row.version, row.misfire_policy) == ("45 6 * * *", 2, "fire_once")


def test_a_changed_document_is_parsed_once_on_its_way_to_the_store(
    checks: list[dict[str, Any]],
) -> None:
    now = datetime(2026, 3, 2, 12, tzinfo=UTC)
    fields = {"task": TASK, "kind": "cron", "rule": "0 7 * * 1-5", "key": "weekday-seven"}
    first = importing.plan([importing.Desired(label="a", fields=fields)], now)
    importing.apply(first.changes, clock=FakeClock(now))
    checks.clear()
    edited = {**fields, "rule": "0 8 * * 1-5", "name": "weekday eight"}
    plan = importing.plan([importing.Desired(label="b", fields=edited)], now)
    assert [c.action for c in plan.changes] == ["update"]
    [row] = importing.apply(plan.changes, clock=FakeClock(now))
    assert len(checks) == 1
    assert (row.rule, row.name, row.version) == ("0 8 * * 1-5", "weekday eight", 2)


def test_an_imported_rrule_takes_its_dtstart_zone_when_the_document_gives_none() -> None:
    """docs/timing.md: "when you give no timezone, the schedule takes it from here" (the
    DTSTART's TZID), on every way in: a schedule.v1 file was refused until its definition was
    parsed as the services parse it."""
    rule = "DTSTART;TZID=Europe/Paris:20260105T090000\nRRULE:FREQ=DAILY"
    wanted = importing.Desired(
        label="paris.json#0", fields={"task": TASK, "kind": "rrule", "rule": rule, "key": "p"}
    )
    plan = importing.plan([wanted], START)
    assert not plan.problems
    [row] = importing.apply(plan.changes, clock=FakeClock(START))
    assert (row.timezone, row.next_run_at) == ("Europe/Paris", datetime(2026, 1, 5, 8, tzinfo=UTC))
