"""The confirmation pages: each shows the consequences, writes nothing until confirmed, then
writes exactly what it showed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from scheduler_app import services
from scheduler_app.models import (
    AuditAction,
    Occurrence,
    Schedule,
    ScheduleAuditEvent,
    ScheduleStatus,
    Trigger,
)
from tests.integration.admin.support import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def client() -> Client:
    return client_for(User.objects.create_superuser("admin", "a@example.com", "pw"))


def url(name: str, schedule: Schedule) -> str:
    return reverse(f"admin:scheduler_app_schedule_{name}", args=[schedule.pk])


def paused_for_hours(hours: int, **fields: object) -> Schedule:
    """An hourly schedule paused ``hours`` ago (its next slot is that far behind)."""
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 * * * *", **fields)
    services.pause_schedule(schedule.pk)
    top = timezone.now().replace(minute=0, second=0, microsecond=0)
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=top - timedelta(hours=hours))
    schedule.refresh_from_db()
    return schedule


def test_the_change_page_offers_the_actions_of_the_state(client: Client) -> None:
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    page = client.get(reverse("admin:scheduler_app_schedule_change", args=[schedule.pk]))
    text = page.content.decode()
    for action in ("pause", "run", "backfill", "cancel"):
        assert f'data-action="{action}"' in text
    assert 'data-action="resume"' not in text and 'data-action="restore"' not in text


def test_pause_stores_the_note_and_who(client: Client) -> None:
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    page = client.get(url("pause", schedule)).content.decode()
    assert "0 occurrence(s) already waiting still run" in page
    client.post(url("pause", schedule), {"confirm": "1", "note": "vendor outage"})
    schedule.refresh_from_db()
    assert (schedule.status, schedule.pause_note, schedule.paused_by) == (
        ScheduleStatus.PAUSED,
        "vendor outage",
        "admin",
    )
    change = reverse("admin:scheduler_app_schedule_change", args=[schedule.pk])
    assert "vendor outage" in client.get(change).content.decode()


def test_resume_lists_the_catch_up_slots_and_creates_exactly_those(client: Client) -> None:
    schedule = paused_for_hours(3)
    page = client.get(url("resume", schedule)).content.decode()
    assert "Resuming creates 4 catch-up occurrence(s)" in page
    assert page.count("<li>Catch-up at ") == 4 and "• " not in page  # one bullet each
    assert Occurrence.objects.count() == 0
    client.post(url("resume", schedule), {"confirm": "1", "expected": 4})
    schedule.refresh_from_db()
    assert schedule.status == ScheduleStatus.ACTIVE
    assert Occurrence.objects.filter(schedule=schedule).count() == 4


def test_resume_refuses_when_the_consequences_changed(client: Client) -> None:
    schedule = paused_for_hours(3)
    page = client.post(url("resume", schedule), {"confirm": "1", "expected": 1})
    assert "changed since the page was shown" in page.content.decode()
    schedule.refresh_from_db()
    assert schedule.status == ScheduleStatus.PAUSED


def test_resume_above_the_backfill_limit_needs_a_second_confirmation(
    client: Client, settings: object
) -> None:
    settings.SCHEDULER_BACKFILL_MAX = 2  # type: ignore[attr-defined]
    schedule = paused_for_hours(3)
    page = client.get(url("resume", schedule)).content.decode()
    assert "second confirmation" in page and 'name="confirm_over_max"' in page
    client.post(url("resume", schedule), {"confirm": "1", "expected": 4})
    schedule.refresh_from_db()
    assert schedule.status == ScheduleStatus.PAUSED
    client.post(url("resume", schedule), {"confirm": "1", "expected": 4, "confirm_over_max": "on"})
    schedule.refresh_from_db()
    assert schedule.status == ScheduleStatus.ACTIVE


def test_run_now_creates_one_manual_occurrence(client: Client) -> None:
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    page = client.get(url("run", schedule)).content.decode()
    assert "trigger &#x27;manual&#x27;" in page or "trigger 'manual'" in page
    client.post(
        url("run", schedule),
        {"confirm": "1", "reason": "customer asked", "respect_overlap": "on"},
    )
    occurrence = Occurrence.objects.get()
    assert (occurrence.trigger, occurrence.requested_by, occurrence.note) == (
        Trigger.MANUAL,
        "admin",
        "customer asked",
    )


def test_backfill_shows_the_plan_then_creates_it(client: Client) -> None:
    schedule = services.create_schedule(
        task="demo.ping", kind="cron", rule="0 6 * * *", timezone="Europe/Riga"
    )
    form = {"start": "2026-01-01T00:00", "end": "2026-01-05T23:59", "overlap": "buffer_all"}
    plan = client.post(url("backfill", schedule), {**form, "plan": "1"}).content.decode()
    assert "Slots in the range: 5" in plan
    assert "First: 2026-01-01 06:00:00 EET (04:00:00 UTC)" in plan
    assert Occurrence.objects.count() == 0
    client.post(url("backfill", schedule), {**form, "confirm": "1"})
    rows = Occurrence.objects.filter(trigger=Trigger.BACKFILL)
    assert rows.count() == 5
    first = rows.order_by("scheduled_for").first()
    assert first is not None and first.scheduled_for == datetime(2026, 1, 1, 4, 0, tzinfo=UTC)


def test_backfill_errors_are_shown_not_raised(client: Client) -> None:
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 6 * * *")
    form = {"start": "2026-01-05T00:00", "end": "2026-01-01T00:00", "overlap": "buffer_all"}
    page = client.post(url("backfill", schedule), {**form, "plan": "1"}).content.decode()
    assert "start is after end" in page


def test_cancel_confirms_and_can_be_undone(client: Client) -> None:
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    assert "You can undo this" in client.get(url("cancel", schedule)).content.decode()
    done = client.post(url("cancel", schedule), {"confirm": "1"}, follow=True).content.decode()
    schedule.refresh_from_db()
    assert schedule.status == ScheduleStatus.CANCELLED
    assert f'href="{url("restore", schedule)}">Undo</a>' in done
    client.post(url("restore", schedule), {"confirm": "1"})
    schedule.refresh_from_db()
    assert schedule.status == ScheduleStatus.PAUSED


def test_backfill_above_the_limit_asks_for_the_second_confirmation(
    client: Client, settings: object
) -> None:
    settings.SCHEDULER_BACKFILL_MAX = 3  # type: ignore[attr-defined]
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 6 * * *")
    form = {"start": "2026-01-01T00:00", "end": "2026-01-05T23:59", "overlap": "buffer_all"}
    small = client.post(url("backfill", schedule), {**form, "end": "2026-01-02T23:59", "plan": "1"})
    assert 'name="confirm_over_max"' not in small.content.decode()
    page = client.post(url("backfill", schedule), {**form, "plan": "1"}).content.decode()
    assert 'name="confirm_over_max"' in page and "tick the second confirmation" in page
    client.post(url("backfill", schedule), {**form, "confirm": "1"})
    assert not Occurrence.objects.exists()
    client.post(url("backfill", schedule), {**form, "confirm": "1", "confirm_over_max": "on"})
    assert Occurrence.objects.count() == 5


def test_the_resume_page_says_why_it_was_paused(client: Client) -> None:
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    client.post(url("pause", schedule), {"confirm": "1", "note": "vendor outage"})
    page = client.get(url("resume", schedule)).content.decode()
    assert "Paused by admin: vendor outage" in page


def test_every_confirmation_page_records_who_and_why(client: Client, settings: object) -> None:
    settings.SCHEDULER_APPROVAL_TASKS = ("demo.record_context",)  # type: ignore[attr-defined]
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 6 * * *")
    held = services.create_schedule(task="demo.record_context", kind="cron", rule="0 7 * * *")
    window = {"start": "2026-01-01T00:00", "end": "2026-01-01T23:59", "overlap": "buffer_all"}
    steps = [
        ("pause", schedule, {"note": "why pause"}),
        ("resume", schedule, {"note": "why resume", "expected": 0}),
        ("run", schedule, {"reason": "why run", "respect_overlap": "on"}),
        ("backfill", schedule, {**window, "reason": "why backfill"}),
        ("cancel", schedule, {"reason": "why cancel"}),
        ("restore", schedule, {"reason": "why restore"}),
        ("approve", held, {"reason": "why approve", f"version_{held.pk}": held.version}),
    ]
    for action, target, data in steps:
        response = client.post(url(action, target), {**data, "confirm": "1"})
        assert response.status_code == 302, (action, response.content.decode()[-3000:])
    entries = ScheduleAuditEvent.objects.exclude(action=AuditAction.CREATED).order_by("at", "pk")
    assert [(e.action, e.by, e.reason) for e in entries] == [
        (AuditAction.PAUSED, "admin", "why pause"),
        (AuditAction.RESUMED, "admin", "why resume"),
        (AuditAction.RUN_NOW, "admin", "why run"),
        (AuditAction.BACKFILL, "admin", "why backfill"),
        (AuditAction.CANCELLED, "admin", "why cancel"),
        (AuditAction.RESTORED, "admin", "why restore"),
        (AuditAction.APPROVED, "admin", "why approve"),
    ]
