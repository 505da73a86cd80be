"""The scale benchmark's workload: the same schedules, due at the same instant, in the three
schedulers (``bench.scale.workload``, ``bench.scale.drivers.redbeat``)."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from celery.schedules import crontab, schedule
from dateutil.rrule import DAILY, rrule

from bench.scale.drivers.redbeat import entry_state, period, redbeat_schedule, rrule_arguments
from bench.scale.env import KINDS, ZONES
from bench.scale.workload import kind_zone, local_rule, slots_between

AT = datetime(2026, 7, 1, 12, 30, tzinfo=UTC)
WINTER = datetime(2026, 1, 15, 23, 45, tzinfo=UTC)


def test_kinds_and_zones_are_spread_as_documented() -> None:
    picked = [kind_zone(index) for index in range(24 * 50)]
    kinds = Counter(kind for kind, _ in picked)
    assert kinds == {"cron": 600, "rrule": 300, "interval": 300}
    zones = Counter(zone for _, zone in picked)
    assert set(zones) == set(ZONES) and set(zones.values()) == {200}
    assert len(set(picked)) == len(set(KINDS)) * len(ZONES)  # every kind in every zone


@pytest.mark.parametrize("at", [AT, WINTER])
@pytest.mark.parametrize("zone", ZONES)
def test_our_rules_have_a_slot_at_the_instant_in_each_zone(zone: str, at: datetime) -> None:
    local = at.astimezone(ZoneInfo(zone))
    assert local_rule("cron", zone, at) == {"rule": f"{local.minute} {local.hour} * * *"}
    assert local_rule("rrule", zone, at) == {
        "rule": f"FREQ=DAILY;BYHOUR={local.hour};BYMINUTE={local.minute}"
    }
    assert local_rule("interval", zone, at) == {"rule": "1h", "anchor": at - timedelta(days=1)}


def test_an_unknown_kind_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown kind 'weekly'.*cron"):
        local_rule("weekly", "UTC", AT)
    with pytest.raises(ValueError, match="unknown kind 'weekly'"):
        redbeat_schedule("weekly", "UTC", AT)


def test_slots_between_counts_a_minute_grid_in_a_half_open_window() -> None:
    anchor = datetime(2026, 7, 1, 0, 0, 10, tzinfo=UTC)
    start = datetime(2026, 7, 1, 0, 1, tzinfo=UTC)
    assert slots_between(anchor, start, start + timedelta(minutes=2)) == 2  # 00:01:10, 00:02:10
    assert slots_between(anchor, start, start + timedelta(seconds=10)) == 0
    assert slots_between(anchor, start, start + timedelta(seconds=11)) == 1
    on_grid = datetime(2026, 7, 1, 0, 1, 10, tzinfo=UTC)
    assert slots_between(anchor, on_grid, on_grid + timedelta(minutes=1)) == 1  # start counts


@pytest.mark.parametrize("at", [AT, WINTER])
@pytest.mark.parametrize("zone", ZONES)
def test_redbeat_rrule_arguments_fire_at_the_instant(zone: str, at: datetime) -> None:
    arguments = rrule_arguments(zone, at)
    rule = rrule(DAILY, **arguments)
    assert rule.after(at - timedelta(minutes=1)) == at
    assert rule.after(at) == at + timedelta(days=1)  # no DST change in these two days


def test_redbeat_cron_is_the_utc_crontab_of_the_instant() -> None:
    for zone in ZONES:
        cron = redbeat_schedule("cron", zone, AT)
        assert isinstance(cron, crontab)
        assert (getattr(cron, "hour"), getattr(cron, "minute")) == ({12}, {30})  # noqa: B009
    interval = redbeat_schedule("interval", "Asia/Tokyo", AT)
    assert isinstance(interval, schedule)
    assert getattr(interval, "run_every") == timedelta(hours=1)  # noqa: B009 (untyped in stubs)


def test_redbeat_entry_state_makes_exactly_the_first_burst_due() -> None:
    for index in range(48):
        kind = kind_zone(index)[0]
        last, due = entry_state(index, 10, AT)
        if index < 10:
            assert (last, due) == (AT - period(kind), AT)
        else:
            assert (last, due) == (AT, AT + period(kind))
    assert period("interval") == timedelta(hours=1) and period("cron") == timedelta(days=1)


@pytest.mark.parametrize("kind", ["cron", "interval"])
def test_celery_finds_a_due_redbeat_entry_due_and_an_idle_one_not(kind: str) -> None:
    index = KINDS.index(kind)
    for burst, expected in ((index + 1, True), (0, False)):
        entry = redbeat_schedule(kind, "UTC", AT)
        entry.nowfun = lambda: AT + timedelta(seconds=1)
        last, _ = entry_state(index, burst, AT)
        assert entry.is_due(last).is_due is expected
