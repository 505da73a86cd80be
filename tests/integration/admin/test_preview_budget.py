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
from tests.unit.timing.helpers import candidates_counted

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


# --- security review 8: a list of slots each near the budget --------------------------------

HOLIDAY_RULE = (
    "DTSTART;TZID=Europe/Moscow:20261220T000000\n"
    "RRULE:FREQ=SECONDLY;INTERVAL=10;BYMONTH=1;BYMONTHDAY=1,2,3,4,5,6,7,8\n"
    "RDATE;TZID=Europe/Moscow:" + ",".join(f"{year}0110T120000" for year in range(2027, 2037))
)
"""Every ten seconds of January 1-8 (Russia's New Year holidays, all of them) and ten RDATEs:
each slot is found past ~69,000 rejected times, under the 100,000 of the budget."""


@pytest.fixture
def walked() -> Iterator[list[int]]:
    """Counts the candidate times the engine evaluates (``walks.rule_items``' items)."""
    with candidates_counted() as count:
        yield count


def test_a_preview_of_slots_each_near_the_budget_stops_at_twice_the_budget(
    walked: list[int],
) -> None:
    """Formerly 5.6 s of CPU per POST from an ``add_schedule`` user (ten slots, each ~69,000
    candidates, and the holiday notes walking ~650,000 slots), and 4.9 s per view of the stored
    schedule's page: now the list stops at two budgets, the notes at one."""
    adder = client_for(staff("adder", "add_schedule", tenants=("A",)))
    form = {
        "repeat": "advanced",
        "kind": "rrule",
        "rule": HOLIDAY_RULE,
        "timezone": "Europe/Moscow",
        "exclude_holidays": "RU",
        "_preview_from": "2026-12-31T00:00",
        "task": "demo.ping",
        "name": "x",
    }
    answer = adder.post(URL, form).json()
    assert answer["ok"] is True, answer
    assert [row["utc"] for row in answer["slots"]] == ["2027-01-10 09:00 UTC"][
        : len(answer["slots"])
    ]
    assert len(answer["slots"]) < 10
    # Where the list stopped: two budgets of candidates in all, or (each row costing ~0.2 s)
    # the CPU bound of one search (review 9: SCHEDULER_SEARCH_SECONDS).
    stopped = answer["errors"]["rule"][0]
    assert "in all for this list of slots" in stopped or "s of CPU" in stopped, stopped
    assert len(answer["skipped"]) <= 50
    # Validation (four searches), the list (two budgets) and the notes (one).
    assert walked[0] <= 7 * 100_000 + 1_000, walked[0]
