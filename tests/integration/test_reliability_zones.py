"""Zones at the service boundary: an abbreviation is a field error, a link is stored under its
canonical name (and EST no longer means a fixed -05:00 in July)."""

from __future__ import annotations

import pytest

from scheduler_app.clock import FakeClock
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.models import Schedule
from scheduler_app.services import update_schedule
from tests.integration.support import START, reload, schedule

pytestmark = pytest.mark.django_db
DAILY = {"kind": "cron", "rule": "0 9 * * *"}


@pytest.mark.parametrize("name", ["EST", "MST", "CET"])
def test_abbreviations_are_refused(name: str) -> None:
    with pytest.raises(ScheduleValidationError) as caught:
        schedule(FakeClock(START), timezone=name, **DAILY)
    assert (caught.value.field, caught.value.code) == ("timezone", "abbreviation")
    assert not Schedule.objects.exists()


def test_a_link_is_stored_under_its_canonical_name() -> None:
    clock = FakeClock(START)
    target = schedule(clock, timezone="US/Eastern", **DAILY)
    stored = reload(target)
    assert stored.timezone == "America/New_York"
    assert stored.next_run_at is not None
    assert stored.next_run_at.hour == 14  # 09:00 EST in January
    update_schedule(target.pk, expected_version=1, clock=clock, timezone="Asia/Calcutta")
    assert reload(target).timezone == "Asia/Kolkata"
