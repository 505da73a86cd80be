"""The live preview under the search budget (security review 4, High): the review's rule is
answered after bounded work with the reason on ``rule``, and a user who may only view a
schedule cannot make the server evaluate a rule of their choosing. Work is counted (solar
dates asked about), never timed."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from scheduler_app import services
from scheduler_app.timing.calendars.solar import SolarRule
from tests.integration.admin.support import client_for, staff

pytestmark = pytest.mark.django_db

URL = reverse("admin:scheduler_app_schedule_preview")
FINDING = {
    "repeat": "advanced",
    "kind": "solar",
    "rule": "sunrise 89.5 0",
    "timezone": "UTC",
    "active_window": "SAT 01:08-01:09",
    "window_policy": "skip",
    "_preview_from": "2026-03-20T00:00",
}


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[date]]:
    days: list[date] = []
    real = SolarRule.event_on

    def counted(rule: SolarRule, day: date, zone: Any) -> datetime | None:
        days.append(day)
        return real(rule, day, zone)

    monkeypatch.setattr(SolarRule, "event_on", counted)
    yield days


def test_the_findings_rule_previews_its_one_slot_and_says_why_no_more(
    asked: list[date],
) -> None:
    admin = client_for(User.objects.create_superuser("admin", "a@example.com", "pw"))
    answer = admin.post(URL, FINDING).json()
    assert answer["ok"] is True, answer
    assert [row["utc"] for row in answer["slots"]] == ["2027-03-20 01:08:25 UTC"]
    assert "rarer than the scheduler searches for" in answer["errors"]["rule"][0]
    # Formerly 2.5-4.6 s of CPU per POST (every date to 9999); now ten years of dates, the
    # window's restarts, and the notes' polar days up to the one slot.
    assert len(asked) <= 2 * 3_653 + 1_000


def test_a_view_only_user_previews_the_stored_rule_not_the_posted_one(
    asked: list[date],
) -> None:
    stored = services.create_schedule(
        task="demo.ping", kind="cron", rule="0 8 * * *", timezone="Asia/Kolkata"
    )
    viewer = client_for(staff("viewer", "view_schedule"))
    answer = viewer.post(URL, {**FINDING, "_object_id": str(stored.pk)}).json()
    assert answer["ok"] is True, answer
    assert (answer["kind"], answer["rule"]) == ("cron", "0 8 * * *")
    assert all(row["local"].endswith("08:00 IST") for row in answer["slots"])
    assert asked == []  # the posted solar rule was never evaluated


def test_a_view_only_user_cannot_preview_a_new_rule() -> None:
    viewer = client_for(staff("viewer", "view_schedule"))
    response = viewer.post(URL, FINDING)
    assert response.status_code == 403
    assert "add_schedule" in response.json()["error"]


def test_a_user_who_may_change_it_previews_the_posted_rule(asked: list[date]) -> None:
    stored = services.create_schedule(
        task="demo.ping", kind="cron", rule="0 8 * * *", timezone="Asia/Kolkata"
    )
    editor = client_for(staff("editor", "view_schedule", "change_schedule"))
    answer = editor.post(URL, {**FINDING, "_object_id": str(stored.pk)}).json()
    assert answer["rule"] == "sunrise 89.5 0"
    assert "rarer than the scheduler searches for" in answer["errors"]["rule"][0]
    assert 0 < len(asked) <= 2 * 3_653 + 1_000
