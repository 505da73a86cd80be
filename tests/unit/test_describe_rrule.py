"""RRULEs described in words, like cron: what the rule does, not its source text."""

from __future__ import annotations

from datetime import datetime

import pytest

from scheduler_app.timing import build_timing
from scheduler_app.timing.describe import describe

MONDAY_0900 = datetime(2026, 1, 5, 9, 0)  # DTSTART: a Monday, 09:00 local


@pytest.mark.parametrize(
    ("rule", "text"),
    [
        ("FREQ=MONTHLY;BYDAY=-1SU;BYHOUR=3;BYMINUTE=0",
         "On the last Sunday of every month at 03:00"),
        ("FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=9;BYMINUTE=0", "Every weekday at 09:00"),
        ("FREQ=DAILY;BYDAY=MO,TU,WE,TH,FR", "Every weekday at 09:00"),
        ("FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,WE;BYHOUR=8;BYMINUTE=30",
         "Every 2 weeks on Monday and Wednesday at 08:30, from 2026-01-05 09:00"),
        ("FREQ=WEEKLY", "Every Monday at 09:00"),
        ("FREQ=DAILY;BYHOUR=2;BYMINUTE=30", "Every day at 02:30"),
        ("FREQ=DAILY;INTERVAL=3", "Every 3 days at 09:00, from 2026-01-05 09:00"),
        ("FREQ=MONTHLY;BYMONTHDAY=-1", "On the last day of every month at 09:00"),
        ("FREQ=MONTHLY;BYMONTHDAY=1,15,-2",
         "On day 1, 15 and the second to last day of every month at 09:00"),
        ("FREQ=MONTHLY;INTERVAL=3;BYMONTHDAY=1",
         "On day 1 of every 3 months at 09:00, from 2026-01-05 09:00"),
        ("FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU;BYHOUR=3",
         "Every year on the last Sunday of March at 03:00"),
        ("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29", "Every year on February 29 at 09:00"),
        ("FREQ=YEARLY", "Every year on January 5 at 09:00"),
        ("FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1",
         "On the last weekday of every month at 09:00"),
        ("FREQ=MONTHLY;BYDAY=2MO", "On the second Monday of every month at 09:00"),
        ("FREQ=MONTHLY;BYMONTHDAY=13;BYDAY=FR",
         "On day 13 of every month when it is a Friday at 09:00"),
        ("FREQ=MONTHLY;BYDAY=MO", "Every Monday at 09:00"),
        ("FREQ=HOURLY", "Every hour at minute 0"),
        ("FREQ=HOURLY;INTERVAL=2;BYMINUTE=15", "Every 2 hours at minute 15, from 2026-01-05 09:00"),
        ("FREQ=HOURLY;BYHOUR=9,10,11;BYDAY=MO",
         "Every hour at minute 0, in hours 09, 10 and 11, on Monday"),
        ("FREQ=MINUTELY;INTERVAL=15", "Every 15 minutes, from 2026-01-05 09:00"),
        ("FREQ=MINUTELY;BYHOUR=9;BYDAY=MO,TU", "Every minute, in hour 09, on Monday and Tuesday"),
        ("FREQ=SECONDLY;INTERVAL=10", "Every 10 seconds, from 2026-01-05 09:00"),
        ("FREQ=DAILY;COUNT=10", "Every day at 09:00, 10 times, from 2026-01-05 09:00"),
        ("FREQ=DAILY;UNTIL=20271231T235959Z", "Every day at 09:00, until 2027-12-31 23:59:59 UTC"),
        ("FREQ=DAILY;UNTIL=20271231", "Every day at 09:00, until 2027-12-31 23:59:59"),
        ("FREQ=YEARLY;BYYEARDAY=1,-1", "Every year on day 1 and the last day of the year at 09:00"),
        ("FREQ=YEARLY;BYWEEKNO=20;BYDAY=MO",
         "Every year in week 20 of the year, on Monday at 09:00"),
        ("FREQ=DAILY;BYHOUR=9,12,15,18;BYMINUTE=0,30",
         "Every day at minute 0 and 30 past hour 09, 12, 15 and 18"),
        ("FREQ=WEEKLY;INTERVAL=2;WKST=SU;BYDAY=SU,MO",
         "Every 2 weeks on Monday and Sunday at 09:00, weeks starting on Sunday, "
         "from 2026-01-05 09:00"),
        ("FREQ=DAILY;BYMONTH=12", "Every day in December at 09:00"),
        ("FREQ=YEARLY;BYMONTH=1,7;BYMONTHDAY=1,15",
         "Every year on day 1 and 15 of January and July at 09:00"),
        ("FREQ=YEARLY;BYDAY=20MO", "Every year on the 20th Monday of the year at 09:00"),
        ("FREQ=MINUTELY;BYSECOND=30", "Every minute at second 30"),
        ("FREQ=HOURLY;BYMONTHDAY=1", "Every hour at minute 0, on day 1 of the month"),
        ("FREQ=MONTHLY;BYMONTH=1,7;BYDAY=1MO", "On the first Monday of January and July at 09:00"),
        ("FREQ=DAILY;BYMONTHDAY=1,15", "Every day, on day 1 and 15 of the month, at 09:00"),
        ("FREQ=SECONDLY;BYMINUTE=0;BYSECOND=0,30", "Every second, in minute 0, at second 0 and 30"),
        ("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=-1", "Every year on the last day of February at 09:00"),
    ],
)  # fmt: skip
def test_an_rrule_is_described_in_words(rule: str, text: str) -> None:
    timing = build_timing(kind="rrule", rule=rule, anchor=MONDAY_0900, timezone="Europe/Riga")
    assert describe(timing) == f"{text}, Europe/Riga"
    assert "FREQ=" not in describe(timing)


def test_the_time_comes_from_dtstart_when_the_rule_has_none() -> None:
    anchor = datetime(2026, 1, 7, 18, 45, 30)  # a Wednesday
    timing = build_timing(kind="rrule", rule="FREQ=WEEKLY", anchor=anchor, timezone="UTC")
    assert describe(timing) == "Every Wednesday at 18:45:30, UTC"


def test_many_times_of_day_are_listed_by_minute_and_hour() -> None:
    rule = "FREQ=DAILY;BYHOUR=8,9,10,11,12,13,14;BYMINUTE=0,15,30,45"
    timing = build_timing(kind="rrule", rule=rule, anchor=MONDAY_0900, timezone="UTC")
    assert describe(timing) == (
        "Every day at minute 0, 15, 30 and 45 past hour 08, 09, 10, 11, 12, 13 and 14, UTC"
    )
