"""Users with chosen permissions and tenants, and schedules with history, for the admin tests."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.models import Group, Permission, User
from django.test import Client
from django.urls import reverse
from django_webtest import DjangoTestApp
from webtest import Form, TestResponse

from scheduler_app import services
from scheduler_app.clock import FakeClock
from scheduler_app.models import Occurrence, Schedule
from scheduler_app.ticker import Ticker
from tests.integration.support import MemoryPublisher


def staff(username: str, *codenames: str, tenants: tuple[str, ...] = ()) -> User:
    """An active staff user with exactly these scheduler_app permissions and tenant groups."""
    user = User.objects.create_user(username, f"{username}@example.com", "pw", is_staff=True)
    for codename in codenames:
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label="scheduler_app", codename=codename)
        )
    for tenant in tenants:
        group, _ = Group.objects.get_or_create(name=f"tenant:{tenant}")
        user.groups.add(group)
    return user


def client_for(user: User) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def with_history(**fields: object) -> tuple[Schedule, Occurrence]:
    """A schedule whose first slot has been materialized (it has one occurrence)."""
    values = {"task": "demo.ping", "kind": "interval", "rule": "60s", **fields}
    schedule = services.create_schedule(**values)
    assert schedule.next_run_at is not None
    clock = FakeClock(schedule.next_run_at + timedelta(seconds=1))
    Ticker(MemoryPublisher(), clock=clock).tick()
    schedule.refresh_from_db()
    return schedule, Occurrence.objects.filter(schedule=schedule).get()


def change_url(schedule: Schedule) -> str:
    return reverse("admin:scheduler_app_schedule_change", args=[schedule.pk])


def schedule_form(app: DjangoTestApp, url: str, user: User) -> Form:
    """The schedule add/change form as the page renders it (only the fields it shows)."""
    page = app.get(url, user=user)
    return page.forms["schedule_form"]


def confirm_form(app: DjangoTestApp, url: str, user: User) -> Form:
    """The confirmation form of an action page (the one whose button says what it does)."""
    page = app.get(url, user=user)
    return page.forms["sched-confirm-form"]


def submit(form: Form, button: str | None = None, **fields: object) -> TestResponse:
    """Change the fields as a person would, then press the button. A field the page does
    not render is an error (webtest refuses it), so nothing is posted by hand."""
    for name, value in fields.items():
        form[name] = value
    return form.submit(button) if button else form.submit()


def page_errors(response: TestResponse) -> list[str]:
    """The error notes and field errors a page shows (for a failing assertion's message)."""
    return [
        node.get_text(" ", strip=True) for node in response.html.select(".errornote, .errorlist")
    ]
