"""A saved schedule of every kind is edited through its change page as rendered: the page's
own form, one field changed as a person would, Save. (The hidden ``expected_version`` was once
in no fieldset, so it was never rendered and every Save answered "someone changed this
schedule"; tests that posted it by hand could not see that.)"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django_webtest import DjangoTestApp

from scheduler_app import services
from scheduler_app.models import Schedule, ScheduleAuditEvent
from tests.integration.admin.support import change_url, page_errors, schedule_form, submit

pytestmark = pytest.mark.django_db

KINDS: dict[str, dict[str, Any]] = {
    "cron": {"kind": "cron", "rule": "0 8 * * MON-FRI", "timezone": "Europe/Paris"},
    "rrule": {
        "kind": "rrule",
        "rule": "FREQ=WEEKLY;BYDAY=TU;BYHOUR=9;BYMINUTE=0;BYSECOND=0",
        "timezone": "Europe/Riga",
    },
    "interval": {"kind": "interval", "rule": "90s"},
    "once": {"kind": "once", "rule": "2031-05-04T10:15:00", "timezone": "Europe/Riga"},
    "solar": {"kind": "solar", "rule": "sunrise 56.9496 24.1052", "timezone": "Europe/Riga"},
    "words": {"text": "every weekday at 9:30", "timezone": "Europe/Riga"},
}


@pytest.fixture
def admin_user() -> User:
    return User.objects.create_superuser("admin", "admin@example.com", "pw")


def saved(kind: str) -> Schedule:
    return services.create_schedule(task="demo.ping", name=f"a {kind} schedule", **KINDS[kind])


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_saved_schedule_of_every_kind_saves_from_its_rendered_change_page(
    django_app: DjangoTestApp, admin_user: User, kind: str
) -> None:
    schedule = saved(kind)
    before = (schedule.version, schedule.kind, schedule.rule)
    form = schedule_form(django_app, change_url(schedule), admin_user)
    response = submit(form, "_save", name="renamed from the page", max_attempts="5")
    assert response.status_code == 302, page_errors(response)
    schedule.refresh_from_db()
    assert schedule.name == "renamed from the page"
    assert schedule.max_attempts == 5
    assert schedule.version == before[0] + 1
    assert (schedule.kind, schedule.rule) == before[1:]


def test_the_reason_typed_on_the_change_page_is_kept_with_the_edit(
    django_app: DjangoTestApp, admin_user: User
) -> None:
    """Issue 35: an admin edit had no reason field, so edits were audited without a why."""
    schedule = saved("cron")
    form = schedule_form(django_app, change_url(schedule), admin_user)
    assert "reason" in form.fields, "the change page renders no reason field"
    response = submit(form, "_save", max_attempts="4", reason="vendor asked for four tries")
    assert response.status_code == 302, page_errors(response)
    entry = ScheduleAuditEvent.objects.filter(schedule_id=schedule.pk).latest("at", "pk")
    assert (entry.by, entry.reason, entry.version) == (
        "admin",
        "vendor asked for four tries",
        schedule.version + 1,
    )
