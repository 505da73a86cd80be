"""The schedule form: fieldsets, choices, the builder and its round trip, field-level errors,
anchors without seconds, owners."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django_webtest import DjangoTestApp  # type: ignore[import-untyped]
from webtest import TestResponse  # type: ignore[import-untyped]

from scheduler_app import services
from scheduler_app.models import Schedule
from tests.integration.admin.support import (
    A_NEW_SCHEDULE,
    ADD_URL,
    change_url,
    client_for,
    forge,
    form_errors,
    schedule_form,
    staff,
    submit,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_user() -> User:
    return User.objects.create_superuser("admin", "admin@example.com", "pw")


@pytest.fixture
def client(admin_user: User) -> Client:
    return client_for(admin_user)


def add(app: DjangoTestApp, user: User, **fields: Any) -> TestResponse:
    """The add page's form as rendered, a usual schedule typed in (raw rule, in the
    advanced mode) with these changes, saved."""
    return submit(schedule_form(app, ADD_URL, user), "_save", **{**A_NEW_SCHEDULE, **fields})


def built(app: DjangoTestApp, user: User, **fields: Any) -> TestResponse:
    """The add page's form filled in through the builder (no raw kind/rule), saved."""
    typed = {"name": "daily report", "task": "demo.ping", "timezone": "Europe/Paris"}
    return submit(schedule_form(app, ADD_URL, user), "_save", **{**typed, **fields})


def test_the_form_is_in_fieldsets_with_task_and_zone_choices(client: Client) -> None:
    page = client.get(ADD_URL).content.decode()
    for title in ("What", "When", "If late or overlapping", "Advanced"):
        assert "<h2" in page and title in page
    assert '<option value="demo.ping">' in page
    assert '<option value="Europe/Riga">' in page
    assert "celery." not in page.split('id="id_task_options"')[1].split("</datalist>")[0]


def test_a_celery_internal_task_is_a_field_error(
    django_app: DjangoTestApp, admin_user: User
) -> None:
    response = add(django_app, admin_user, task="celery.backend_cleanup")
    assert "never be scheduled" in form_errors(response)["task"][0]
    assert not Schedule.objects.exists()


@pytest.mark.parametrize(
    ("fields", "kind", "rule"),
    [
        (
            {"repeat": "weekly", "weekdays": ["MO", "FR"], "at_times": "07:30"},
            "cron",
            "30 7 * * MON,FRI",
        ),
        ({"repeat": "minutes", "every": 15}, "cron", "*/15 * * * *"),
        ({"repeat": "daily", "at_times": "09:00, 18:00"}, "cron", "0 9,18 * * *"),
        (
            {
                "repeat": "monthly",
                "monthly_on": "nth",
                "nth": "1",
                "nth_weekday": "MO",
                "at_times": "09:00",
            },
            "rrule",
            "FREQ=MONTHLY;BYDAY=1MO;BYHOUR=9;BYMINUTE=0;BYSECOND=0",
        ),
        ({"repeat": "once", "once_at": "2031-05-04T10:15"}, "once", "2031-05-04T10:15:00"),
    ],
)
def test_the_builder_writes_the_stored_rule(
    django_app: DjangoTestApp, admin_user: User, fields: dict[str, Any], kind: str, rule: str
) -> None:
    response = built(django_app, admin_user, **fields)
    assert response.status_code == 302, form_errors(response)
    schedule = Schedule.objects.get()
    assert (schedule.kind, schedule.rule) == (kind, rule)


def test_a_raw_rule_the_builder_can_express_opens_in_the_builder(
    django_app: DjangoTestApp, admin_user: User, client: Client
) -> None:
    response = add(django_app, admin_user, repeat="advanced", rule="30 8 * * MON,WED")
    assert response.status_code == 302, form_errors(response)
    page = client.get(change_url(Schedule.objects.get()))
    form = page.context["adminform"].form
    assert form.initial["repeat"] == "weekly"
    assert (form.initial["weekdays"], form.initial["at_times"]) == (["MO", "WE"], "08:30")


def test_a_raw_rule_the_builder_cannot_express_opens_in_advanced_mode(client: Client) -> None:
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 9-17 * * *")
    form = client.get(change_url(schedule)).context["adminform"].form
    assert form.initial["repeat"] == "advanced"


def test_a_builder_rrule_gets_an_anchor_without_seconds(
    django_app: DjangoTestApp, admin_user: User
) -> None:
    response = built(
        django_app,
        admin_user,
        repeat="monthly",
        monthly_on="last",
        at_times="17:00",
        timezone="UTC",
    )
    assert response.status_code == 302, form_errors(response)
    schedule = Schedule.objects.get()
    assert schedule.anchor is not None and schedule.anchor.second == 0
    assert schedule.next_run_at is not None
    assert (schedule.next_run_at.minute, schedule.next_run_at.second) == (0, 0)


