"""DST tables, the Americas and the Pacific: every policy and rule kind, exact UTC instants.

Expected instants are computed by hand from the transition in each comment (checked against
tzdata with zoneinfo), never by calling the engine. See dst_cases.py for the format.
"""

from __future__ import annotations

import pytest

from .dst_cases import Case, L, check, fold, gap, pairs

CASES: list[Case] = [
    # America/New_York 2024-03-10 07:00Z: -05 -> -04, local 02:00 jumps to 03:00.
    # 02:30-05 = 07:30Z the day before (and shifted on the day); jump 07:00Z; 02:30-04 = 06:30Z.
    *(
        gap(
            f"new-york-gap-{kind}",
            "America/New_York",
            kind,
            rule,
            "2024-03-09T00:00/2024-03-11T12:00",
            skip="2024-03-09T07:30 2024-03-11T06:30",
            shift="2024-03-09T07:30 2024-03-10T07:30 2024-03-11T06:30",
            next_valid="2024-03-09T07:30 2024-03-10T07:00 2024-03-11T06:30",
            anchor=L(2024, 1, 1, 2, 30),
        )
        for kind, rule in (("cron", "30 2 * * *"), ("rrule", "FREQ=DAILY;BYHOUR=2;BYMINUTE=30"))
    ),
    # America/New_York 2024-11-03 06:00Z: -04 -> -05, local 02:00 back to 01:00.
    # 01:30-04 = 05:30Z, 01:30-05 = 06:30Z.
    fold(
        "new-york-fold-cron",
        "America/New_York",
        "cron",
        "30 1 * * *",
        "2024-11-02T00:00/2024-11-04T12:00",
        first="2024-11-02T05:30 2024-11-03T05:30 2024-11-04T06:30",
        last="2024-11-02T05:30 2024-11-03T06:30 2024-11-04T06:30",
        both="2024-11-02T05:30 2024-11-03T05:30 2024-11-03T06:30 2024-11-04T06:30",
    ),
    # '*/20': 01:00/01:20/01:40 at -04 (05:xxZ) and at -05 (06:xxZ), then 02:00-05 = 07:00Z.
    fold(
        "new-york-fold-star",
        "America/New_York",
        "star",
        "*/20 * * * *",
        "2024-11-03T04:50/2024-11-03T07:10",
        first="2024-11-03T05:00 2024-11-03T05:20 2024-11-03T05:40 2024-11-03T07:00",
        last="2024-11-03T06:00 2024-11-03T06:20 2024-11-03T06:40 2024-11-03T07:00",
        both="2024-11-03T05:00 2024-11-03T05:20 2024-11-03T05:40 2024-11-03T06:00"
        " 2024-11-03T06:20 2024-11-03T06:40 2024-11-03T07:00",
    ),
    # America/Santiago 2024-04-07 03:00Z: -03 -> -04, local 24:00 on 04-06 back to 23:00 (fold
    # 23:00-23:59 on 04-06). 23:30-03 = 02:30Z the next UTC day; 23:30-04 = 03:30Z.
    fold(
        "santiago-fold-cron",
        "America/Santiago",
        "cron",
        "30 23 * * *",
        "2024-04-05T12:00/2024-04-08T12:00",
        first="2024-04-06T02:30 2024-04-07T02:30 2024-04-08T03:30",
        last="2024-04-06T02:30 2024-04-07T03:30 2024-04-08T03:30",
        both="2024-04-06T02:30 2024-04-07T02:30 2024-04-07T03:30 2024-04-08T03:30",
    ),
    # Midnight itself is not repeated: 04-06 00:00-03 = 03:00Z, 04-07 00:00-04 = 04:00Z.
    fold(
        "santiago-fold-midnight",
        "America/Santiago",
        "cron",
        "0 0 * * *",
        "2024-04-05T12:00/2024-04-08T12:00",
        first="2024-04-06T03:00 2024-04-07T04:00 2024-04-08T04:00",
        last="2024-04-06T03:00 2024-04-07T04:00 2024-04-08T04:00",
        both="2024-04-06T03:00 2024-04-07T04:00 2024-04-08T04:00",
    ),
    # America/Santiago 2024-09-08 04:00Z: -04 -> -03, local 00:00 jumps to 01:00 (gap
    # 00:00-00:59 on 09-08). Midnight shifted: 00:00-04 = 04:00Z, which is the jump itself.
    gap(
        "santiago-gap-midnight",
        "America/Santiago",
        "cron",
        "0 0 * * *",
        "2024-09-06T12:00/2024-09-10T12:00",
        skip="2024-09-07T04:00 2024-09-09T03:00 2024-09-10T03:00",
        shift="2024-09-07T04:00 2024-09-08T04:00 2024-09-09T03:00 2024-09-10T03:00",
        next_valid="2024-09-07T04:00 2024-09-08T04:00 2024-09-09T03:00 2024-09-10T03:00",
    ),
    # 00:30: 04:30Z before; shifted 04:30Z (01:30 local); jump 04:00Z; 00:30-03 = 03:30Z after.
    gap(
        "santiago-gap-0030",
        "America/Santiago",
        "cron",
        "30 0 * * *",
        "2024-09-06T12:00/2024-09-09T12:00",
        skip="2024-09-07T04:30 2024-09-09T03:30",
        shift="2024-09-07T04:30 2024-09-08T04:30 2024-09-09T03:30",
        next_valid="2024-09-07T04:30 2024-09-08T04:00 2024-09-09T03:30",
    ),
    gap(
        "santiago-gap-once",
        "America/Santiago",
        "once",
        L(2024, 9, 8, 0, 30),
        "2024-01-01T00:00/2025-01-01T00:00",
        skip="",
        shift="2024-09-08T04:30",
        next_valid="2024-09-08T04:00",
    ),
    # '@hourly': 23:00-04 = 03:00Z; 00:00 missing (shifted or next_valid it is 01:00 = 04:00Z).
    gap(
        "santiago-gap-star",
        "America/Santiago",
        "star",
        "@hourly",
        "2024-09-08T02:30/2024-09-08T06:00",
        skip="2024-09-08T03:00 2024-09-08T04:00 2024-09-08T05:00 2024-09-08T06:00",
        shift="2024-09-08T03:00 2024-09-08T04:00 2024-09-08T05:00 2024-09-08T06:00",
        next_valid="2024-09-08T03:00 2024-09-08T04:00 2024-09-08T05:00 2024-09-08T06:00",
    ),
    # Australia/Sydney 2024-04-06 16:00Z: +11 -> +10, local 03:00 back to 02:00 on 04-07.
    # 02:30+11 = 15:30Z, 02:30+10 = 16:30Z.
    fold(
        "sydney-fold-cron",
        "Australia/Sydney",
        "cron",
        "30 2 * * *",
        "2024-04-05T00:00/2024-04-08T00:00",
        first="2024-04-05T15:30 2024-04-06T15:30 2024-04-07T16:30",
        last="2024-04-05T15:30 2024-04-06T16:30 2024-04-07T16:30",
        both="2024-04-05T15:30 2024-04-06T15:30 2024-04-06T16:30 2024-04-07T16:30",
    ),
    # Australia/Sydney 2024-10-05 16:00Z: +10 -> +11, local 02:00 jumps to 03:00 on 10-06.
    *(
        gap(
            f"sydney-gap-{kind}",
            "Australia/Sydney",
            kind,
            rule,
            "2024-10-04T00:00/2024-10-07T00:00",
            skip="2024-10-04T16:30 2024-10-06T15:30",
            shift="2024-10-04T16:30 2024-10-05T16:30 2024-10-06T15:30",
            next_valid="2024-10-04T16:30 2024-10-05T16:00 2024-10-06T15:30",
            anchor=L(2024, 9, 1, 2, 30),
        )
        for kind, rule in (("cron", "30 2 * * *"), ("rrule", "FREQ=DAILY;BYHOUR=2;BYMINUTE=30"))
    ),
    # Australia/Lord_Howe 2024-04-06 15:00Z: +11 -> +10:30, local 02:00 back to 01:30 on 04-07
    # (fold 01:30-01:59). 01:45+11 = 14:45Z, 01:45+10:30 = 15:15Z.
    fold(
        "lord-howe-fold-cron",
        "Australia/Lord_Howe",
        "cron",
        "45 1 * * *",
        "2024-04-05T00:00/2024-04-08T00:00",
        first="2024-04-05T14:45 2024-04-06T14:45 2024-04-07T15:15",
        last="2024-04-05T14:45 2024-04-06T15:15 2024-04-07T15:15",
        both="2024-04-05T14:45 2024-04-06T14:45 2024-04-06T15:15 2024-04-07T15:15",
    ),
    # '*/15': 01:30 (14:30Z, 15:00Z), 01:45 (14:45Z, 15:15Z), 02:00+10:30 = 15:30Z.
    fold(
        "lord-howe-fold-star",
        "Australia/Lord_Howe",
        "star",
        "*/15 * * * *",
        "2024-04-06T14:20/2024-04-06T15:35",
        first="2024-04-06T14:30 2024-04-06T14:45 2024-04-06T15:30",
        last="2024-04-06T15:00 2024-04-06T15:15 2024-04-06T15:30",
        both="2024-04-06T14:30 2024-04-06T14:45 2024-04-06T15:00 2024-04-06T15:15 2024-04-06T15:30",
    ),
    # Australia/Lord_Howe 2024-10-05 15:30Z: +10:30 -> +11, local 02:00 jumps to 02:30 on 10-06
    # (gap 02:00-02:29). 02:15+10:30 = 15:45Z (shifted: 02:45 local); jump 15:30Z.
    gap(
        "lord-howe-gap-cron",
        "Australia/Lord_Howe",
        "cron",
        "15 2 * * *",
        "2024-10-04T00:00/2024-10-07T00:00",
        skip="2024-10-04T15:45 2024-10-06T15:15",
        shift="2024-10-04T15:45 2024-10-05T15:45 2024-10-06T15:15",
        next_valid="2024-10-04T15:45 2024-10-05T15:30 2024-10-06T15:15",
    ),
    # '*/20': 01:40 = 15:10Z; 02:00 and 02:20 missing (shifted 15:30Z and 15:50Z, the latter
    # after the real 02:40 = 15:40Z: the engine must re-order); 03:00+11 = 16:00Z.
    gap(
        "lord-howe-gap-star",
        "Australia/Lord_Howe",
        "star",
        "*/20 * * * *",
        "2024-10-05T15:00/2024-10-05T16:00",
        skip="2024-10-05T15:10 2024-10-05T15:40 2024-10-05T16:00",
        shift="2024-10-05T15:10 2024-10-05T15:30 2024-10-05T15:40 2024-10-05T15:50"
        " 2024-10-05T16:00",
        next_valid="2024-10-05T15:10 2024-10-05T15:30 2024-10-05T15:40 2024-10-05T16:00",
    ),
    # Pacific/Apia 2011-12-30 10:00Z: -10 -> +14, local 2011-12-30 00:00 jumps to 12-31 00:00:
    # all of 12-30 is a gap. 09:00-10 = 19:00Z; 12-30 09:00 shifted = 12-30T19:00Z, which is
    # also 12-31 09:00+14 (one slot); the jump is 12-30T10:00Z.
    gap(
        "apia-2011-daily",
        "Pacific/Apia",
        "cron",
        "0 9 * * *",
        "2011-12-28T00:00/2012-01-01T00:00",
        skip="2011-12-28T19:00 2011-12-29T19:00 2011-12-30T19:00 2011-12-31T19:00",
        shift="2011-12-28T19:00 2011-12-29T19:00 2011-12-30T19:00 2011-12-31T19:00",
        next_valid="2011-12-28T19:00 2011-12-29T19:00 2011-12-30T10:00 2011-12-30T19:00"
        " 2011-12-31T19:00",
    ),
    # Only on 30 December: 12:00-10 = 22:00Z if shifted; 2012-12-30 12:00+14 = 12-29T22:00Z.
    gap(
        "apia-2011-dec30",
        "Pacific/Apia",
        "cron",
        "0 12 30 12 *",
        "2011-12-01T00:00/2012-12-31T00:00",
        skip="2012-12-29T22:00",
        shift="2011-12-30T22:00 2012-12-29T22:00",
        next_valid="2011-12-30T10:00 2012-12-29T22:00",
    ),
    gap(
        "apia-2011-once",
        "Pacific/Apia",
        "once",
        L(2011, 12, 30, 12, 0),
        "2011-01-01T00:00/2013-01-01T00:00",
        skip="",
        shift="2011-12-30T22:00",
        next_valid="2011-12-30T10:00",
    ),
    # Pacific/Apia 2011-04-02 14:00Z: -10 -> -11, local 04:00 back to 03:00.
    # 03:30-10 = 13:30Z, 03:30-11 = 14:30Z.
    fold(
        "apia-2011-fold",
        "Pacific/Apia",
        "cron",
        "30 3 * * *",
        "2011-04-01T00:00/2011-04-03T23:00",
        first="2011-04-01T13:30 2011-04-02T13:30 2011-04-03T14:30",
        last="2011-04-01T13:30 2011-04-02T14:30 2011-04-03T14:30",
        both="2011-04-01T13:30 2011-04-02T13:30 2011-04-02T14:30 2011-04-03T14:30",
    ),
]


@pytest.mark.parametrize(("case", "policy"), pairs(CASES))
def test_transition_table(case: Case, policy: str) -> None:
    check(case, policy)
