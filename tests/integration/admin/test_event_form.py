"""An event schedule made and edited on the admin pages as rendered: the task event:<type>, the
endpoint picked from the configured names (never a URL or a secret on the page), its refusals
shown on the endpoint field."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.test import override_settings
from django_webtest import DjangoTestApp

from scheduler_app import services
from scheduler_app.errors import OperatorPermissionDenied
from scheduler_app.models import HandoffTarget, Schedule
from tests.integration.admin.support import (
    A_NEW_SCHEDULE,
    ADD_URL,
    change_url,
    form_errors,
    page_errors,
    schedule_form,
    staff,
    submit,
)
from tests.integration.event_receiver import OLD_SECRET, SECRET

pytestmark = pytest.mark.django_db

ENDPOINTS = {
    "billing": {"url": "https://billing.example.com/hooks", "secrets": [SECRET]},
    "acme-only": {
        "url": "https://acme.example.com/hooks",
        "secrets": [OLD_SECRET],
        "tenants": ["acme"],
    },
}


@pytest.fixture(autouse=True)
def configured() -> Iterator[None]:
    with override_settings(SCHEDULER_EVENT_ENDPOINTS=ENDPOINTS):
        yield


@pytest.fixture
def admin_user() -> User:
    return User.objects.create_superuser("admin", "admin@example.com", "pw")


def test_an_event_schedule_is_added_from_the_rendered_page(
    django_app: DjangoTestApp, admin_user: User
) -> None:
    form = schedule_form(django_app, ADD_URL, admin_user)
    offered = [value for value, _, _ in form["endpoint"].options]
    assert offered == ["", "acme-only", "billing"]
    assert SECRET not in form.text and "billing.example.com" not in form.text
    response = submit(
        form,
        "_save",
        **{**A_NEW_SCHEDULE, "task": "event:contract.deadline_reached", "endpoint": "billing"},
        kwargs='{"contract_id": 42}',
    )
    assert response.status_code == 302, page_errors(response)
    stored = Schedule.objects.get()
    assert (stored.task, stored.target) == ("event:contract.deadline_reached", HandoffTarget.EVENT)
    assert stored.options == {"endpoint": "billing"}
    assert stored.kwargs == {"contract_id": 42}


def test_the_change_page_shows_the_endpoint_and_saves_unchanged(
    django_app: DjangoTestApp, admin_user: User
) -> None:
    schedule = services.create_schedule(
        task="event:contract.deadline_reached",
        kind="cron",
        rule="0 9 * * *",
        options={"endpoint": "billing"},
    )
    form = schedule_form(django_app, change_url(schedule), admin_user)
    assert form["endpoint"].value == "billing"
    response = submit(form, "_save", name="renamed")
    assert response.status_code == 302, page_errors(response)
    schedule.refresh_from_db()
    assert (schedule.name, schedule.options) == ("renamed", {"endpoint": "billing"})


@pytest.mark.parametrize(
    ("typed", "says"),
    [
        ({"endpoint": "acme-only"}, "not one tenant '' may use"),
        ({"task": "demo.ping", "endpoint": "billing"}, "Only event:<type> tasks"),
    ],
)
def test_what_cannot_be_delivered_is_shown_on_the_endpoint_field(
    django_app: DjangoTestApp, admin_user: User, typed: dict[str, str], says: str
) -> None:
    form = schedule_form(django_app, ADD_URL, admin_user)
    fields = {**A_NEW_SCHEDULE, "task": "event:contract.deadline_reached", **typed}
    response = submit(form, "_save", **fields)
    assert response.status_code == 200
    errors = form_errors(response)
    assert any(says in error for error in errors.get("endpoint", [])), errors
    assert not Schedule.objects.exists()


def test_a_bad_event_type_is_shown_on_the_task_field(
    django_app: DjangoTestApp, admin_user: User
) -> None:
    form = schedule_form(django_app, ADD_URL, admin_user)
    fields = {**A_NEW_SCHEDULE, "task": "event:not a type", "endpoint": "billing"}
    response = submit(form, "_save", **fields)
    errors = form_errors(response)
    assert any("is not an event type" in error for error in errors.get("task", [])), errors


def test_a_blank_endpoint_is_the_only_one_the_tenant_may_use(
    django_app: DjangoTestApp, admin_user: User
) -> None:
    form = schedule_form(django_app, ADD_URL, admin_user)
    fields = {**A_NEW_SCHEDULE, "task": "event:contract.deadline_reached", "endpoint": ""}
    response = submit(form, "_save", **fields)
    assert response.status_code == 302, page_errors(response)
    assert Schedule.objects.get().options == {}


def test_a_blank_endpoint_with_several_to_choose_from_is_refused(
    django_app: DjangoTestApp, admin_user: User
) -> None:
    more = {**ENDPOINTS, "audit": {"url": "https://audit.example.com/", "secrets": [SECRET]}}
    with override_settings(SCHEDULER_EVENT_ENDPOINTS=more):
        form = schedule_form(django_app, ADD_URL, admin_user)
        fields = {**A_NEW_SCHEDULE, "task": "event:contract.deadline_reached", "endpoint": ""}
        errors = form_errors(submit(form, "_save", **fields))
    assert any("needs an endpoint" in error for error in errors.get("endpoint", [])), errors


def test_moving_another_owners_event_schedule_to_another_tenant_needs_run_schedule() -> None:
    """Review 13: with a blank endpoint, the tenant decides where the owner's event goes (and
    signed with whose secret): a move is an edit of what runs."""
    shared = {
        "acme-hook": {"url": "https://acme.example.com/", "secrets": [SECRET], "tenants": ["acme"]},
        "globex-hook": {
            "url": "https://globex.example.com/",
            "secrets": [OLD_SECRET],
            "tenants": ["globex"],
        },
    }
    runner = staff(
        "runner",
        "view_schedule",
        "add_schedule",
        "change_schedule",
        "run_schedule",
        tenants=("acme", "globex"),
    )
    editor = staff(
        "editor", "view_schedule", "change_schedule", "assign_owner", tenants=("acme", "globex")
    )
    with override_settings(SCHEDULER_EVENT_ENDPOINTS=shared):
        made = services.create_schedule(
            task="event:contract.deadline_reached",
            kind="cron",
            rule="0 9 * * *",
            tenant="acme",
            user=runner,
        )
        with pytest.raises(OperatorPermissionDenied, match="tenant"):
            services.update_schedule(
                made.pk, expected_version=made.version, user=editor, tenant="globex"
            )
        services.update_schedule(made.pk, expected_version=made.version, user=runner, name="n")
    made.refresh_from_db()
    assert made.tenant == "acme"


def test_the_endpoint_choice_offers_only_the_endpoints_of_the_users_tenants(
    django_app: DjangoTestApp,
) -> None:
    """Review 13: another tenant's endpoint names are not shown."""
    user = staff("acme-staff", "view_schedule", "add_schedule", tenants=("acme",))
    form = schedule_form(django_app, ADD_URL, user)
    offered = [value for value, _, _ in form["endpoint"].options]
    assert offered == ["", "acme-only", "billing"]  # billing serves every tenant
    other = staff("globex-staff", "view_schedule", "add_schedule", tenants=("globex",))
    form = schedule_form(django_app, ADD_URL, other)
    assert [value for value, _, _ in form["endpoint"].options] == ["", "billing"]


def test_no_page_of_an_event_schedule_shows_an_endpoints_url_or_secret(
    django_app: DjangoTestApp, admin_user: User
) -> None:
    """docs/events.md: "the page never shows an endpoint's URL or its secrets": the change
    page (its preview and versions included), its history and the schedule list, as an
    operator opens them."""
    schedule = services.create_schedule(
        task="event:contract.deadline_reached",
        kind="cron",
        rule="0 9 * * *",
        options={"endpoint": "billing"},
    )
    services.update_schedule(schedule.pk, expected_version=1, kwargs={"contract_id": 7})
    pages = [
        change_url(schedule),
        change_url(schedule).replace("/change/", "/history/"),
        ADD_URL.replace("/add/", "/"),
    ]
    for page in pages:
        text = django_app.get(page, user=admin_user).text
        assert "contract.deadline_reached" in text or page.endswith("/history/"), page
        for secret in (SECRET, OLD_SECRET, "billing.example.com", "acme.example.com"):
            assert secret not in text, (page, secret)
