"""The schedule form under the search budget (security review 4, High): the form asks the
services' question (``first_slot``: the first slot, the one before it and the two after it,
within the settings' budget), so the review's rule is an error on its ``rule`` field of the
page as rendered, with what to do, and nothing is stored. Sync and import:
``tests/integration/test_search_budget_entry_points.py``."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django_webtest import DjangoTestApp  # type: ignore[import-untyped]

from scheduler_app import services
from scheduler_app.models import Schedule
from tests.integration.admin.support import (
    A_NEW_SCHEDULE,
    ADD_URL,
    change_url,
    form_errors,
    page_errors,
    schedule_form,
    submit,
)

pytestmark = pytest.mark.django_db
RARER = "the rule's slots are rarer than the scheduler searches for"
FINDING = {
    "repeat": "advanced",
    "kind": "solar",
    "rule": "sunrise 89.5 0",
    "timezone": "UTC",
    "active_window": "SAT 01:08-01:09",
    "window_policy": "skip",
}
"""The review's rule: its one slot (2027-03-20 01:08 UTC) is found, the ones around it never."""


@pytest.fixture
def admin_user() -> User:
    return User.objects.create_superuser("admin", "admin@example.com", "pw")


def test_the_add_page_refuses_the_findings_rule_on_its_field(
    django_app: DjangoTestApp, admin_user: User
) -> None:
    form = schedule_form(django_app, ADD_URL, admin_user)
    response = submit(form, "_save", **{**A_NEW_SCHEDULE, **FINDING})
    assert response.status_code == 200, page_errors(response)
    errors = form_errors(response)
    assert list(errors) == ["rule"], errors
    assert RARER in errors["rule"][0]
    assert "SCHEDULER_SEARCH_SPAN_DAYS" in errors["rule"][0]
    assert not Schedule.objects.exists()


def test_a_change_to_the_findings_window_is_refused_on_its_field(
    django_app: DjangoTestApp, admin_user: User
) -> None:
    stored = services.create_schedule(
        task="demo.ping", kind="solar", rule="sunrise 89.5 0", timezone="UTC"
    )
    form = schedule_form(django_app, change_url(stored), admin_user)
    response = submit(form, "_save", active_window="SAT 01:08-01:09", window_policy="skip")
    assert response.status_code == 200, page_errors(response)
    errors = form_errors(response)
    assert list(errors) == ["rule"], errors
    assert RARER in errors["rule"][0]
    stored.refresh_from_db()
    assert (stored.version, stored.active_window) == (1, "")


def test_an_edit_that_keeps_the_definition_does_not_search_again(
    django_app: DjangoTestApp, admin_user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored = services.create_schedule(
        task="demo.ping", kind="cron", rule="0 9 * * *", timezone="UTC"
    )
    form = schedule_form(django_app, change_url(stored), admin_user)
    monkeypatch.setattr("scheduler_app.admin.forms.first_slot_from", None)  # called: TypeError
    response = submit(form, "_save", name="renamed")
    assert response.status_code == 302, page_errors(response)
    stored.refresh_from_db()
    assert (stored.name, stored.version) == ("renamed", 2)
