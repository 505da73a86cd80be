"""The load ahead (``forecast``, ``manage.py schedule_forecast``, the admin's "Load ahead"
page), checked against counts this test computes on its own with ``zoneinfo``: a midnight
herd, local-time schedules across Riga's DST change, a holiday exclusion, a rule that no
longer evaluates, and tenants that see only their own."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from io import StringIO
from zoneinfo import ZoneInfo

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django_webtest import DjangoTestApp  # type: ignore[import-untyped]

from scheduler_app.clock import FakeClock
from scheduler_app.forecast import counts, picture
from scheduler_app.forecast.counts import forecast, jitter_to_spread
from scheduler_app.models import Schedule
from tests.integration.admin.support import staff
from tests.integration.support import schedule

pytestmark = pytest.mark.django_db

CREATED = datetime(2027, 3, 1, tzinfo=UTC)
FROM = datetime(2027, 3, 26, 12, 0, tzinfo=UTC)  # Riga goes to +03:00 on Sunday 28 March
DAYS = 3
HERD, LOCAL = 24, 6
RIGA = ZoneInfo("Europe/Riga")


def seed() -> None:
    clock = FakeClock(CREATED)
    for n in range(HERD):
        schedule(clock, name=f"nightly-{n}", kind="cron", rule="0 0 * * *", timezone="UTC")
    for n in range(LOCAL):
        schedule(
            clock,
            name=f"riga-{n}",
            kind="cron",
            rule="0 9 * * *",
            timezone="Europe/Riga",
            tenant="acme",
        )


def expected_minutes(start: datetime, days: int) -> Counter[datetime]:
    """The same counts, from the definitions alone: UTC midnights, and 09:00 wall time in
    Riga converted with zoneinfo, within (start, start + days]."""
    end = start + timedelta(days=days)
    found: Counter[datetime] = Counter()
    day = start.date() - timedelta(days=1)
    while day <= end.date() + timedelta(days=1):
        midnight = datetime(day.year, day.month, day.day, tzinfo=UTC)
        nine = datetime(day.year, day.month, day.day, 9, tzinfo=RIGA).astimezone(UTC)
        for instant, count in ((midnight, HERD), (nine, LOCAL)):
            if start < instant <= end:
                found[instant] += count
        day += timedelta(days=1)
    return found


def test_the_counts_match_an_independent_computation_across_a_dst_day() -> None:
    seed()
    result = forecast(Schedule.objects.all(), FROM, days=DAYS, rate=10)
    expected = expected_minutes(FROM, DAYS)
    assert result.minutes == expected
    # 09:00 in Riga is 07:00 UTC before the change and 06:00 after it.
    assert expected[datetime(2027, 3, 27, 7, 0, tzinfo=UTC)] == LOCAL
    assert expected[datetime(2027, 3, 28, 6, 0, tzinfo=UTC)] == LOCAL
    assert result.total == 3 * HERD + 3 * LOCAL
    assert result.lanes == Counter({("", "celery"): 3 * HERD, ("acme", "celery"): 3 * LOCAL})
    herd = result.busiest[0]
    assert (herd.minute, herd.count) == (datetime(2027, 3, 27, 0, 0, tzinfo=UTC), HERD)
    assert len(herd.schedules) == 5 and all(n == 1 for _, n in herd.schedules)
    assert herd.jitter == jitter_to_spread(HERD, 10) == 3  # 24 runs at 10 a second: 3 s
    dst = [mark for mark in result.marked if mark.kind == "dst"]
    assert [(m.day, m.label, m.schedules) for m in dst] == [
        (date(2027, 3, 28), "Europe/Riga +02:00 -> +03:00", LOCAL)
    ]


def test_a_holiday_exclusion_is_marked_and_leaves_its_day_out() -> None:
    clock = FakeClock(datetime(2027, 6, 1, tzinfo=UTC))
    schedule(
        clock,
        name="lv",
        kind="cron",
        rule="0 10 * * *",
        timezone="Europe/Riga",
        exclude_holidays="LV",
    )
    result = forecast(Schedule.objects.all(), datetime(2027, 6, 22, 0, 0, tzinfo=UTC), days=4)
    days = sorted(minute.date() for minute in result.minutes)
    assert days == [date(2027, 6, 22), date(2027, 6, 25)]  # 23 and 24 June are holidays in LV
    holidays = {mark.day for mark in result.marked if mark.kind == "holiday"}
    assert {date(2027, 6, 23), date(2027, 6, 24)} <= holidays


def test_a_rule_that_no_longer_evaluates_is_listed_not_counted() -> None:
    seed()
    broken = Schedule.objects.filter(name="riga-0")
    broken.update(timezone="Mars/Olympus_Mons")
    result = forecast(Schedule.objects.all(), FROM, days=1)
    assert [name for name, _ in result.unforecast] == ["riga-0"]
    assert result.schedules == HERD + LOCAL - 1


def test_the_command_prints_the_same_counts_and_refuses_bad_arguments() -> None:
    seed()
    out = StringIO()
    call_command(
        "schedule_forecast",
        "--from",
        "2027-03-26T12:00:00Z",
        "--days",
        "3",
        "--rate",
        "10",
        "--json",
        stdout=out,
    )
    data = json.loads(out.getvalue())
    assert data["slots"] == 3 * HERD + 3 * LOCAL
    assert data["busiest"][0] == {
        "minute": "2027-03-27T00:00:00+00:00",
        "slots": HERD,
        "schedules": data["busiest"][0]["schedules"],
        "jitter_seconds": 3,
    }
    assert data["marked_days"][0]["what"] == "Europe/Riga +02:00 -> +03:00"
    text = StringIO()
    call_command("schedule_forecast", "--from", "2027-03-26T12:00:00Z", "--days", "3", stdout=text)
    assert "2027-03-27 00:00  24 slot(s)" in text.getvalue()
    for bad in (
        ["--days", "9"],
        ["--rate", "0"],
        ["--from", "tomorrow"],
        ["--from", "2027-03-26T12:00:00"],
        ["--rate", "nan"],
        ["--rate", "1e-320"],
        ["--from", "9999-12-31T00:00:00Z"],
    ):
        with pytest.raises(CommandError) as caught:
            call_command("schedule_forecast", *bad, stdout=StringIO())
        assert "run with --help" in str(caught.value)


def test_the_admin_page_shows_a_tenant_its_own_schedules_only(django_app: DjangoTestApp) -> None:
    seed()
    url = reverse("admin:scheduler_app_forecast")
    acme = staff("acme_viewer", "view_schedule", tenants=("acme",))
    page = django_app.get(url, {"days": "3"}, user=acme)
    assert page.status_code == 200
    assert page.context["forecast"].schedules == LOCAL  # not the herd of tenant ""
    assert "nightly-" not in page.text
    assert '<svg class="sched-forecast"' in page.text
    assert "riga-0" in page.text  # the busiest minutes name the schedules behind them
    stranger = staff("nobody")
    assert django_app.get(url, user=stranger, expect_errors=True).status_code == 403
    for days, rate in (("40", "-1"), ("x", "nan"), ("0", "1e-320"), ("3", "inf")):
        odd = django_app.get(url, {"days": days, "rate": rate}, user=acme)  # typed in the URL
        assert odd.status_code == 200 and odd.context["rate"] is None


def test_a_forecast_stops_at_its_slot_budget_and_says_so() -> None:
    seed()
    result = forecast(Schedule.objects.all(), FROM, days=DAYS, max_slots=10)
    assert result.total == 10  # three schedules of three slots, and one slot of the fourth
    assert result.partial == HERD + LOCAL - 3  # the fourth is counted only in part


def test_a_forecast_stops_at_its_time_budget_between_two_slots(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rules slow per slot (BYSETPOS) or with no slot at all cost time, not slots: the page's
    budget is in seconds too, checked after every slot. Here each slot costs 0.4 s of a fake
    clock, so a one-second budget stops at the third slot, in the first schedule."""
    seed()
    ticks = iter(i * 0.4 for i in range(1_000))
    monkeypatch.setattr(counts, "monotonic", lambda: next(ticks))
    result = forecast(Schedule.objects.all(), FROM, days=DAYS, seconds=1.0)
    assert result.total == 3 and result.partial == HERD + LOCAL


