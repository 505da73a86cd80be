"""The builder's "describe it in words" field: the preview answers the builder fields the text
means (the page's script copies them in), a save stores the structured rule (never the text),
and text it cannot read is a field error naming the part. The advanced field takes RFC 5545
content lines."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django_webtest import DjangoTestApp  # type: ignore[import-untyped]
from webtest import TestResponse  # type: ignore[import-untyped]

from scheduler_app.models import Schedule
from tests.integration.admin.support import (
    A_NEW_SCHEDULE,
    ADD_URL,
    client_for,
    form_errors,
    schedule_form,
    submit,
)

pytestmark = pytest.mark.django_db
PREVIEW_URL = reverse("admin:scheduler_app_schedule_preview")


@pytest.fixture
def admin_user() -> User:
    return User.objects.create_superuser("admin", "a@example.com", "pw")


@pytest.fixture
def client(admin_user: User) -> Client:
    return client_for(admin_user)


def add(app: DjangoTestApp, user: User, **fields: Any) -> TestResponse:
    """The add page's form as rendered, name, task and zone typed in, these fields changed,
    saved."""
    typed = {"name": "daily report", "task": "demo.ping", "timezone": "Europe/Paris"}
    return submit(schedule_form(app, ADD_URL, user), "_save", **{**typed, **fields})


def test_the_form_shows_the_words_field_first_in_when(client: Client) -> None:
    page = client.get(ADD_URL).content.decode()
    assert 'name="words"' in page
    assert page.index('name="words"') < page.index('name="repeat"')


def test_the_preview_answers_the_builder_fields_of_the_text(client: Client) -> None:
    answer = client.post(
        PREVIEW_URL, {"words": "every weekday at 9:00 in Europe/Riga", "repeat": "daily"}
    ).json()
    assert answer["ok"] is True
    assert (answer["kind"], answer["rule"], answer["timezone"]) == (
        "cron",
        "0 9 * * MON-FRI",
        "Europe/Riga",
    )
    fill = answer["fill"]
    assert fill["repeat"] == "weekly"
    assert fill["weekdays"] == ["MO", "TU", "WE", "TH", "FR"]
    assert (fill["at_times"], fill["timezone"]) == ("09:00", "Europe/Riga")
    assert (
        answer["slots"][0]["local"].endswith("09:00 EET") or "09:00" in answer["slots"][0]["local"]
    )


def test_text_the_builder_cannot_express_fills_the_advanced_mode(client: Client) -> None:
    answer = client.post(
        PREVIEW_URL, {"words": "every 15 minutes between 8:00 and 18:00 on weekdays"}
    ).json()
    fill = answer["fill"]
    assert (fill["repeat"], fill["kind"], fill["rule"]) == (
        "advanced",
        "cron",
        "*/15 8-18 * * MON-FRI",
    )
    # 18:00 itself runs: the stored window (end excluded) closes a minute later.
    assert (fill["active_window"], fill["window_policy"]) == ("MON-FRI 08:00-18:01", "skip")


def test_words_without_a_time_preview_at_midnight_and_say_so(client: Client) -> None:
    # "every month on the 1st" runs at 00:00 in the zone (cron's 0 0 ...); the page says it.
    answer = client.post(
        PREVIEW_URL, {"words": "every month on the 1st", "timezone": "Europe/Riga"}
    ).json()
    assert answer["ok"] is True
    assert (answer["rule"], answer["timezone"]) == ("0 0 1 * *", "Europe/Riga")
    assert answer["description"].startswith("At 00:00, on day 1 of the month")
    assert answer["fill"]["at_times"] == "00:00"
    bare = client.post(PREVIEW_URL, {"words": "every day at 9"}).json()
    assert bare["ok"] is False
    assert "9:00 or 21:00" in bare["errors"]["words"][0]


def test_the_preview_of_unreadable_text_names_the_part(client: Client) -> None:
    answer = client.post(PREVIEW_URL, {"words": "every mondy at 9:00"}).json()
    assert answer["ok"] is False
    assert "'mondy'" in answer["errors"]["words"][0]


def test_a_save_with_words_stores_the_structured_rule(
    django_app: DjangoTestApp, admin_user: User
) -> None:
    response = add(django_app, admin_user, words="on the last day of the month at 18:00")
    assert response.status_code == 302, form_errors(response)
    schedule = Schedule.objects.get()
    assert (schedule.kind, schedule.rule) == (
        "rrule",
        "FREQ=MONTHLY;BYMONTHDAY=-1;BYHOUR=18;BYMINUTE=0;BYSECOND=0",
    )
    assert schedule.anchor is not None
    assert "last day" not in str(Schedule.objects.values().get())


def test_a_save_with_unreadable_words_is_a_field_error(
    django_app: DjangoTestApp, admin_user: User
) -> None:
    response = add(django_app, admin_user, **A_NEW_SCHEDULE, words="whenever you like")
    assert response.status_code == 200
    assert "'whenever'" in form_errors(response)["words"][0]
    assert Schedule.objects.count() == 0


def test_the_advanced_field_takes_content_lines(
    django_app: DjangoTestApp, admin_user: User, client: Client
) -> None:
    lines = (
        "DTSTART;TZID=Europe/Riga:20300107T090000\r\n"
        "RRULE:FREQ=WEEKLY;BYDAY=MO\r\n"
        "EXDATE;TZID=Europe/Riga:20300114T090000"
    )
    response = add(
        django_app, admin_user, repeat="advanced", kind="rrule", rule=lines, timezone="Europe/Riga"
    )
    assert response.status_code == 302, form_errors(response)
    schedule = Schedule.objects.get()
    assert schedule.rule.splitlines()[2] == "EXDATE;TZID=Europe/Riga:20300114T090000"
    answer = client.post(PREVIEW_URL, {"_object_id": str(schedule.pk)}).json()
    assert answer["description"].endswith("except 1 date, Europe/Riga")
    days = [slot["local"][:14] for slot in answer["slots"][:2]]
    assert days == ["Mon 2030-01-07", "Mon 2030-01-21"]
