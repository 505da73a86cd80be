"""The admin goes through the service layer: field errors, versions, actions, read-only rows."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from scheduler_app import services
from scheduler_app.models import Occurrence, OccurrenceState, Schedule, ScheduleStatus
from tests.integration.support import admin_form

pytestmark = pytest.mark.django_db

ADD_URL = reverse("admin:scheduler_app_schedule_add")


@pytest.fixture
def client() -> Client:
    user = User.objects.create_superuser("admin", "admin@example.com", "pw")
    browser = Client()
    browser.force_login(user)
    return browser


def test_the_changelist_and_add_form_render(client: Client) -> None:
    services.create_schedule(task="demo.ping", kind="cron", rule="*/5 * * * *", name="five")
    assert client.get(reverse("admin:scheduler_app_schedule_changelist")).status_code == 200
    assert client.get(ADD_URL).status_code == 200


def test_adding_a_valid_schedule_creates_version_one(client: Client) -> None:
    response = client.post(ADD_URL, admin_form())
    assert response.status_code == 302, response.content.decode()[:2000]
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
    client: Client, field: str, value: str, message: str
) -> None:
    response = client.post(ADD_URL, admin_form(**{field: value}))
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not Schedule.objects.exists()


def test_an_edit_makes_a_new_version_and_a_stale_edit_is_refused(client: Client) -> None:
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    url = reverse("admin:scheduler_app_schedule_change", args=[schedule.pk])
    response = client.post(url, admin_form(rule="30 8 * * *", expected_version=1))
    assert response.status_code == 302
    schedule.refresh_from_db()
    assert (schedule.version, schedule.rule) == (2, "30 8 * * *")

    stale = client.post(url, admin_form(rule="45 8 * * *", expected_version=1))
    assert stale.status_code == 200
    assert "Someone changed this schedule" in stale.content.decode()
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


def test_pause_and_resume_go_through_a_confirmation_page(client: Client) -> None:
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    url = reverse("admin:scheduler_app_schedule_changelist")
    selected = {"_selected_action": [schedule.pk]}
    page = client.post(url, {"action": "pause_selected", **selected})
    assert "are you sure" in page.content.decode()
    schedule.refresh_from_db()
    assert schedule.status == ScheduleStatus.ACTIVE  # nothing written before the confirmation
    client.post(url, {"action": "pause_selected", "confirm": "1", "note": "db move", **selected})
    schedule.refresh_from_db()
    assert (schedule.status, schedule.pause_note, schedule.paused_by) == (
        ScheduleStatus.PAUSED,
        "db move",
        "admin",
    )
    page = client.post(url, {"action": "resume_selected", **selected})
    assert "Resuming creates 0 catch-up occurrence(s)" in page.content.decode()
    client.post(url, {"action": "resume_selected", "confirm": "1", "expected": 0, **selected})
    schedule.refresh_from_db()
    assert schedule.status == ScheduleStatus.ACTIVE


def test_code_declared_schedules_are_read_only(client: Client) -> None:
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    Schedule.objects.filter(pk=schedule.pk).update(origin="code")
    page = client.get(reverse("admin:scheduler_app_schedule_change", args=[schedule.pk]))
    assert 'name="rule"' not in page.content.decode()


def test_occurrences_are_read_only_and_failed_ones_can_be_replayed(client: Client) -> None:
    from datetime import timedelta

    from scheduler_app.clock import FakeClock
    from scheduler_app.ticker import Ticker
    from tests.integration.support import MemoryPublisher

    schedule = services.create_schedule(task="demo.ping", kind="interval", rule="60s")
    clock = FakeClock(schedule.next_run_at + timedelta(seconds=1))
    Ticker(MemoryPublisher(), clock=clock).tick()
    occurrence = Occurrence.objects.get()
    Occurrence.objects.filter(pk=occurrence.pk).update(state=OccurrenceState.FAILED)
    url = reverse("admin:scheduler_app_occurrence_changelist")
    assert client.get(url).status_code == 200
    change = client.get(reverse("admin:scheduler_app_occurrence_change", args=[occurrence.pk]))
    assert 'type="submit" value="Save"' not in change.content.decode()
    client.post(url, {"action": "replay", "_selected_action": [occurrence.pk]})
    occurrence.refresh_from_db()
    assert occurrence.state == OccurrenceState.FAILED  # the confirmation page comes first
    client.post(
        url,
        {"action": "replay", "confirm": "1", "note": "fixed", "_selected_action": [occurrence.pk]},
    )
    occurrence.refresh_from_db()
    assert (occurrence.state, occurrence.reason) == (OccurrenceState.PENDING, "replay")
