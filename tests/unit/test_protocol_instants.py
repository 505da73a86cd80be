"""The message header's instants: UTC text, the two local times of a fall-back night apart."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from scheduler_app.handoff.protocol import _iso


def test_an_instant_is_written_in_utc_with_z() -> None:
    assert _iso(datetime(2026, 1, 5, 9, 0, tzinfo=ZoneInfo("Asia/Tokyo"))) == "2026-01-05T00:00:00Z"
    assert _iso(datetime(2026, 1, 5, 0, 0, 0, 5, tzinfo=UTC)) == "2026-01-05T00:00:00.000005Z"


def test_the_two_0330s_of_a_fall_back_night_are_written_an_hour_apart() -> None:
    first = datetime(2026, 10, 25, 3, 30, tzinfo=ZoneInfo("Europe/Riga"))
    second = first.replace(fold=1)
    written = [_iso(when) for when in (first, second, second, first)]
    assert written == [
        "2026-10-25T00:30:00Z",
        "2026-10-25T01:30:00Z",
        "2026-10-25T01:30:00Z",
        "2026-10-25T00:30:00Z",
    ]
