"""The approve page shows all that will run (every field that changes what runs or where it
goes, and what changed since the last approved version), single and bulk; and four eyes: with
``SCHEDULER_APPROVAL_REQUIRES_OTHER_PERSON`` the person who made a version is told on the page
and refused with a message (never a 500). Pages used as rendered."""

from __future__ import annotations

import pytest
from django.conf import LazySettings
from django.contrib.auth.models import User
from django.urls import reverse
from django_webtest import DjangoTestApp
from webtest import TestResponse

from scheduler_app import services
from scheduler_app.admin.reviewing import SHOWN
from scheduler_app.models import SEMANTIC_FIELDS, Schedule, ScheduleStatus
from scheduler_app.safety.actors import SYSTEM
from tests.integration.admin.support import confirm_form, staff

pytestmark = pytest.mark.django_db

LIST = reverse("admin:scheduler_app_schedule_changelist")
PERMS = ("view_schedule", "change_schedule", "add_schedule", "run_schedule", "approve_schedule")


@pytest.fixture(autouse=True)
def echo_needs_approval(settings: LazySettings) -> None:
    settings.SCHEDULER_APPROVAL_TASKS = ("demo.echo",)


@pytest.fixture
def maker() -> User:
    return staff("maker", *PERMS)


@pytest.fixture
def checker() -> User:
    return staff("checker", *PERMS)


def approve_url(schedule: Schedule) -> str:
    return reverse("admin:scheduler_app_schedule_approve", args=[schedule.pk])


def approved_then_edited(by: User, **changes: object) -> Schedule:
    """Version 1 (args [1], no ping) approved by the system, version 2 made by ``by``."""
    schedule = services.create_schedule(
        task="demo.echo", kind="cron", rule="0 8 * * *", args=[1], kwargs={"k": "v"}, user=by
    )
    services.approve_schedule(schedule.pk, version=1, user=SYSTEM)
    return services.update_schedule(schedule.pk, expected_version=1, user=by, **changes)


def bulk_page(app: DjangoTestApp, user: User, schedule: Schedule) -> TestResponse:
    form = app.get(LIST, user=user).forms["changelist-form"]
    for box in form.fields["_selected_action"]:
        box.checked = box._value == str(schedule.pk)
    form["action"] = "approve_selected"
    return form.submit("index")


def diff(page: TestResponse) -> dict[str, tuple[str, str]]:
    rows = page.html.select("table.sched-diff tr")[1:]
    return {
        row.th.get_text(strip=True): tuple(td.get_text(strip=True) for td in row.select("td"))
        for row in rows
    }


def detail(page: TestResponse) -> dict[str, str]:
    return {
        row.th.get_text(strip=True): row.td.get_text(strip=True)
        for row in page.html.select("table.sched-approved tr")
    }


def test_every_field_an_edit_versions_is_shown_to_the_approver() -> None:
    assert set(SEMANTIC_FIELDS) <= set(SHOWN)
    assert len(SHOWN) == len(set(SHOWN))


@pytest.mark.parametrize("bulk", [False, True], ids=["single", "bulk"])
def test_an_edit_of_the_args_alone_is_shown_and_diffed(
    django_app: DjangoTestApp, maker: User, checker: User, bulk: bool
) -> None:
    schedule = approved_then_edited(maker, args=[1, "rm -rf"])
    assert schedule.status == ScheduleStatus.AWAITING_APPROVAL
    page = (
        bulk_page(django_app, checker, schedule)
        if bulk
        else django_app.get(approve_url(schedule), user=checker)
    )
    assert '"rm -rf"' in detail(page)["what runs: args (positional)"]
    assert "Changed since approved version 1:" in page.text
    before, after = diff(page)["args (positional)"]
    assert '"rm -rf"' in after and "rm -rf" not in before
    assert set(diff(page)) == {"args (positional)"}


def test_an_edit_of_the_ping_url_is_shown_and_diffed(
    django_app: DjangoTestApp, maker: User, checker: User
) -> None:
    schedule = approved_then_edited(maker, ping_url="https://hc-ping.com/new")
    page = django_app.get(approve_url(schedule), user=checker)
    assert detail(page)["where it goes: ping URL"] == "https://hc-ping.com/new"
    assert diff(page)["ping URL"] == ("-", "https://hc-ping.com/new")


def test_a_never_approved_schedule_says_everything_is_new(
    django_app: DjangoTestApp, checker: User
) -> None:
    schedule = services.create_schedule(task="demo.echo", kind="cron", rule="0 8 * * *")
    page = django_app.get(approve_url(schedule), user=checker)
    assert "No earlier version was approved" in page.text
    assert detail(page)["what runs: task"] == "demo.echo"


# -- four eyes ----------------------------------------------------------------------------


@pytest.fixture
def four_eyes(settings: LazySettings) -> None:
    settings.SCHEDULER_APPROVAL_REQUIRES_OTHER_PERSON = True


@pytest.mark.usefixtures("four_eyes")
def test_the_maker_of_a_version_is_told_and_refused_on_the_approve_page(
    django_app: DjangoTestApp, maker: User, checker: User
) -> None:
    schedule = approved_then_edited(maker, kwargs={"k": "mine"})
    form = confirm_form(django_app, approve_url(schedule), maker)
    assert "you cannot approve it" in form.response.text
    form["reason"] = "looks fine to me"
    done = form.submit("confirm")
    assert done.status_code == 302
    assert "SCHEDULER_APPROVAL_REQUIRES_OTHER_PERSON" in done.follow().text
    schedule.refresh_from_db()
    assert schedule.status == ScheduleStatus.AWAITING_APPROVAL

    form = confirm_form(django_app, approve_url(schedule), checker)
    assert "you cannot approve it" not in form.response.text
    form["reason"] = "checked"
    assert form.submit("confirm").status_code == 302
    schedule.refresh_from_db()
    assert (schedule.status, schedule.approved_by) == (ScheduleStatus.ACTIVE, "checker")


@pytest.mark.usefixtures("four_eyes")
def test_the_maker_is_refused_from_the_list_too(django_app: DjangoTestApp, maker: User) -> None:
    schedule = approved_then_edited(maker, kwargs={"k": "mine"})
    page = bulk_page(django_app, maker, schedule)
    assert "you cannot approve it" in page.text
    form = page.forms["sched-confirm-form"]
    form["reason"] = "bulk"
    done = form.submit("confirm")
    assert done.status_code == 302
    assert "another user with the approve_schedule permission" in done.follow().text
    schedule.refresh_from_db()
    assert schedule.status == ScheduleStatus.AWAITING_APPROVAL


def test_without_the_setting_the_maker_may_approve(django_app: DjangoTestApp, maker: User) -> None:
    schedule = approved_then_edited(maker, kwargs={"k": "mine"})
    form = confirm_form(django_app, approve_url(schedule), maker)
    assert "you cannot approve it" not in form.response.text
    form["reason"] = "alone"
    assert form.submit("confirm").status_code == 302
    schedule.refresh_from_db()
    assert schedule.status == ScheduleStatus.ACTIVE
