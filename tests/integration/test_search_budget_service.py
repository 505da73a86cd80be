"""The search budget through the service layer and the beat (security review 4, High): the
review's rule is refused when it is defined, and a stored one (written around the services,
or stored before the budget) is parked by the tick after bounded work while the other
schedules of the batch go on. Work is counted (solar dates asked about), never timed."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from pytest_django.fixtures import Settings

from scheduler_app.clock import FakeClock
from scheduler_app.dispatch.materialize import materialize_batch
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.models import Occurrence, Schedule, ScheduleStatus
from scheduler_app.timing import rrules
from scheduler_app.timing.calendars.solar import SolarRule
from tests.integration.support import TASK, reload, schedule
from tests.unit.timing.helpers import candidates_counted

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 3, 20, tzinfo=UTC)
FINDING = {
    "kind": "solar",
    "rule": "sunrise 89.5 0",
    "timezone": "UTC",
    "active_window": "SAT 01:08-01:09",
    "window_policy": "skip",
}
FINDING_SLOT = datetime(2027, 3, 20, 1, 8, 25, tzinfo=UTC)


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[date]]:
    """The local dates every solar rule is asked about (one astral computation each)."""
    days: list[date] = []
    real = SolarRule.event_on

    def counted(rule: SolarRule, day: date, zone: Any) -> datetime | None:
        days.append(day)
        return real(rule, day, zone)

    monkeypatch.setattr(SolarRule, "event_on", counted)
    yield days


def test_the_findings_rule_is_refused_with_what_to_do(asked: list[date]) -> None:
    with pytest.raises(ScheduleValidationError) as caught:
        schedule(FakeClock(NOW), **FINDING)
    assert (caught.value.field, caught.value.code) == ("rule", "never_fires")
    assert "rarer than the scheduler searches for" in caught.value.message
    assert "SCHEDULER_SEARCH_SPAN_DAYS" in caught.value.message
    assert not Schedule.objects.exists()
    assert len(asked) <= 8 * 3_653  # formerly about 780,000 dates (22 s) at the beat alone


def test_a_larger_budget_in_the_settings_is_the_one_used(
    settings: Settings, asked: list[date]
) -> None:
    settings.SCHEDULER_SEARCH_SPAN_DAYS = 30
    with pytest.raises(ScheduleValidationError) as caught:
        schedule(FakeClock(NOW), **FINDING)
    assert "no slot within 30 days" in caught.value.message
    assert len(asked) <= 8 * 60


def test_a_stored_rule_that_exhausts_the_budget_is_parked_and_the_batch_goes_on(
    asked: list[date],
) -> None:
    clock = FakeClock(NOW)
    stored = schedule(clock, kind="cron", rule="0 9 * * *", timezone="UTC")
    good = schedule(clock, kind="cron", rule="8 1 * * *", timezone="UTC")
    # Written around the services (or stored before the budget existed): due at its slot.
    Schedule.objects.filter(pk=stored.pk).update(**FINDING, next_run_at=FINDING_SLOT)
    Schedule.objects.filter(pk=good.pk).update(next_run_at=FINDING_SLOT.replace(second=0))
    asked.clear()
    result = materialize_batch(FINDING_SLOT + timedelta(seconds=1), 10)
    parked = reload(stored)
    assert parked.status == ScheduleStatus.PAUSED
    assert parked.last_error.startswith("SearchExhausted: rule: the rule's slots are rarer")
    assert "SCHEDULER_SEARCH_SPAN_DAYS" in parked.pause_note
    assert not Occurrence.objects.filter(schedule=stored).exists()
    assert Occurrence.objects.filter(schedule=good).count() == 1
    assert result.created == 1
    # The tick's work for the row: ten years of dates and the window's restarts, where it
    # was 153,077 dates forward and 630,617 back (about 22 s of CPU inside the transaction).
    assert len(asked) <= 2 * 3_653 + 500


# -- COUNT rules number their slots from DTSTART (security review 5, High) --------------------

COUNTED = {"kind": "rrule", "rule": "FREQ=MINUTELY;COUNT=1000000", "timezone": "UTC"}


@pytest.fixture
def walked(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many wall times the COUNT rules' dateutil walks produce."""
    count = [0]
    real = rrules._build

    class Counted:
        def __init__(self, rule: Any) -> None:
            self.rule = rule

        def __iter__(self) -> Iterator[datetime]:
            for local in self.rule:
                count[0] += 1
                yield local

        def xafter(self, start: datetime, inc: bool = False) -> Iterator[datetime]:
            for local in self.rule.xafter(start, inc=inc):
                count[0] += 1
                yield local

    def counting(spec: Any, anchor: datetime) -> Any:
        return Counted(real(spec, anchor))

    monkeypatch.setattr(rrules, "_build", counting)
    yield count


