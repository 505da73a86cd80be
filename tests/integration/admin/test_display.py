"""Times on the admin pages: one format, local with its zone abbreviation and seconds, UTC
beside it; the percentile the monitoring page uses."""

from __future__ import annotations

from datetime import UTC, datetime

from scheduler_app.admin.display import instant_text, local_and_utc
from scheduler_app.monitoring.lateness import nearest_rank as percentile


def test_every_instant_has_seconds_and_its_zone_with_utc_beside() -> None:
    on_the_minute = datetime(2026, 7, 1, 15, 0, tzinfo=UTC)
    past_midnight = datetime(2026, 7, 1, 22, 0, 43, tzinfo=UTC)
    assert instant_text(on_the_minute, "Europe/Riga") == "2026-07-01 18:00:00 EEST (15:00:00 UTC)"
    assert instant_text(past_midnight, "Europe/Riga") == (
        "2026-07-02 01:00:43 EEST (2026-07-01 22:00:43 UTC)"
    )


def test_a_utc_schedule_shows_its_time_once() -> None:
    text = str(local_and_utc(datetime(2026, 7, 1, 15, 0, tzinfo=UTC), "UTC"))
    assert text.count("UTC") == 1


def test_nearest_rank_percentiles() -> None:
    values = [float(v) for v in range(1, 101)]
    assert [percentile(values, p) for p in (0.5, 0.95, 0.99)] == [50.0, 95.0, 99.0]
    assert percentile([], 0.5) is None
    assert percentile([7.0], 0.99) == 7.0
