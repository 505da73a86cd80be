"""Day-of-week ranges that end in Sunday by name (``MON-SUN``, ``FRI-SUN``), as croniter reads them.

The expected days were checked against croniter 6 (``croniter(expr, start).get_next``) for the
same start, 2027-01-01 (a Friday); croniter is not a dependency, so its answers are written here.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from scheduler_app.errors import InvalidRule
from scheduler_app.timing import build_timing, describe, parse_cron, slots_between


def _days(expression: str, count: int = 7) -> list[str]:
    timing = build_timing(kind="cron", rule=expression)
    start = datetime(2027, 1, 1, tzinfo=UTC)
    slots = slots_between(timing, start, datetime(2028, 1, 1, tzinfo=UTC), count)
    return [slot.strftime("%a %d") for slot in slots]


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("0 9 * * MON-SUN", (0, 1, 2, 3, 4, 5, 6)),
        ("0 9 * * mon-sun", (0, 1, 2, 3, 4, 5, 6)),
        ("0 9 * * FRI-SUN", (0, 5, 6)),
        ("0 9 * * SAT-SUN", (0, 6)),
        ("0 9 * * MON-SUN/2", (0, 1, 3, 5)),  # 1, 3, 5, 7: Monday, Wednesday, Friday, Sunday
        ("0 9 * * THU-SUN/2", (4, 6)),  # 4, 6: Thursday, Saturday
        ("0 9 * * SUN-SUN", (0,)),  # a range of one day stays one day
        ("0 9 * * 1-7", (0, 1, 2, 3, 4, 5, 6)),  # unchanged: numbers always worked
    ],
)
def test_ranges_ending_in_sunday_by_name(expression: str, expected: tuple[int, ...]) -> None:
    assert parse_cron(expression).weekdays == expected


def test_fri_sun_fires_friday_to_sunday_like_croniter() -> None:
    assert _days("0 9 * * FRI-SUN") == [
        "Fri 01",
        "Sat 02",
        "Sun 03",
        "Fri 08",
        "Sat 09",
        "Sun 10",
        "Fri 15",
    ]


def test_mon_sun_is_every_day() -> None:
    assert _days("0 9 * * MON-SUN", 8) == _days("0 9 * * *", 8)


@pytest.mark.parametrize("expression", ["0 0 * * FRI-MON", "0 0 * * 5-0", "0 0 * * SUN-SAT-1"])
def test_other_backward_ranges_are_still_refused(expression: str) -> None:
    with pytest.raises(InvalidRule) as caught:
        parse_cron(expression)
    assert caught.value.field == "cron.day_of_week"


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ("0 10 * * FRI-SUN", "At 10:00, Friday through Sunday, UTC"),
        ("0 10 * * THU-SUN", "At 10:00, Thursday through Sunday, UTC"),
        ("0 10 * * SAT,SUN,MON", "At 10:00, on Sunday, Monday and Saturday, UTC"),
    ],
)
def test_ranges_ending_in_sunday_are_described_as_ranges(expression: str, words: str) -> None:
    assert describe(build_timing(kind="cron", rule=expression)) == words