def test_a_count_rule_anchored_long_ago_is_refused_after_the_budget(walked: list[int]) -> None:
    """Its walk from DTSTART to now was ~1,000,000 slots, unpaid: 17 s to validate, then
    4 s of every tick once a minute."""
    with pytest.raises(ScheduleValidationError) as caught:
        schedule(FakeClock(NOW), **COUNTED, anchor=NOW - timedelta(days=690))
    assert (caught.value.field, caught.value.code) == ("rule", "never_fires")
    assert "SCHEDULER_SEARCH_CANDIDATES" in caught.value.message
    assert walked[0] <= 2 * 100_001
    assert not Schedule.objects.exists()


def test_a_stored_count_rule_anchored_long_ago_is_parked_after_the_budget(
    walked: list[int],
) -> None:
    clock = FakeClock(NOW)
    stored = schedule(clock, kind="cron", rule="0 9 * * *", timezone="UTC")
    Schedule.objects.filter(pk=stored.pk).update(
        **COUNTED, anchor=NOW - timedelta(days=690), next_run_at=NOW
    )
    walked[0] = 0
    materialize_batch(NOW + timedelta(seconds=1), 10)
    parked = reload(stored)
    assert parked.status == ScheduleStatus.PAUSED
    assert "SCHEDULER_SEARCH_CANDIDATES" in parked.pause_note
    assert walked[0] <= 3 * 100_001


def test_a_count_rule_that_started_days_ago_goes_on_where_its_count_is() -> None:
    made = schedule(
        FakeClock(NOW),
        kind="rrule",
        rule="FREQ=DAILY;COUNT=10",
        timezone="UTC",
        anchor=NOW - timedelta(days=5, hours=-9),
    )
    assert reload(made).next_run_at == NOW + timedelta(hours=9)  # the 6th of its 10 slots


def test_a_count_rule_with_rdates_is_checked_without_walking_its_count(walked: list[int]) -> None:
    """The RDATE gap check walked the COUNT rule from DTSTART once per RDATE (review 6: 9.3 s
    per RDATE at parse, 20 s to create with two, 9.8 s of a tick). A day around each RDATE of
    the rule without COUNT is enough, and never finds a larger gap than the true one."""
    lines = (
        "DTSTART:20260320T000000Z\nRRULE:FREQ=MINUTELY;COUNT=1000000\n"
        "RDATE:20300101T000000Z,20310101T000000Z,20320101T000030Z"
    )
    made = schedule(FakeClock(NOW), kind="rrule", rule=lines, timezone="UTC")
    assert reload(made).next_run_at == NOW
    assert walked[0] <= 1_000  # the first slots only, never the million before an RDATE


# --- security review 8 ------------------------------------------------------------------------


@pytest.fixture
def candidates() -> Iterator[list[int]]:
    """Counts the candidate times the engine evaluates (``walks.rule_items``' items)."""
    from scheduler_app.timing.checkpoints import COUNTED as MARKS

    MARKS.clear()  # what this test walks, not what an earlier one left
    with candidates_counted() as count:
        yield count
    MARKS.clear()


