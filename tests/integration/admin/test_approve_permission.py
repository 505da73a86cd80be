"""The approve page is refused (403) to a user without ``approve_schedule``, single and bulk:
it shows a version under review and offers a confirmation that could only be refused."""

from __future__ import annotations

import pytest
from django.conf import LazySettings
from django.urls import reverse
from django_webtest import DjangoTestApp  # type: ignore[import-untyped]

from scheduler_app import services
from scheduler_app.models import Schedule, ScheduleStatus
from tests.integration.admin.support import changelist_action, forged_post, staff

pytestmark = pytest.mark.django_db

LIST = reverse("admin:scheduler_app_schedule_changelist")
NO_APPROVE = ("view_schedule", "change_schedule", "run_schedule", "pause_schedule")


@pytest.fixture(autouse=True)
def echo_needs_approval(settings: LazySettings) -> None:
    settings.SCHEDULER_APPROVAL_TASKS = ("demo.echo",)


@pytest.fixture
def waiting() -> Schedule:
    schedule = services.create_schedule(task="demo.echo", kind="cron", rule="0 8 * * *")
    assert schedule.status == ScheduleStatus.AWAITING_APPROVAL
    return schedule


def approve_url(schedule: Schedule) -> str:
    return reverse("admin:scheduler_app_schedule_approve", args=[schedule.pk])


def test_the_approve_page_is_refused_without_the_permission(
    django_app: DjangoTestApp, waiting: Schedule
) -> None:
    looker = staff("looker", *NO_APPROVE)
    page = django_app.get(approve_url(waiting), user=looker, expect_errors=True)
    assert page.status_code == 403
    # FORGED: the page is refused, so no form; the confirmation posted by hand.
    posted = forged_post(
        django_app,
        approve_url(waiting),
        looker,
        {"confirm": "1", "reason": "looks fine", f"version_{waiting.pk}": waiting.version},
        expect_errors=True,
    )
    assert posted.status_code == 403
    waiting.refresh_from_db()
    assert waiting.status == ScheduleStatus.AWAITING_APPROVAL


def test_the_bulk_approve_page_is_refused_without_the_permission(
    django_app: DjangoTestApp, waiting: Schedule
) -> None:
    looker = staff("looker", *NO_APPROVE)
    assert "approve_selected" not in django_app.get(LIST, user=looker).text
    # FORGED: the looker's list offers no approve action; chosen by hand.
    response = forged_post(
        django_app, LIST, looker, {"action": "approve_selected", "_selected_action": [waiting.pk]}
    ).maybe_follow()
    assert "sched-confirm-form" not in response.text
    assert "Approve these versions" not in response.text


def test_an_approver_still_sees_the_page_single_and_bulk(
    django_app: DjangoTestApp, waiting: Schedule
) -> None:
    checker = staff("checker", *NO_APPROVE, "approve_schedule")
    assert django_app.get(approve_url(waiting), user=checker).status_code == 200
    page = changelist_action(django_app, LIST, checker, "approve_selected", waiting)
    assert "Approve these versions" in page.text
