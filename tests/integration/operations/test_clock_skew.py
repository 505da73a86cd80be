"""Clock skew between the beat host and PostgreSQL, measured with an injected clock."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.utils import timezone

from scheduler_app.clock import FakeClock
from scheduler_app.models import BeatHeartbeat
from scheduler_app.monitoring.skew import check_skew, measure_skew
from tests.conftest import using_postgres
from tests.integration.support import MemoryPublisher, ticker

pytestmark = pytest.mark.django_db


@pytest.mark.postgres
def test_a_host_clock_behind_the_database_is_measured_logged_and_stored(
    caplog: pytest.LogCaptureFixture,
) -> None:
    host = FakeClock(timezone.now() - timedelta(seconds=30))  # this host is 30 s slow
    with caplog.at_level(logging.WARNING, logger="scheduler_app.monitoring"):
        skew = check_skew(host, warn=2.0)
    assert skew == pytest.approx(30, abs=2)
    [record] = [r for r in caplog.records if getattr(r, "action", "") == "beat.clock_skew"]
    assert "the database clock is 30." in record.getMessage()
    assert "ahead of this host's clock (limit 2.0 s)" in record.getMessage()
    ticker(MemoryPublisher(), host).tick()  # the first tick checks and stores it
    assert BeatHeartbeat.objects.get().clock_skew == pytest.approx(30, abs=2)


@pytest.mark.postgres
def test_a_small_skew_is_not_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="scheduler_app.monitoring"):
        skew = check_skew(FakeClock(timezone.now()), warn=2.0)
    assert skew is not None and abs(skew) < 2
    assert not caplog.records


def test_skew_is_measured_where_the_database_has_a_clock_of_its_own() -> None:
    """PostgreSQL: measured and stored; SQLite (in the beat's own process): not measured."""
    host = FakeClock(timezone.now())
    ticker(MemoryPublisher(), host).tick()
    stored = BeatHeartbeat.objects.get().clock_skew
    if using_postgres():
        assert stored is not None and measure_skew(host) is not None
    else:
        assert stored is None and measure_skew(host) is None
