"""What a person sees when they save a schedule's change page, as rendered: a save with
nothing changed makes no version, a new lateness class resets the policies they left as the
page showed them (and only those), a bad value is an error on its field (the zone the page
shows included: an RRULE's DTSTART does not change it), and an edit of a version someone else
changed in the meantime is refused."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from django.contrib.auth.models import User
from django_webtest import DjangoTestApp  # type: ignore[import-untyped]

from scheduler_app import services
from scheduler_app.clock import FakeClock
from scheduler_app.models import Schedule, ScheduleAuditEvent, ScheduleVersion
from tests.integration.admin.support import (
    ADD_URL,
    change_url,
    fill,
    form_errors,
    page_errors,
    schedule_form,
    submit,
)

pytestmark = pytest.mark.django_db

CRON = {"task": "demo.ping", "kind": "cron", "rule": "0 8 * * *", "timezone": "Europe/Riga"}


@pytest.fixture
def admin_user() -> User:
    return User.objects.create_superuser("admin", "admin@example.com", "pw")


def row(schedule: Schedule) -> dict[str, Any]:
    """The stored row but ``updated_at`` (a save touches it even when nothing changed)."""
    values = Schedule.objects.filter(pk=schedule.pk).values().get()
    return {name: value for name, value in values.items() if name != "updated_at"}


def policies(schedule: Schedule) -> tuple[str, str, int, int | None, int]:
    schedule.refresh_from_db()
    return (
        schedule.lateness_class,
        schedule.misfire_policy,
        schedule.max_lateness,
        schedule.deadline,
        schedule.version,
    )


def test_a_save_with_nothing_changed_makes_no_version(
    django_app: DjangoTestApp, admin_user: User
) -> None:
    schedule = services.create_schedule(name="report", lateness_class="maintenance", **CRON)
    stored = row(schedule)
    response = submit(schedule_form(django_app, change_url(schedule), admin_user), "_save")
    assert response.status_code == 302, page_errors(response)
    assert row(schedule) == stored
    assert ScheduleVersion.objects.filter(schedule=schedule).count() == 1
    assert not ScheduleAuditEvent.objects.filter(schedule_id=schedule.pk, action="edited")


# (stored fields, what the person changes on the page, the lateness class and policies after)
CLASS_EDITS: dict[str, tuple[dict[str, Any], dict[str, Any], tuple[Any, ...]]] = {
    "a class, nothing else: every policy takes its default": (
        {},
        {"lateness_class": "maintenance"},
        ("maintenance", "fire_once", 3600, 21600, 2),
    ),
    "a class and a policy: the typed policy wins, the others reset": (
        {},
        {"lateness_class": "business_batch", "max_lateness": "120"},
        ("business_batch", "catch_up", 120, 3600, 2),
    ),
    "another class, a cleared deadline: it stays cleared": (
        {"lateness_class": "human_reminder", "max_lateness": 30},
        {"lateness_class": "workflow_deadline", "deadline": ""},
        ("workflow_deadline", "catch_up", 300, None, 2),
    ),
    "the same class, another rule: the tuned policies stay": (
        {"lateness_class": "human_reminder", "max_lateness": 30},
        {"repeat": "advanced", "rule": "30 8 * * *"},
        ("human_reminder", "fire_once", 30, 300, 2),
    ),
    "no class any more: the policies stay as they were": (
        {"lateness_class": "maintenance"},
        {"lateness_class": ""},
        ("", "fire_once", 3600, 21600, 2),
    ),
}


@pytest.mark.parametrize("case", list(CLASS_EDITS))
def test_a_new_lateness_class_resets_the_policies_left_as_shown(
    django_app: DjangoTestApp, admin_user: User, case: str
) -> None:
    stored, typed, expected = CLASS_EDITS[case]
    schedule = services.create_schedule(name="report", **CRON, **stored)
    form = schedule_form(django_app, change_url(schedule), admin_user)
    response = submit(form, "_save", **typed)
    assert response.status_code == 302, page_errors(response)
    assert policies(schedule) == expected


@pytest.mark.parametrize(
    ("field", "typed", "message"),
    [
        ("rule", {"repeat": "advanced", "rule": "61 * * * *"}, "out of range"),
        ("active_window", {"active_window": "25:00-26:00"}, "is not 'DAYS HH:MM-HH:MM'"),
    ],
)
def test_a_bad_value_is_an_error_on_its_field_and_nothing_is_saved(
    django_app: DjangoTestApp,
    admin_user: User,
    field: str,
    typed: dict[str, Any],
    message: str,
) -> None:
    schedule = services.create_schedule(name="report", **CRON)
    stored = row(schedule)
    form = schedule_form(django_app, change_url(schedule), admin_user)
    response = submit(form, "_save", lateness_class="maintenance", **typed)
    assert response.status_code == 200
    errors = form_errors(response)
    assert list(errors) == [field], errors
    assert message in " ".join(errors[field])
    assert row(schedule) == stored


def test_an_edit_of_a_version_someone_changed_since_the_page_opened_is_refused(
    django_app: DjangoTestApp, admin_user: User
) -> None:
    schedule = services.create_schedule(name="report", **CRON)
    first = schedule_form(django_app, change_url(schedule), admin_user)
    services.update_schedule(schedule.pk, expected_version=1, rule="15 8 * * *")
    response = submit(first, "_save", lateness_class="maintenance")
    assert response.status_code == 200
    assert "Someone changed this schedule" in response.text
    assert policies(schedule) == ("", "catch_up", 60, None, 2)


def test_an_edit_saved_by_someone_else_after_the_form_was_checked_is_not_saved(
    django_app: DjangoTestApp, admin_user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The form's version check and the save are not one transaction: another save that
    lands between them is caught by the version the services check under the row lock."""
    schedule = services.create_schedule(name="report", **CRON)
    real: Callable[..., Schedule] = services.update_schedule

    def after_another_save(*args: Any, **kwargs: Any) -> Schedule:
        real(schedule.pk, expected_version=1, rule="15 8 * * *")  # the other person's save
        return real(*args, **kwargs)

    monkeypatch.setattr(services, "update_schedule", after_another_save)
    form = schedule_form(django_app, change_url(schedule), admin_user)
    response = submit(form, "_save", lateness_class="maintenance").maybe_follow()
    assert "Not saved" in response.text and "version" in response.text, page_errors(response)
    schedule.refresh_from_db()
    assert (schedule.rule, schedule.version) == ("15 8 * * *", 2)
    assert policies(schedule) == ("", "catch_up", 60, None, 2)


