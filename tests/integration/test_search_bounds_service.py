"""Finding 2 of the security review through the service layer: the review's inputs (p12.py,
p15.py) are answered from bounded work, with the same verdicts as before (steps are counted
in tests/unit/timing/test_search_bounds.py; the times are in bench/timing.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from scheduler_app.clock import FakeClock
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.timing.calendars.solar import QUIET_DAYS
from tests.integration.support import schedule

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 12, 2, tzinfo=UTC)


def rdates_rule(rrule: str, second: int) -> str:
    base = datetime(2027, 1, 1, 0, 0, second)
    rdates = ",".join(f"{base + timedelta(days=i):%Y%m%dT%H%M%S}" for i in range(1000))
    return f"DTSTART:20261201T000000\n{rrule}\nRDATE:{rdates}"


def test_a_minutely_rule_with_1000_rdates_is_stored() -> None:
    row = schedule(
        FakeClock(NOW),
        kind="rrule",
        rule=rdates_rule("RRULE:FREQ=MINUTELY;BYSECOND=0", 30),
        timezone="UTC",
    )
    assert row.next_run_at == NOW


def test_a_rule_with_rdates_closer_than_the_minimum_is_refused() -> None:
    with pytest.raises(ScheduleValidationError) as caught:
        schedule(
            FakeClock(NOW),
            kind="rrule",
            rule=rdates_rule("RRULE:FREQ=SECONDLY;INTERVAL=10", 7),
            timezone="UTC",
        )
    assert caught.value.code == "too_frequent"
    assert "3s apart" in caught.value.message


def test_a_solar_event_that_never_falls_on_a_local_date_is_refused_clearly() -> None:
    with pytest.raises(ScheduleValidationError) as caught:
        schedule(FakeClock(NOW), kind="solar", rule="sunset 89.99 -179.9", timezone="UTC")
    assert caught.value.code == "never_fires"
    assert caught.value.field == "rule"
    assert (
        f"no sunset at latitude 89.99, longitude -179.9 falls on a local date in UTC on "
        f"{QUIET_DAYS:,} days in a row" in caught.value.message
    )
