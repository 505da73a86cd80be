"""The confirmation pages: each shows the consequences, writes nothing until confirmed, then
writes exactly what it showed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from django.utils import timezone
from django_webtest import DjangoTestApp
from webtest import Form

from scheduler_app import services
from scheduler_app.models import (
    AuditAction,
    Occurrence,
    Schedule,
    ScheduleAuditEvent,
    ScheduleStatus,
    Trigger,
)
from tests.integration.admin.support import confirm_form, page_errors, submit

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_user() -> User:
    return User.objects.create_superuser("admin", "a@example.com", "pw")


class Pages:
    """The admin as the superuser sees it: pages fetched, their forms submitted as shown."""

    def __init__(self, app: DjangoTestApp, user: User) -> None:
        self.app, self.user = app, user

    def text(self, address: str) -> str:
        return str(self.app.get(address, user=self.user).text)

    def form(self, action: str, schedule: Schedule) -> Form:
        return confirm_form(self.app, url(action, schedule), self.user)


@pytest.fixture
def pages(django_app: DjangoTestApp, admin_user: User) -> Pages:
    return Pages(django_app, admin_user)


def url(name: str, schedule: Schedule) -> str:
    return reverse(f"admin:scheduler_app_schedule_{name}", args=[schedule.pk])


WINDOW = {"start": "2026-01-01T00:00", "end": "2026-01-05T23:59", "overlap": "buffer_all"}


def paused_for_hours(hours: int, **fields: object) -> Schedule:
    """An hourly schedule paused ``hours`` ago (its next slot is that far behind)."""
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 * * * *", **fields)
    services.pause_schedule(schedule.pk)
    top = timezone.now().replace(minute=0, second=0, microsecond=0)
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=top - timedelta(hours=hours))
    schedule.refresh_from_db()
    return schedule


def test_the_change_page_offers_the_actions_of_the_state(pages: Pages) -> None:
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    text = pages.text(reverse("admin:scheduler_app_schedule_change", args=[schedule.pk]))
    for action in ("pause", "run", "backfill", "cancel"):
        assert f'data-action="{action}"' in text
    assert 'data-action="resume"' not in text and 'data-action="restore"' not in text


def test_pause_stores_the_note_and_who(pages: Pages) -> None:
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    form = pages.form("pause", schedule)
    assert "0 occurrence(s) already waiting still run" in form.response.text
    submit(form, "confirm", note="vendor outage")
    schedule.refresh_from_db()
    assert (schedule.status, schedule.pause_note, schedule.paused_by) == (
        ScheduleStatus.PAUSED,
        "vendor outage",
        "admin",
    )
    change = reverse("admin:scheduler_app_schedule_change", args=[schedule.pk])
    assert "vendor outage" in pages.text(change)


def test_resume_lists_the_catch_up_slots_and_creates_exactly_those(pages: Pages) -> None:
    schedule = paused_for_hours(3, max_lateness=timedelta(seconds=1))
    form = pages.form("resume", schedule)
    page = form.response.text
    assert "Resuming creates 4 catch-up occurrence(s)" in page
    assert page.count("<li>Catch-up at ") == 4 and "• " not in page  # one bullet each
    assert Occurrence.objects.count() == 0
    submit(form, "confirm")
    schedule.refresh_from_db()
    assert schedule.status == ScheduleStatus.ACTIVE
    assert Occurrence.objects.filter(schedule=schedule).count() == 4


def test_resume_refuses_when_the_consequences_changed(pages: Pages) -> None:
    schedule = paused_for_hours(1)
    form = pages.form("resume", schedule)  # shows 2 catch-up slots
    Schedule.objects.filter(pk=schedule.pk).update(
        next_run_at=schedule.next_run_at - timedelta(hours=2)  # type: ignore[operator]
    )
    page = submit(form, "confirm")
    assert "changed since the page was shown" in page.text
    schedule.refresh_from_db()
    assert schedule.status == ScheduleStatus.PAUSED


def test_resume_above_the_backfill_limit_needs_a_second_confirmation(
    pages: Pages, settings: object
) -> None:
    settings.SCHEDULER_BACKFILL_MAX = 2  # type: ignore[attr-defined]
    schedule = paused_for_hours(3, max_lateness=timedelta(seconds=1))
    form = pages.form("resume", schedule)
    assert "second confirmation" in form.response.text and "confirm_over_max" in form.fields
    again = submit(form, "confirm").forms["sched-confirm-form"]
    schedule.refresh_from_db()
    assert schedule.status == ScheduleStatus.PAUSED
    submit(again, "confirm", confirm_over_max=True)
    schedule.refresh_from_db()
    assert schedule.status == ScheduleStatus.ACTIVE


def test_run_now_creates_one_manual_occurrence(pages: Pages) -> None:
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    form = pages.form("run", schedule)
    page = form.response.text
    assert "trigger &#x27;manual&#x27;" in page or "trigger 'manual'" in page
    submit(form, "confirm", reason="customer asked", respect_overlap=True)
    occurrence = Occurrence.objects.get()
    assert (occurrence.trigger, occurrence.requested_by, occurrence.note) == (
        Trigger.MANUAL,
        "admin",
        "customer asked",
    )


def test_backfill_shows_the_plan_then_creates_it(pages: Pages) -> None:
    schedule = services.create_schedule(
        task="demo.ping", kind="cron", rule="0 6 * * *", timezone="Europe/Riga"
    )
    plan = submit(pages.form("backfill", schedule), "plan", **WINDOW)
    assert "Slots in the range: 5" in plan.text
    assert "First: 2026-01-01 06:00:00 EET (04:00:00 UTC)" in plan.text
    assert Occurrence.objects.count() == 0
    submit(plan.forms["sched-confirm-form"], "confirm")
    rows = Occurrence.objects.filter(trigger=Trigger.BACKFILL)
    assert rows.count() == 5
    first = rows.order_by("scheduled_for").first()
    assert first is not None and first.scheduled_for == datetime(2026, 1, 1, 4, 0, tzinfo=UTC)


def test_backfill_errors_are_shown_not_raised(pages: Pages) -> None:
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 6 * * *")
    window = {**WINDOW, "start": "2026-01-05T00:00", "end": "2026-01-01T00:00"}
    page = submit(pages.form("backfill", schedule), "plan", **window)
    assert "start is after end" in page.text


def test_cancel_confirms_and_can_be_undone(pages: Pages) -> None:
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    form = pages.form("cancel", schedule)
    assert "You can undo this" in form.response.text
    done = submit(form, "confirm").follow()
    schedule.refresh_from_db()
    assert schedule.status == ScheduleStatus.CANCELLED
    assert f'href="{url("restore", schedule)}">Undo</a>' in done.text
    submit(done.click(description="^Undo$").forms["sched-confirm-form"], "confirm")
    schedule.refresh_from_db()
    assert schedule.status == ScheduleStatus.PAUSED


def test_backfill_above_the_limit_asks_for_the_second_confirmation(
    pages: Pages, settings: object
) -> None:
    settings.SCHEDULER_BACKFILL_MAX = 3  # type: ignore[attr-defined]
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 6 * * *")
    small = submit(
        pages.form("backfill", schedule), "plan", **{**WINDOW, "end": "2026-01-02T23:59"}
    )
    assert "confirm_over_max" not in small.forms["sched-confirm-form"].fields
    page = submit(pages.form("backfill", schedule), "plan", **WINDOW)
    assert "confirm_over_max" in page.forms["sched-confirm-form"].fields
    assert "tick the second confirmation" in page.text
    again = submit(page.forms["sched-confirm-form"], "confirm")
    assert not Occurrence.objects.exists()
    submit(again.forms["sched-confirm-form"], "confirm", confirm_over_max=True)
    assert Occurrence.objects.count() == 5


def test_the_resume_page_says_why_it_was_paused(pages: Pages) -> None:
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    submit(pages.form("pause", schedule), "confirm", note="vendor outage")
    assert "Paused by admin: vendor outage" in pages.text(url("resume", schedule))


def test_every_confirmation_page_records_who_and_why(pages: Pages, settings: object) -> None:
    settings.SCHEDULER_APPROVAL_TASKS = ("demo.record_context",)  # type: ignore[attr-defined]
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 6 * * *")
    held = services.create_schedule(task="demo.record_context", kind="cron", rule="0 7 * * *")
    window = {**WINDOW, "end": "2026-01-01T23:59"}
    steps = [
        ("pause", schedule, {"note": "why pause"}),
        ("resume", schedule, {"note": "why resume"}),
        ("run", schedule, {"reason": "why run", "respect_overlap": True}),
        ("backfill", schedule, {**window, "reason": "why backfill"}),
        ("cancel", schedule, {"reason": "why cancel"}),
        ("restore", schedule, {"reason": "why restore"}),
        ("approve", held, {"reason": "why approve"}),
    ]
    for action, target, data in steps:
        form = pages.form(action, target)
        if action == "backfill":
            form = submit(form, "plan", **data).forms["sched-confirm-form"]
            data = {}
        response = submit(form, "confirm", **data)
        assert response.status_code == 302, (action, page_errors(response))
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
