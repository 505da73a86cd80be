"""The live preview's JSON view: the next slots of the unsaved form, with the same DST
sentences as ``schedule_preview``, and field errors."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from scheduler_app import services
from scheduler_app.models import Schedule
from tests.integration.admin.support import client_for

pytestmark = pytest.mark.django_db

URL = reverse("admin:scheduler_app_schedule_preview")
RIGA_SPRING_2030 = {
    "repeat": "weekly",
    "weekdays": ["SU"],
    "at_times": "03:30",
    "timezone": "Europe/Riga",
    "starts_at_0": "2030-03-25",
    "starts_at_1": "00:00:00",
}


@pytest.fixture
def client() -> Client:
    return client_for(User.objects.create_superuser("admin", "a@example.com", "pw"))


def test_a_weekly_rule_previews_with_a_dst_sentence(client: Client) -> None:
    answer = client.post(URL, RIGA_SPRING_2030).json()
    assert answer["ok"] is True
    assert (answer["kind"], answer["rule"]) == ("cron", "30 3 * * SUN")
    assert answer["description"] == "At 03:30, on Sunday, Europe/Riga"
    first, second = answer["slots"][:2]
    assert first["local"] == "Sun 2030-03-31 04:00 EEST"
    assert first["utc"] == "2030-03-31 01:00 UTC"
    assert first["note"] == "03:30 does not exist (DST gap): moved to 04:00, when the clock jumps"
    assert second["note"] is None and len(answer["slots"]) == 10


def test_the_notes_are_the_schedule_preview_commands(client: Client) -> None:
    answer = client.post(URL, RIGA_SPRING_2030).json()
    out = StringIO()
    call_command(
        "schedule_preview",
        "--cron=30 3 * * SUN",
        "--tz=Europe/Riga",
        "--starts-at=2030-03-25T00:00:00Z",
        "--after=2030-03-24T00:00:00Z",
        "--json",
        stdout=out,
    )
    command = json.loads(out.getvalue())
    assert [s["note"] for s in answer["slots"]] == [s["note"] for s in command["slots"]]
    assert [s["utc_iso"] for s in answer["slots"]] == [s["utc"] for s in command["slots"]]


@pytest.mark.parametrize(
    ("form", "field", "words"),
    [
        ({"repeat": "advanced", "kind": "cron", "rule": "0 25 * * *"}, "rule", 'cron field "hour"'),
        ({"repeat": "daily", "at_times": "25:00"}, "at_times", "HH:MM"),
        ({"repeat": "daily", "at_times": "09:00", "timezone": "EST5"}, "timezone", "zone"),
    ],
)
def test_errors_come_back_per_field(
    client: Client, form: dict[str, Any], field: str, words: str
) -> None:
    answer = client.post(URL, {"timezone": "UTC", **form}).json()
    assert answer["ok"] is False
    assert words in answer["errors"][field][0]


def test_a_stored_schedule_previews_with_its_own_values(client: Client) -> None:
    schedule = services.create_schedule(
        task="demo.ping", kind="cron", rule="0 8 * * *", timezone="Asia/Kolkata"
    )
    answer = client.post(URL, {"repeat": "daily", "at_times": "08:00", "_object_id": schedule.pk})
    assert answer.json()["slots"][0]["local"].endswith("08:00 IST")
    assert Schedule.objects.get().rule == "0 8 * * *"  # nothing saved


def test_only_post(client: Client) -> None:
    assert client.get(URL).status_code == 405
