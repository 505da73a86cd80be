"""The admin with issue 24's fields: the live preview names the holidays it skips and the
polar days without a solar event; the form validates exclude_holidays and the solar rule as
field errors; the change page's preview lists the skips too."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from scheduler_app import services
from tests.integration.admin.support import client_for

pytestmark = pytest.mark.django_db

URL = reverse("admin:scheduler_app_schedule_preview")


@pytest.fixture
def client() -> Client:
    return client_for(User.objects.create_superuser("admin", "a@example.com", "pw"))


def test_the_preview_says_which_holidays_it_skips(client: Client) -> None:
    answer = client.post(
        URL,
        {
            "repeat": "weekly",
            "weekdays": ["MO", "TU", "WE", "TH", "FR"],
            "at_times": "09:00",
            "timezone": "Europe/Riga",
            "exclude_holidays": "lv",
            "_preview_from": "2027-12-22T00:00",
        },
    ).json()
    assert answer["ok"] is True, answer
    assert [slot["local"] for slot in answer["slots"][:3]] == [
        "Wed 2027-12-22 09:00 EET",
        "Thu 2027-12-23 09:00 EET",
        "Mon 2027-12-27 09:00 EET",
    ]
    assert "skips Fri 2027-12-24: Christmas Eve (LV)" in answer["skipped"]
    assert answer["description"].endswith("except public holidays in LV, Europe/Riga")


def test_an_unknown_holiday_code_is_a_field_error(client: Client) -> None:
    answer = client.post(
        URL, {"repeat": "daily", "at_times": "09:00", "exclude_holidays": "XX"}
    ).json()
    assert answer["ok"] is False
    assert "unknown country 'XX'" in answer["errors"]["exclude_holidays"][0]


def test_a_solar_rule_in_the_advanced_mode_previews_the_polar_night(client: Client) -> None:
    answer = client.post(
        URL,
        {
            "repeat": "advanced",
            "kind": "solar",
            "rule": "sunrise 69.6496 18.956",
            "timezone": "Europe/Oslo",
            "_preview_from": "2026-11-25T00:00",
        },
    ).json()
    assert answer["ok"] is True, answer
    assert answer["slots"][2]["local"].startswith("Sat 2027-01-16")
    assert answer["skipped"] == [
        "2026-11-27 to 2027-01-15: no sunrise (polar night: the sun stays below the horizon)"
    ]
    bad = client.post(
        URL, {"repeat": "advanced", "kind": "solar", "rule": "sunrise 69.6 500"}
    ).json()
    assert "from -180 to 180" in bad["errors"]["rule"][0]


def test_the_change_page_preview_lists_the_skips(client: Client) -> None:
    schedule = services.create_schedule(
        task="demo.ping", kind="cron", rule="0 9 * * *", timezone="Europe/Riga",
        exclude_holidays="LV",
    )  # fmt: skip
    page = client.get(reverse("admin:scheduler_app_schedule_change", args=[schedule.pk]))
    assert page.status_code == 200
    assert b"sched-preview" in page.content
