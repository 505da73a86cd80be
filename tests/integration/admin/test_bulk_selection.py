"""A bulk action whose selection it cannot act on answers with a message, never a 500: rows
deleted or moved to another tenant between the list and the click, ids of another tenant
typed into the list's checkboxes. The list is used as rendered: its own form, rows ticked,
an action chosen, "Go" pressed."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.contrib.messages import get_messages
from django.urls import reverse
from django_webtest import DjangoTestApp
from webtest import Form, TestResponse

from scheduler_app import services
from scheduler_app.models import Occurrence, OccurrenceState, Schedule, ScheduleStatus
from tests.integration.admin.support import staff, with_history

pytestmark = pytest.mark.django_db

LIST = reverse("admin:scheduler_app_schedule_changelist")
OCCURRENCES = reverse("admin:scheduler_app_occurrence_changelist")
BULK = ["pause_selected", "resume_selected", "cancel_selected", "approve_selected"]


@pytest.fixture
def approver() -> User:
    return staff(
        "acme_ops",
        "view_schedule",
        "change_schedule",
        "pause_schedule",
        "approve_schedule",
        "view_occurrence",
        "replay_occurrence",
        tenants=("acme",),
    )


def held(tenant: str = "acme") -> Schedule:
    return services.create_schedule(
        task="demo.briefing", kind="cron", rule="0 9 * * *", tenant=tenant
    )


def ticked(app: DjangoTestApp, url: str, user: User, *rows: object) -> Form:
    """The list's action form with these rows ticked."""
    form = app.get(url, user=user).forms["changelist-form"]
    for box in form.fields["_selected_action"]:
        box.checked = box._value in {str(row) for row in rows}
    return form


def go(form: Form, action: str) -> TestResponse:
    form["action"] = action
    return form.submit("index")


def said(response: TestResponse) -> list[str]:
    return [str(message) for message in get_messages(response.context["request"])]


def shown_after(response: TestResponse) -> str:
    assert response.status_code == 302, response.status_code
    return str(response.follow().text)


@pytest.mark.parametrize("action", BULK)
def test_a_row_deleted_meanwhile_is_answered_with_a_message(
    django_app: DjangoTestApp, approver: User, settings: object, action: str
) -> None:
    settings.SCHEDULER_APPROVAL_TASKS = ("demo.briefing",)  # type: ignore[attr-defined]
    gone = held()
    form = ticked(django_app, LIST, approver, gone.pk)
    Schedule.objects.filter(pk=gone.pk).delete()
    page = shown_after(go(form, action))
    assert "1 selected schedules no longer exist or are not yours" in page
    assert "nothing was changed" in page


def test_approve_selected_of_a_row_moved_to_another_tenant_changes_nothing(
    django_app: DjangoTestApp, approver: User, settings: object
) -> None:
    settings.SCHEDULER_APPROVAL_TASKS = ("demo.briefing",)  # type: ignore[attr-defined]
    moved = held()
    form = ticked(django_app, LIST, approver, moved.pk)
    Schedule.objects.filter(pk=moved.pk).update(tenant="globex")
    page = shown_after(go(form, "approve_selected"))
    assert "not yours to change" in page
    moved.refresh_from_db()
    assert moved.status == ScheduleStatus.AWAITING_APPROVAL


def test_an_id_of_another_tenant_typed_into_a_checkbox_is_refused(
    django_app: DjangoTestApp, approver: User, settings: object
) -> None:
    settings.SCHEDULER_APPROVAL_TASKS = ("demo.briefing",)  # type: ignore[attr-defined]
    own, theirs = held(), held("globex")
    form = ticked(django_app, LIST, approver, own.pk)
    form.fields["_selected_action"][0]._value = str(theirs.pk)  # the attacker's edit
    form.fields["_selected_action"][0].checked = True
    for box in form.fields["_selected_action"][1:]:
        box.checked = False
    page = shown_after(go(form, "approve_selected"))
    assert "not yours to change" in page and str(theirs.pk) not in page
    theirs.refresh_from_db()
    assert theirs.status == ScheduleStatus.AWAITING_APPROVAL


def test_the_rest_of_a_selection_is_still_acted_on(
    django_app: DjangoTestApp, approver: User
) -> None:
    kept = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *", tenant="acme")
    gone = services.create_schedule(task="demo.ping", kind="cron", rule="0 7 * * *", tenant="acme")
    form = ticked(django_app, LIST, approver, kept.pk, gone.pk)
    Schedule.objects.filter(pk=gone.pk).delete()
    page = go(form, "pause_selected")
    assert page.status_code == 200 and "the action goes on with the rest" in " ".join(said(page))
    done = page.forms["sched-confirm-form"].submit("confirm")
    assert "1 schedule(s) paused" in shown_after(done)
    kept.refresh_from_db()
    assert kept.status == ScheduleStatus.PAUSED


def test_replay_of_an_occurrence_moved_away_is_answered_with_a_message(
    django_app: DjangoTestApp, approver: User
) -> None:
    schedule, occurrence = with_history(tenant="acme")
    Occurrence.objects.filter(pk=occurrence.pk).update(state=OccurrenceState.FAILED)
    form = ticked(django_app, OCCURRENCES, approver, occurrence.pk)
    Schedule.objects.filter(pk=schedule.pk).update(tenant="globex")
    page = shown_after(go(form, "replay"))
    assert "1 selected occurrences no longer exist or are not yours" in page
