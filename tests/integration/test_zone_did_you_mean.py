"""A zone typed with the wrong case or a typo is refused with the zone meant, through the
services and the admin's time zone field (as the page renders it)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django_webtest import DjangoTestApp  # type: ignore[import-untyped]

from scheduler_app import services
from scheduler_app.errors import UnknownTimezone
from scheduler_app.models import Schedule
from tests.integration.admin.support import A_NEW_SCHEDULE, ADD_URL, form_errors, schedule_form

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def demo_tasks_allowed(settings: object) -> None:
    settings.SCHEDULER_ALLOWED_TASKS = ("demo.*",)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("europe/riga", "did you mean 'Europe/Riga'? (zone names are case-sensitive)"),
        ("EUROPE/RIGA", "did you mean 'Europe/Riga'?"),
        ("Europe/Rgia", "did you mean 'Europe/Riga'?"),
        ("America/Nwe_York", "did you mean 'America/New_York'?"),
    ],
)
def test_the_service_refuses_with_the_zone_meant(typed: str, meant: str) -> None:
    with pytest.raises(UnknownTimezone, match="did you mean") as refused:
        services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *", timezone=typed)
    assert meant in str(refused.value)
    assert refused.value.field == "timezone"


def test_a_name_far_from_any_zone_gets_the_general_advice() -> None:
    with pytest.raises(UnknownTimezone, match="use an IANA name") as refused:
        services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *", timezone="Mars")
    assert "did you mean" not in str(refused.value)


def test_the_admin_field_says_which_zone_was_meant(django_app: DjangoTestApp) -> None:
    root = User.objects.create_superuser("root", "r@example.com", "pw")
    form = schedule_form(django_app, ADD_URL, root)
    for name, value in A_NEW_SCHEDULE.items():
        form[name] = value
    form["timezone"] = "europe/riga"
    response = form.submit("_save")
    assert response.status_code == 200
    assert "did you mean 'Europe/Riga'?" in form_errors(response)["timezone"][0]
    assert not Schedule.objects.exists()