def test_a_cron_error_is_on_the_rule_field_and_names_the_cron_field(
    django_app: DjangoTestApp, admin_user: User
) -> None:
    response = add(django_app, admin_user, repeat="advanced", rule="0 25 * * *")
    errors = form_errors(response)
    assert list(errors) == ["rule"]
    assert errors["rule"][0].startswith('cron field "hour": ')
    assert "out of range" in errors["rule"][0]


def test_a_window_error_is_on_the_window_field(django_app: DjangoTestApp, admin_user: User) -> None:
    response = add(django_app, admin_user, active_window="someday 9-5")
    assert list(form_errors(response)) == ["active_window"]


def test_a_builder_error_is_on_the_builder_field(
    django_app: DjangoTestApp, admin_user: User
) -> None:
    response = built(django_app, admin_user, repeat="daily", at_times="9 o'clock")
    assert "HH:MM" in form_errors(response)["at_times"][0]


def test_the_owner_defaults_to_the_creator_and_others_cannot_be_picked(
    django_app: DjangoTestApp,
) -> None:
    creator = staff("creator", "add_schedule", "view_schedule", "run_schedule")
    boss = User.objects.create_superuser("boss", "boss@example.com", "pw")
    browser = client_for(creator)
    page = browser.get(ADD_URL)
    assert "boss" not in page.content.decode()  # the owner list is not every username
    owner = page.context["adminform"].form.fields["owner"]
    assert owner.disabled and page.context["adminform"].form["owner"].value() == creator.pk
    # The field is shown, not editable: a posted owner is ignored and the creator owns it.
    form = schedule_form(django_app, ADD_URL, creator)
    assert "owner" not in form.fields  # disabled: a browser does not send it
    forge(form, owner=boss.pk)  # FORGED: an owner the page neither sends nor offers
    assert submit(form, "_save", **A_NEW_SCHEDULE).status_code == 302
    assert Schedule.objects.get().owner == creator


def test_assign_owner_offers_active_staff_of_the_tenant() -> None:
    lead = staff("lead", "add_schedule", "view_schedule", "assign_owner")
    staff("runner", "run_schedule")
    User.objects.create_user("outsider")  # not staff
    User.objects.create_superuser("root", "root@example.com", "pw")
    page = client_for(lead).get(ADD_URL).content.decode()
    assert ">runner<" in page and ">outsider<" not in page and ">root<" not in page


def test_an_owner_without_the_run_permission_is_warned_about(
    django_app: DjangoTestApp, admin_user: User, client: Client
) -> None:
    weak = staff("weak")
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *", owner=weak)
    page = client.get(change_url(schedule)).content.decode()
    assert "weak lacks scheduler_app.run_schedule" in page
    form = schedule_form(django_app, change_url(schedule), admin_user)
    assert form["owner"].value == str(weak.pk)  # the owner stays as shown
    saved = submit(form, "_save", name="renamed").maybe_follow()
    assert "does not have the permission" in saved.text


def test_a_code_declared_schedule_is_a_view_with_its_code_location(client: Client) -> None:
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    Schedule.objects.filter(pk=schedule.pk).update(
        origin="code", code_location="project/demo/tasks.py:42"
    )
    page = client.get(change_url(schedule)).content.decode()
    assert 'name="_save"' not in page
    assert "project/demo/tasks.py:42" in page
    assert "Declared in code" in page


def test_the_schedule_page_shows_versions_with_a_field_diff(client: Client) -> None:
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    services.update_schedule(schedule.pk, expected_version=1, rule="30 8 * * *", jitter=5)
    page = client.get(change_url(schedule)).content.decode()
    assert "<code>rule</code>: 0 8 * * * → 30 8 * * *" in page
    assert "<code>jitter</code>: 0 → 5" in page


def test_a_refused_zone_on_the_change_page_is_a_field_error_not_a_crash(
    django_app: DjangoTestApp, admin_user: User
) -> None:
    schedule = services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *")
    form = schedule_form(django_app, change_url(schedule), admin_user)
    response = submit(form, "_save", timezone="0")
    assert response.status_code == 200
    assert "unknown time zone" in form_errors(response)["timezone"][0]


def test_a_secret_in_the_payload_is_a_field_error_with_the_values_kept(
    django_app: DjangoTestApp, admin_user: User
) -> None:
    response = add(django_app, admin_user, kwargs='{"password": "hunter2"}')
    assert response.status_code == 200  # the form again, with what was typed
    assert "kwargs" in form_errors(response)
    assert not Schedule.objects.exists()