def test_shadow_schedules_and_impossible_rates_are_not_counted() -> None:
    seed()
    Schedule.objects.filter(name__startswith="riga-").update(mode="shadow")
    assert forecast(Schedule.objects.all(), FROM, days=DAYS).total == 3 * HERD
    for rate in (float("nan"), 1e-320, 0.0, -1.0, float("inf")):
        with pytest.raises(ValueError, match="runs per second"):
            forecast(Schedule.objects.all(), FROM, rate=rate)


def test_a_fixed_delay_schedule_with_a_bad_zone_is_listed_not_a_crash() -> None:
    clock = FakeClock(CREATED)
    made = schedule(clock, name="delay", kind="interval", rule="3600", interval_mode="fixed_delay")
    Schedule.objects.filter(pk=made.pk).update(
        timezone="Mars/Olympus_Mons", next_run_at=CREATED + timedelta(hours=1)
    )
    result = forecast(Schedule.objects.all(), CREATED, days=1)
    assert [name for name, _ in result.unforecast] == ["delay"]


def test_schedules_with_one_name_are_each_behind_their_minute() -> None:
    clock = FakeClock(CREATED)
    schedule(clock, name="report", kind="cron", rule="0 0 * * *", timezone="UTC")
    schedule(clock, name="report", kind="cron", rule="0 12 * * *", timezone="UTC")
    result = forecast(Schedule.objects.all(), CREATED, days=1)
    assert [busy.schedules for busy in result.busiest] == [[("report", 1)], [("report", 1)]]


def test_the_picture_has_a_bar_per_busy_hour_and_a_band_for_the_dst_day() -> None:
    seed()
    result = forecast(Schedule.objects.all(), FROM, days=DAYS)
    svg = str(picture.render(result))
    assert svg.count(f'fill="{picture.BAR_FILL}"') == len(result.hours()) == 6
    assert svg.count(f'fill="{picture.DST_FILL}"') == 1
    assert "2027-03-28 Europe/Riga +02:00 -&gt; +03:00" in svg  # escaped like the page


def test_schedules_that_fail_to_forecast_are_timed_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """Review 11 (Medium): a schedule whose search ran out of budget was listed and skipped
    without a look at the page's time budget, so forty of them (0.25 s each) held a view-only
    user's page for 10 s. Here every schedule fails, each costing 0.4 s of a fake clock: a
    one-second budget stops after the third."""
    seed()
    Schedule.objects.update(timezone="Mars/Olympus_Mons")
    ticks = iter(i * 0.4 for i in range(1_000))
    monkeypatch.setattr(counts, "monotonic", lambda: next(ticks))
    result = forecast(Schedule.objects.all(), FROM, days=DAYS, seconds=1.0)
    assert len(result.unforecast) == 3
    assert result.partial == HERD + LOCAL - 3
