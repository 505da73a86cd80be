"""Users with chosen permissions and tenants, and schedules with history, for the admin tests."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth.models import Group, Permission, User
from django.test import Client
from django.urls import reverse
from django_webtest import DjangoTestApp  # type: ignore[import-untyped]
from webtest import Form, TestResponse  # type: ignore[import-untyped]
from webtest.forms import Checkbox, Field  # type: ignore[import-untyped]

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
    values: dict[str, Any] = {"task": "demo.ping", "kind": "interval", "rule": "60s", **fields}
    schedule = services.create_schedule(**values)
    assert schedule.next_run_at is not None
    clock = FakeClock(schedule.next_run_at + timedelta(seconds=1))
    Ticker(MemoryPublisher(), clock=clock).tick()
    schedule.refresh_from_db()
    return schedule, Occurrence.objects.filter(schedule=schedule).get()


ADD_URL = reverse("admin:scheduler_app_schedule_add")

A_NEW_SCHEDULE: dict[str, object] = {
    "name": "daily report",
    "task": "demo.ping",
    "repeat": "advanced",
    "kind": "cron",
    "rule": "0 8 * * MON-FRI",
    "timezone": "Europe/Paris",
}
"""What a person types on the add page for a usual schedule; every other field stays as the
page offers it (the raw rule needs the builder's "advanced" mode, as on the page)."""


def change_url(schedule: Schedule) -> str:
    return reverse("admin:scheduler_app_schedule_change", args=[schedule.pk])


def schedule_form(app: DjangoTestApp, url: str, user: User) -> Form:
    """The schedule add/change form as the page renders it (only the fields it shows)."""
    page = app.get(url, user=user)
    return as_a_browser_sends(page.forms["schedule_form"])


def confirm_form(app: DjangoTestApp, url: str, user: User) -> Form:
    """The confirmation form of an action page (the one whose button says what it does)."""
    page = app.get(url, user=user)
    return as_a_browser_sends(page.forms["sched-confirm-form"])


def as_a_browser_sends(form: Form) -> Form:
    """Without its disabled controls: a browser never submits them (webtest would)."""
    for name, fields in list(form.fields.items()):
        kept = [field for field in fields if "disabled" not in field.attrs]
        if kept:
            form.fields[name] = kept
        else:
            del form.fields[name]
    form.field_order = [(n, f) for n, f in form.field_order if "disabled" not in f.attrs]
    return form


def form_on(page: TestResponse, key: str | int = "sched-confirm-form") -> Form:
    """A form of a fetched page (by default the confirmation form), as a browser sends it."""
    return as_a_browser_sends(page.forms[key])


def model_form(app: DjangoTestApp, url: str, user: User, model_name: str) -> Form:
    """An admin add/change form of another model as rendered (Django names it ``<model>_form``)."""
    page = app.get(url, user=user)
    return as_a_browser_sends(page.forms[f"{model_name}_form"])


def delete_form(app: DjangoTestApp, url: str, user: User) -> Form:
    """The "Yes, I'm sure" form of Django's delete confirmation page."""
    page = app.get(url, user=user)
    forms = [form for key, form in page.forms.items() if isinstance(key, int)]
    return as_a_browser_sends(next(form for form in forms if "post" in form.fields))


def changelist_action(
    app: DjangoTestApp, url: str, user: User, action: str, *rows: object
) -> TestResponse:
    """On a change list as rendered: tick the rows' boxes, choose the action, press Go.
    Answers what the action shows (its confirmation page, or a redirect)."""
    form = form_on(app.get(url, user=user), "changelist-form")
    fill(form, action=action, _selected_action=[getattr(row, "pk", row) for row in rows])
    return form.submit("index")


def tick(form: Form, name: str, values: list[object] | tuple[object, ...]) -> None:
    """Tick exactly these boxes of a checkbox group; a value the page offers no box for is an
    error (a person cannot tick it)."""
    boxes = [box for box in form.fields[name] if isinstance(box, Checkbox)]
    wanted = {str(value) for value in values}
    missing = wanted - {str(box._value) for box in boxes}
    assert not missing, f"the page renders no {name!r} checkbox for {sorted(missing)}"
    for box in boxes:
        box.checked = str(box._value) in wanted


def fill(form: Form, **fields: object) -> Form:
    """Type, pick and tick as a person would: a list ticks a checkbox group, a bool a single
    box. A field the page does not render, or a choice it does not offer, is an error
    (webtest refuses it), so nothing is posted by hand."""
    for name, value in fields.items():
        if isinstance(value, (list, tuple)):
            tick(form, name, value)
        elif isinstance(value, bool):
            form[name] = value
        else:
            text = str(value)
            one_line = form[name].tag == "input"
            assert not (one_line and ("\n" in text or "\r" in text)), (
                f"{name!r} is a one-line <input>: a browser strips the line breaks"
            )
            form[name] = text
    return form


def submit(form: Form, button: str | None = None, **fields: object) -> TestResponse:
    """Change the fields as a person would (``fill``), then press the button."""
    fill(form, **fields)
    return form.submit(button) if button else form.submit()


def forge(form: Form, **fields: object) -> Form:
    """FORGED: add fields the page does not render, as an attacker's hand-made POST would.
    Only for tests that prove the server refuses what the page never offers; a list adds
    the name once per value."""
    for name, value in fields.items():
        for item in value if isinstance(value, (list, tuple)) else [value]:
            field = Field(form, "input", name, 10**6 + len(form.field_order), value=str(item))
            form.fields.setdefault(name, []).append(field)
            form.field_order.append((name, field))
    return form


def forged_post(
    app: DjangoTestApp, url: str, user: User, data: dict[str, object], **kwargs: object
) -> TestResponse:
    """FORGED: a hand-made POST to an address whose page renders no such form for this user
    (it answers 403 or 404, or offers no such action). It goes with the user's own session
    and CSRF token, so only the server's own check can refuse it."""
    index = app.get(reverse("admin:index"), user=user)
    token = index.forms["logout-form"]["csrfmiddlewaretoken"].value
    response = app.post(url, {**data, "csrfmiddlewaretoken": token}, user=user, **kwargs)
    assert "CSRF verification failed" not in response.text, "refused for CSRF, not by the check"
    return response


def form_errors(response: TestResponse) -> dict[str, list[str]]:
    """The bound admin form's field errors (the page answered 200 with the form again)."""
    form = response.context["adminform"].form
    return {name: [str(error) for error in errors] for name, errors in form.errors.items()}


def page_errors(response: TestResponse) -> list[str]:
    """The error notes and field errors a page shows (for a failing assertion's message)."""
    return [
        node.get_text(" ", strip=True) for node in response.html.select(".errornote, .errorlist")
    ]