def test_an_rrule_whose_dtstart_names_another_zone_than_the_page_is_refused_on_its_field(
    django_app: DjangoTestApp, admin_user: User
) -> None:
    schedule = services.create_schedule(name="report", **CRON)
    stored = row(schedule)
    form = schedule_form(django_app, change_url(schedule), admin_user)
    rule = "DTSTART;TZID=Europe/Paris:20260105T090000\nRRULE:FREQ=DAILY"
    response = submit(form, "_save", repeat="advanced", kind="rrule", rule=rule)
    assert response.status_code == 200
    [message] = form_errors(response)["rule"]
    assert "TZID Europe/Paris differs from the schedule's time zone Europe/Riga" in message
    assert row(schedule) == stored


def test_a_one_time_rule_in_the_past_is_refused_on_the_add_page(
    django_app: DjangoTestApp, admin_user: User
) -> None:
    form = schedule_form(django_app, ADD_URL, admin_user)
    response = submit(
        fill(form, name="too late", task="demo.ping", repeat="once", once_at="2020-09-05T14:00"),
        "_save",
    )
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors.as_data()
    refused = [error for field in errors.values() for error in field]
    assert [error.code for error in refused] == ["no_future_slot"], page_errors(response)
    assert "no slot at or after now; pick a future time" in " ".join(page_errors(response))
    assert not Schedule.objects.filter(name="too late").exists()


def test_a_one_time_schedule_whose_time_passed_can_still_be_changed(
    django_app: DjangoTestApp, admin_user: User
) -> None:
    # created when its time was ahead; the page now changes a policy, not the rule
    schedule = services.create_schedule(
        name="once",
        task="demo.ping",
        kind="once",
        rule="2020-09-05T14:00:00+00:00",
        clock=FakeClock(datetime(2020, 9, 1, tzinfo=UTC)),
    )
    form = schedule_form(django_app, change_url(schedule), admin_user)
    response = submit(fill(form, max_attempts="5"), "_save")
    assert response.status_code == 302, page_errors(response)
    schedule.refresh_from_db()
    assert (schedule.max_attempts, schedule.version) == (5, 2)
