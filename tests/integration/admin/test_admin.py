"""The admin goes through the service layer: field errors, versions, actions, read-only rows.
Every save and confirmation goes through the page's own form, as rendered."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django_webtest import DjangoTestApp  # type: ignore[import-untyped]

from scheduler_app import services
from scheduler_app.models import Occurrence, OccurrenceState, Schedule, ScheduleStatus
from tests.integration.admin.support import (
    A_NEW_SCHEDULE,
    ADD_URL,
    change_url,
    changelist_action,
    client_for,
    form_on,
    page_errors,
    schedule_form,
    submit,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_user() -> User:
    return User.objects.create_superuser("admin", "admin@example.com", "pw")


@pytest.fixture
def client(admin_user: User) -> Client:
    return client_for(admin_user)


def test_the_changelist_and_add_form_render(client: Client) -> None:
    services.create_schedule(task="demo.ping", kind="cron", rule="*/5 * * * *", name="five")
    assert client.get(reverse("admin:scheduler_app_schedule_changelist")).status_code == 200
    assert client.get(ADD_URL).status_code == 200


def test_adding_a_valid_schedule_creates_version_one(
    django_app: DjangoTestApp, admin_user: User
) -> None:
    response = submit(schedule_form(django_app, ADD_URL, admin_user), "_save", **A_NEW_SCHEDULE)
    assert response.status_code == 302, page_errors(response)
    schedule = Schedule.objects.get()
    assert (schedule.version, schedule.versions.count(), schedule.timezone) == (
        1,
        1,
        "Europe/Paris",
    )
    assert schedule.next_run_at is not None


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("rule", "61 * * * *", "out of range"),
        ("timezone", "Mars/Olympus", "unknown time zone"),
        ("task", "no.such.task", "unknown task"),
    ],
)
def test_bad_input_is_a_field_error_and_stores_nothing(
    django_app: DjangoTestApp, admin_user: User, field: str, value: str, message: str
) -> None:
    form = schedule_form(django_app, ADD_URL, admin_user)
    response = submit(form, "_save", **{**A_NEW_SCHEDULE, field: value})
    assert response.status_code == 200
    assert message in response.text
    assert not Schedule.objects.exists()


def test_an_edit_makes_a_new_version_and_a_stale_edit_is_refused(
    django_app: DjangoTestApp, admin_user: User
) -> None:
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    # Two tabs open on version 1; the first one saves.
    first = schedule_form(django_app, change_url(schedule), admin_user)
    second = schedule_form(django_app, change_url(schedule), admin_user)
    response = submit(first, "_save", repeat="advanced", rule="30 8 * * *")
    assert response.status_code == 302, page_errors(response)
    schedule.refresh_from_db()
    assert (schedule.version, schedule.rule) == (2, "30 8 * * *")

    stale = submit(second, "_save", repeat="advanced", rule="45 8 * * *")
    assert stale.status_code == 200
    assert "Someone changed this schedule" in stale.text
    schedule.refresh_from_db()
    assert schedule.rule == "30 8 * * *"


def test_the_change_page_shows_the_next_slots(client: Client) -> None:
    schedule = services.create_schedule(
        task="demo.ping", kind="cron", rule="30 2 * * *", timezone="Europe/Riga"
    )
    page = client.get(reverse("admin:scheduler_app_schedule_change", args=[schedule.pk]))
    assert "Next slots" in page.content.decode()
    assert "02:30" in page.content.decode()


def test_the_change_page_shows_the_last_success_in_the_schedules_zone(client: Client) -> None:
    schedule = services.create_schedule(
        task="demo.ping", kind="cron", rule="30 2 * * *", timezone="Europe/Riga"
    )
    url = reverse("admin:scheduler_app_schedule_change", args=[schedule.pk])
    page = client.get(url).content.decode()
    assert "last success" in page.lower()
    Schedule.objects.filter(pk=schedule.pk).update(
        last_success_at=datetime(2026, 7, 1, 9, 15, tzinfo=UTC)
    )
    page = client.get(url).content.decode()
    assert "2026-07-01 12:15" in page  # Riga, summer time (UTC+3)


def test_pause_and_resume_go_through_a_confirmation_page(
    django_app: DjangoTestApp, admin_user: User
) -> None:
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    url = reverse("admin:scheduler_app_schedule_changelist")
    page = changelist_action(django_app, url, admin_user, "pause_selected", schedule)
    assert "are you sure" in page.text
    schedule.refresh_from_db()
    assert schedule.status == ScheduleStatus.ACTIVE  # nothing written before the confirmation
    submit(form_on(page), "confirm", note="db move")
    schedule.refresh_from_db()
    assert (schedule.status, schedule.pause_note, schedule.paused_by) == (
        ScheduleStatus.PAUSED,
        "db move",
        "admin",
    )
    page = changelist_action(django_app, url, admin_user, "resume_selected", schedule)
    assert "Resuming creates 0 catch-up occurrence(s)" in page.text
    submit(form_on(page), "confirm")
    schedule.refresh_from_db()
    assert schedule.status == ScheduleStatus.ACTIVE


def test_code_declared_schedules_are_read_only(client: Client) -> None:
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    Schedule.objects.filter(pk=schedule.pk).update(origin="code")
    page = client.get(reverse("admin:scheduler_app_schedule_change", args=[schedule.pk]))
    assert 'name="rule"' not in page.content.decode()


def test_occurrences_are_read_only_and_failed_ones_can_be_replayed(
    django_app: DjangoTestApp, admin_user: User, client: Client
) -> None:
    from datetime import timedelta

    from scheduler_app.clock import FakeClock
    from scheduler_app.ticker import Ticker
    from tests.integration.support import MemoryPublisher

    schedule = services.create_schedule(task="demo.ping", kind="interval", rule="60s")
    assert schedule.next_run_at is not None
    clock = FakeClock(schedule.next_run_at + timedelta(seconds=1))
    Ticker(MemoryPublisher(), clock=clock).tick()
    occurrence = Occurrence.objects.get()
    Occurrence.objects.filter(pk=occurrence.pk).update(state=OccurrenceState.FAILED)
    url = reverse("admin:scheduler_app_occurrence_changelist")
    assert client.get(url).status_code == 200
    change = client.get(reverse("admin:scheduler_app_occurrence_change", args=[occurrence.pk]))
    assert 'type="submit" value="Save"' not in change.content.decode()
    page = changelist_action(django_app, url, admin_user, "replay", occurrence)
    occurrence.refresh_from_db()
    assert occurrence.state == OccurrenceState.FAILED  # the confirmation page comes first
    submit(form_on(page), "confirm", note="fixed")
    occurrence.refresh_from_db()
    assert (occurrence.state, occurrence.reason) == (OccurrenceState.PENDING, "replay")
