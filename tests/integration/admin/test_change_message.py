"""The History line of an admin edit lists only the stored fields that changed (never the
builder's inputs, which are not stored), and the cost estimate is saved through the services
(audited with the edit), on pages used as rendered."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django_webtest import DjangoTestApp  # type: ignore[import-untyped]

from scheduler_app import services
from scheduler_app.models import Schedule, ScheduleAuditEvent
from tests.integration.admin.support import (
    A_NEW_SCHEDULE,
    ADD_URL,
    change_url,
    page_errors,
    schedule_form,
    submit,
)

pytestmark = pytest.mark.django_db

KINDS: dict[str, dict[str, Any]] = {
    "cron": {"kind": "cron", "rule": "0 8 * * MON-FRI", "timezone": "Europe/Paris"},
    "interval": {"kind": "interval", "rule": "90s"},
    "words": {"text": "every weekday at 9:30", "timezone": "Europe/Riga"},
}


@pytest.fixture
def root() -> User:
    return User.objects.create_superuser("root", "r@example.com", "pw")


def last_change(schedule: Schedule) -> str:
    entry = LogEntry.objects.filter(object_id=str(schedule.pk)).latest("action_time")
    return str(entry.get_change_message())


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_kwargs_edit_is_logged_as_a_kwargs_edit(
    django_app: DjangoTestApp, root: User, kind: str
) -> None:
    schedule = services.create_schedule(task="demo.ping", name="report", **KINDS[kind])
    form = schedule_form(django_app, change_url(schedule), root)
    response = submit(form, "_save", kwargs='{"day": 1}', reason="the report needs a day")
    assert response.status_code == 302, page_errors(response)
    assert last_change(schedule) == "Changed Kwargs."


def test_a_save_without_changes_logs_no_change(django_app: DjangoTestApp, root: User) -> None:
    schedule = services.create_schedule(task="demo.ping", name="report", **KINDS["cron"])
    response = submit(schedule_form(django_app, change_url(schedule), root), "_save")
    assert response.status_code == 302, page_errors(response)
    assert last_change(schedule) == "No fields changed."


def test_the_cost_estimate_is_saved_through_the_services(
    django_app: DjangoTestApp, root: User
) -> None:
    response = submit(
        schedule_form(django_app, ADD_URL, root), "_save", **A_NEW_SCHEDULE, cost_estimate="2.5"
    )
    assert response.status_code == 302, page_errors(response)
    schedule = Schedule.objects.get(name="daily report")
    assert (schedule.cost_estimate, schedule.version) == (2.5, 1)
    form = schedule_form(django_app, change_url(schedule), root)
    submit(form, "_save", cost_estimate="4", reason="new price list")
    schedule.refresh_from_db()
    assert (schedule.cost_estimate, schedule.version) == (4.0, 1)  # not what runs: no version
    edit = ScheduleAuditEvent.objects.filter(schedule_id=schedule.pk).first()  # the newest
    assert edit is not None
    assert (edit.details["fields"], edit.reason) == (["cost_estimate"], "new price list")
    assert last_change(schedule) == "Changed Cost estimate."