def test_schedules_counted_from_days_ago_cost_the_beat_a_walk_once_not_every_tick(
    candidates: list[int], settings: Settings
) -> None:
    """Medium: every ten seconds from 11 days back, ``max_count`` a million, made by an
    ``add_schedule`` user: each question walked ~95,000 slots from the start, 0.22 s of every
    tick per schedule until the walk outgrew the budget; sixty of them starved the beat for
    every tenant (another tenant's slots 8-32 s late). The walks now resume at their marks.
    (The walk of the first question costs about the CPU bound of a search, 0.25 s, review 9:
    work is counted here, so the bound is raised.)"""
    settings.SCHEDULER_SEARCH_SECONDS = 60.0
    began = NOW - timedelta(days=11)
    clock = FakeClock(NOW)
    made = [
        schedule(
            clock,
            kind="rrule",
            rule="FREQ=SECONDLY;INTERVAL=10",
            anchor=began,
            starts_at=began,
            max_count=1_000_000,
            timezone="UTC",
            key=f"counted-{index}",
        )
        for index in range(3)
    ]
    assert all(reload(each).next_run_at == NOW for each in made)
    materialize_batch(clock.now(), 10)  # the first tick of this process walks from the start
    for tick in range(1, 7):
        candidates[0] = 0
        clock.advance(timedelta(seconds=10))
        assert materialize_batch(clock.now(), 10).created == 3
        assert candidates[0] <= 3 * 300, (tick, candidates[0])  # not 3 x 95,000
    assert all(reload(each).next_run_at == NOW + timedelta(seconds=70) for each in made)


def test_a_backfill_walk_is_bounded_in_all_not_only_per_slot(
    monkeypatch: pytest.MonkeyPatch, settings: Settings, candidates: list[int]
) -> None:
    """A range was walked slot by slot, each slot under the budget, so a range of slots that
    each take many candidates cost the budget once per slot. The range's walk now stops at the
    budget plus ``BACKFILL_CANDIDATES_PER_SLOT`` for each slot it may hold (here: a budget of
    40 and one candidate for each of 100 slots)."""
    from scheduler_app.services import backfills

    settings.SCHEDULER_SEARCH_CANDIDATES = 40
    monkeypatch.setattr(backfills, "HARD_BACKFILL_LIMIT", 100)
    monkeypatch.setattr(backfills, "BACKFILL_CANDIDATES_PER_SLOT", 1)
    made = schedule(
        FakeClock(NOW),
        kind="cron",
        rule="0 0 * * *",
        timezone="UTC",
        active_window="MON 00:00-00:01",
        window_policy="skip",
    )
    assert len(backfills.backfill_slots(made, NOW - timedelta(weeks=8), NOW)) == 8
    candidates[0] = 0
    with pytest.raises(ScheduleValidationError, match="in all for this list of slots"):
        backfills.backfill_slots(made, NOW - timedelta(weeks=90), NOW)  # 90 slots
    assert candidates[0] <= 140 + 5


def test_long_rules_are_kept_in_a_cache_of_their_own() -> None:
    """Review 10 (Medium): every rule a preview validated was kept in a cache of 65,536
    parsed timings; a rule with 1,000 RDATEs and 1,000 EXDATEs weighs ~150 kB, so previews of
    distinct ones could fill gigabytes of a web worker. Long rules now have 256 places."""
    from scheduler_app.definition import schedule as definition
    from scheduler_app.definition.canonical import normalize_definition

    definition._long_timing.cache_clear()
    first = datetime(2027, 1, 1, 9)
    dates = ",".join(f"{first + timedelta(days=day):%Y%m%dT%H%M%S}" for day in range(300))
    short_before = definition._timing.cache_info().currsize
    for count in range(1, definition.LONG_RULES + 20):
        text = f"DTSTART:20270101T090000\nRRULE:FREQ=DAILY;COUNT={count}\nRDATE:{dates}"
        assert len(text) > definition.LONG_RULE
        definition.validate_definition(
            normalize_definition(
                {"task": TASK, "kind": "rrule", "rule": text, "timezone": "UTC"}, NOW
            )
        )
    assert definition._long_timing.cache_info().currsize == definition.LONG_RULES
    assert definition._timing.cache_info().currsize == short_before
