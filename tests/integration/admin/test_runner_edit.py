"""A user with ``change_schedule`` but not ``run_schedule`` cannot change what another
person's schedule runs from its change page (as rendered): the save is refused with a message
and nothing changes; other fields still save."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django_webtest import DjangoTestApp

from scheduler_app import services
from scheduler_app.models import Schedule
from tests.integration.admin.support import change_url, page_errors, schedule_form, staff

pytestmark = pytest.mark.django_db


@pytest.fixture
def runners() -> Schedule:
    runner = staff("runner", "view_schedule", "add_schedule", "run_schedule")
    return services.create_schedule(
        task="demo.ping", kind="cron", rule="0 8 * * *", kwargs={"a": 1}, user=runner
    )


@pytest.fixture
def editor() -> User:
    return staff("editor", "view_schedule", "change_schedule")


def test_an_edit_of_the_kwargs_is_refused_with_a_message(
    django_app: DjangoTestApp, runners: Schedule, editor: User
) -> None:
    form = schedule_form(django_app, change_url(runners), editor)
    form["kwargs"] = '{"a": 1, "to": "attacker@example.com"}'
    response = form.submit("_save")
    assert response.status_code == 302 and response.location.endswith(change_url(runners))
    page = response.follow()
    assert "needs the permission &#x27;scheduler_app.run_schedule&#x27;" in page.text
    runners.refresh_from_db()
    assert (runners.kwargs, runners.version) == ({"a": 1}, 1)


def test_a_rename_by_the_same_editor_saves(
    django_app: DjangoTestApp, runners: Schedule, editor: User
) -> None:
    form = schedule_form(django_app, change_url(runners), editor)
    form["name"] = "renamed"
    response = form.submit("_save")
    assert response.status_code == 302, page_errors(response)
    runners.refresh_from_db()
    assert (runners.name, runners.kwargs) == ("renamed", {"a": 1})
