"""The owner drop-down never lists another tenant's staff (review 4, Medium): it was built for
the *posted* tenant before the tenant field refused it, so a tenant user who may assign owners
read the user names of any tenant by posting its name. The add and change pages are used as
rendered; only the tenant select's value is tampered with, as an attacker would."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from django_webtest import DjangoTestApp
from webtest import TestResponse

from scheduler_app import services
from tests.integration.admin.support import change_url, schedule_form, staff

pytestmark = pytest.mark.django_db

ADD = reverse("admin:scheduler_app_schedule_add")
CODENAMES = ("add_schedule", "change_schedule", "view_schedule", "assign_owner")


@pytest.fixture
def lead() -> User:
    staff("acme_colleague", "view_schedule", tenants=("acme",))
    staff("globex_secret_admin", "view_schedule", tenants=("globex",))
    return staff("acme_lead", *CODENAMES, tenants=("acme",))


def owners_offered(page: TestResponse) -> set[str]:
    return {label for _, _, label in page.forms["schedule_form"]["owner"].options}


def test_posting_another_tenant_on_the_add_page_shows_no_user_of_it(
    django_app: DjangoTestApp, lead: User
) -> None:
    form = schedule_form(django_app, ADD, lead)
    assert "globex" not in [value for value, _, _ in form["tenant"].options]
    form["name"] = "probe"
    form["tenant"].force_value("globex")
    page = form.submit("_save")
    assert page.status_code == 200  # refused: the form again, with the tenant's error
    assert "globex_secret_admin" not in page.text
    assert {"acme_colleague", "acme_lead"} <= owners_offered(page)


def test_posting_another_tenant_on_the_change_page_shows_no_user_of_it(
    django_app: DjangoTestApp, lead: User
) -> None:
    schedule = services.create_schedule(
        task="demo.ping", kind="cron", rule="0 8 * * *", tenant="acme", owner=lead
    )
    form = schedule_form(django_app, change_url(schedule), lead)
    form["tenant"].force_value("globex")
    page = form.submit("_save")
    assert page.status_code == 200
    assert "globex_secret_admin" not in page.text
    assert "acme_colleague" in owners_offered(page)
    schedule.refresh_from_db()
    assert schedule.tenant == "acme"
