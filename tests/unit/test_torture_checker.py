"""The torture harness's oracle: intended slots computed without scheduler_app.timing.

If the oracle were wrong, the harness would report losses or extra runs that are not there
(or hide real ones), so it is pinned here on hand-computed cases, DST changes included.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from torture.checker import intended_slots
from torture.scenarios import SCENARIOS, plan_faults
from torture.workload import PROFILES, Spec, generate

T0 = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_interval_slots_are_anchor_plus_multiples_within_bounds() -> None:
    spec = Spec("interval", "7s", "UTC", T0 + timedelta(seconds=10), anchor=T0)
    slots = intended_slots(spec, T0 + timedelta(seconds=30))
    assert slots == [T0 + timedelta(seconds=s) for s in (14, 21, 28)]


def test_fixed_delay_slots_are_the_first_slot_then_each_completion_plus_the_delay() -> None:
    spec = Spec(
        "interval", "10s", "UTC", T0 + timedelta(seconds=3), anchor=T0, interval_mode="fixed_delay"
    )
    until = T0 + timedelta(seconds=60)
    assert intended_slots(spec, until) == [T0 + timedelta(seconds=10)]  # nothing finished yet
    done = [
        (T0 + timedelta(seconds=10), T0 + timedelta(seconds=12.5)),
        (T0 + timedelta(seconds=22.5), T0 + timedelta(seconds=25)),
        (T0 + timedelta(seconds=35), T0 + timedelta(seconds=55)),
    ]
    assert intended_slots(spec, until, done) == [
        T0 + timedelta(seconds=10),
        T0 + timedelta(seconds=22.5),
        T0 + timedelta(seconds=35),  # 55 + 10 is after the run: not intended
    ]
    # a completion that reads before its slot (the clock stepped back): from the slot
    stepped_back = [(T0 + timedelta(seconds=10), T0 + timedelta(seconds=4))]
    assert intended_slots(spec, until, stepped_back)[-1] == T0 + timedelta(seconds=20)
    assert spec.fields()["interval_mode"] == "fixed_delay"
    assert "interval_mode" not in Spec("interval", "10s", "UTC", T0, anchor=T0).fields()


def test_once_counts_only_inside_the_run() -> None:
    spec = Spec("once", (T0 + timedelta(seconds=5)).isoformat(), "UTC", T0)
    assert intended_slots(spec, T0 + timedelta(seconds=5)) == [T0 + timedelta(seconds=5)]
    assert intended_slots(spec, T0 + timedelta(seconds=4)) == []


def test_rrule_secondly_and_minutely() -> None:
    spec = Spec("rrule", "FREQ=SECONDLY;INTERVAL=5", "UTC", T0, anchor=T0 + timedelta(seconds=2))
    assert intended_slots(spec, T0 + timedelta(seconds=13)) == [
        T0 + timedelta(seconds=2),
        T0 + timedelta(seconds=7),
        T0 + timedelta(seconds=12),
    ]
    spec = Spec("rrule", "FREQ=MINUTELY;INTERVAL=2", "Asia/Kolkata", T0, anchor=T0)
    assert len(intended_slots(spec, T0 + timedelta(minutes=10))) == 6


def test_cron_every_minute_in_a_steady_zone() -> None:
    spec = Spec("cron", "*/2 * * * *", "Asia/Kolkata", T0 + timedelta(seconds=1))
    # Kolkata is UTC+05:30: local minutes are UTC minutes + 30, so even local = even UTC.
    assert intended_slots(spec, T0 + timedelta(minutes=6)) == [
        T0 + timedelta(minutes=m) for m in (2, 4, 6)
    ]


def test_cron_across_spring_forward_has_no_nonexistent_minutes() -> None:
    # Paris 2027-03-28: 01:59:59 CET is followed by 03:00 CEST (01:00 UTC).
    spec = Spec("cron", "* 0-4 * * *", "Europe/Paris", utc("2027-03-28T00:58:00"))
    slots = intended_slots(spec, utc("2027-03-28T01:01:00"))
    assert slots == [utc(f"2027-03-28T{t}") for t in ("00:58", "00:59", "01:00", "01:01")]
    assert [s.astimezone(spec_zone(spec)).strftime("%H:%M") for s in slots] == [
        "01:58",
        "01:59",
        "03:00",
        "03:01",
    ]


def spec_zone(spec: Spec):  # type: ignore[no-untyped-def]
    from zoneinfo import ZoneInfo

    return ZoneInfo(spec.timezone)


def test_cron_across_fall_back_follows_the_ambiguity_policy() -> None:
    # Paris 2027-10-31: 02:00-02:59 local happens at 00:00-00:59 UTC (CEST) and again at
    # 01:00-01:59 UTC (CET).
    start, end = utc("2027-10-31T00:58:00"), utc("2027-10-31T01:01:00")
    minutes = [utc(f"2027-10-31T{t}") for t in ("00:58", "00:59", "01:00", "01:01")]
    for policy, expected in (
        ("first", minutes[:2]),
        ("last", minutes[2:]),
        ("both", minutes),
    ):
        spec = Spec("cron", "* * * * *", "Europe/Paris", start, dst_ambiguous=policy)
        assert intended_slots(spec, end) == expected, policy


def test_workload_and_faults_are_reproducible_from_the_seed() -> None:
    profile = PROFILES["ci"]
    first = generate(random.Random(7), profile, T0)
    again = generate(random.Random(7), profile, T0)
    assert [s.as_json() for s in first] == [s.as_json() for s in again]
    assert {s.kind for s in first} == {"interval", "cron", "rrule", "once"}
    assert {s.interval_mode for s in first if s.kind == "interval"} == {"fixed_rate", "fixed_delay"}
    mixed = next(s for s in SCENARIOS if s.name == "mixed")
    plan = plan_faults(random.Random(3), mixed, 60)
    assert plan == plan_faults(random.Random(3), mixed, 60)
    assert plan and all(0 < e.at < 60 for e in plan)


def test_a_deadline_ends_runs_as_policy_outcomes_not_dead_letters() -> None:
    from scheduler_app.models import Occurrence
    from torture.checker import _ended_by_deadline

    deadline = T0 + timedelta(seconds=5)

    def failed(reason: str, finished: datetime, deadline_at: datetime | None = deadline) -> bool:
        row = Occurrence(state="failed", reason=reason, deadline_at=deadline_at)
        row.finished_at = finished
        return _ended_by_deadline(row)

    after, before = deadline + timedelta(seconds=1), deadline - timedelta(seconds=1)
    assert failed("retry_past_deadline", before)  # a fault failed it; no retry fits
    assert failed("lost", after)  # its worker died; the deadline had passed
    assert not failed("lost", before)  # lost in time: it should have been retried
    assert not failed("retries_exhausted", after)  # a real dead letter
    assert not failed("retry_past_deadline", before, deadline_at=None)
