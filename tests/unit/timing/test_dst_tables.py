"""DST tables, Europe, Asia and Africa: every policy and rule kind, exact UTC instants.

Expected instants are computed by hand from the transition in each comment (checked against
tzdata with zoneinfo), never by calling the engine. "gap" = local times that do not exist
(spring forward), "fold" = local times that happen twice (fall back). See dst_cases.py.
"""

from __future__ import annotations

import pytest

from .dst_cases import Case, L, check, fold, gap, pairs

DAILY_0330 = (("cron", "30 3 * * *"), ("rrule", "FREQ=DAILY;BYHOUR=3;BYMINUTE=30"))
DAILY_0230 = (("cron", "30 2 * * *"), ("rrule", "FREQ=DAILY;BYHOUR=2;BYMINUTE=30"))

CASES: list[Case] = [
    # Europe/Riga 2024-03-31 01:00Z: +02 -> +03, local 03:00 jumps to 04:00 (gap 03:00-03:59).
    # 03:30+02 the day before = 01:30Z; shifted 03:30+02 = 01:30Z (04:30 local); the jump is
    # 01:00Z; 03:30+03 the day after = 00:30Z.
    *(
        gap(
            f"riga-gap-{kind}",
            "Europe/Riga",
            kind,
            rule,
            "2024-03-30T00:00/2024-04-01T12:00",
            skip="2024-03-30T01:30 2024-04-01T00:30",
            shift="2024-03-30T01:30 2024-03-31T01:30 2024-04-01T00:30",
            next_valid="2024-03-30T01:30 2024-03-31T01:00 2024-04-01T00:30",
            anchor=L(2024, 3, 1, 3, 30),
        )
        for kind, rule in DAILY_0330
    ),
    gap(
        "riga-gap-once",
        "Europe/Riga",
        "once",
        L(2024, 3, 31, 3, 30),
        "2024-01-01T00:00/2025-01-01T00:00",
        skip="",
        shift="2024-03-31T01:30",
        next_valid="2024-03-31T01:00",
    ),
    # '15 * * * *': 01:15+02 = 23:15Z, 02:15+02 = 00:15Z, 03:15 missing (shifted it lands on
    # 04:15 = 01:15Z: one slot; next_valid adds the jump 01:00Z), 04:15+03 = 01:15Z.
    gap(
        "riga-gap-star",
        "Europe/Riga",
        "star",
        "15 * * * *",
        "2024-03-30T23:00/2024-03-31T02:00",
        skip="2024-03-30T23:15 2024-03-31T00:15 2024-03-31T01:15",
        shift="2024-03-30T23:15 2024-03-31T00:15 2024-03-31T01:15",
        next_valid="2024-03-30T23:15 2024-03-31T00:15 2024-03-31T01:00 2024-03-31T01:15",
    ),
    # '*/30 3-4': every wall time in the gap lands on a real slot (04:00 = 01:00Z, 04:30 =
    # 01:30Z), so each policy gives the same two slots: same instant = one slot.
    gap(
        "riga-gap-dedupe",
        "Europe/Riga",
        "star",
        "*/30 3-4 * * *",
        "2024-03-31T00:00/2024-03-31T03:00",
        skip="2024-03-31T01:00 2024-03-31T01:30",
        shift="2024-03-31T01:00 2024-03-31T01:30",
        next_valid="2024-03-31T01:00 2024-03-31T01:30",
    ),
    # Europe/Riga 2024-10-27 01:00Z: +03 -> +02, local 04:00 back to 03:00 (fold 03:00-03:59).
    # 03:30+03 the day before = 00:30Z; on the day 03:30+03 = 00:30Z and 03:30+02 = 01:30Z.
    *(
        fold(
            f"riga-fold-{kind}",
            "Europe/Riga",
            kind,
            rule,
            "2024-10-26T00:00/2024-10-28T12:00",
            first="2024-10-26T00:30 2024-10-27T00:30 2024-10-28T01:30",
            last="2024-10-26T00:30 2024-10-27T01:30 2024-10-28T01:30",
            both="2024-10-26T00:30 2024-10-27T00:30 2024-10-27T01:30 2024-10-28T01:30",
            anchor=L(2024, 10, 1, 3, 30),
        )
        for kind, rule in DAILY_0330
    ),
    fold(
        "riga-fold-once",
        "Europe/Riga",
        "once",
        L(2024, 10, 27, 3, 30),
        "2024-01-01T00:00/2025-01-01T00:00",
        first="2024-10-27T00:30",
        last="2024-10-27T01:30",
        both="2024-10-27T00:30 2024-10-27T01:30",
    ),
    # '*/30': 03:00 -> 00:00Z and 01:00Z, 03:30 -> 00:30Z and 01:30Z, 04:00+02 = 02:00Z.
    fold(
        "riga-fold-star",
        "Europe/Riga",
        "star",
        "*/30 * * * *",
        "2024-10-26T23:45/2024-10-27T02:15",
        first="2024-10-27T00:00 2024-10-27T00:30 2024-10-27T02:00",
        last="2024-10-27T01:00 2024-10-27T01:30 2024-10-27T02:00",
        both="2024-10-27T00:00 2024-10-27T00:30 2024-10-27T01:00 2024-10-27T01:30 2024-10-27T02:00",
    ),
    # Hourly RRULE at :30: 02:30+03 = 23:30Z, 03:30 twice (00:30Z, 01:30Z), 04:30+02 = 02:30Z.
    fold(
        "riga-fold-hourly-rrule",
        "Europe/Riga",
        "rrule",
        "FREQ=HOURLY;BYMINUTE=30",
        "2024-10-26T23:00/2024-10-27T02:30",
        first="2024-10-26T23:30 2024-10-27T00:30 2024-10-27T02:30",
        last="2024-10-26T23:30 2024-10-27T01:30 2024-10-27T02:30",
        both="2024-10-26T23:30 2024-10-27T00:30 2024-10-27T01:30 2024-10-27T02:30",
        anchor=L(2024, 10, 1, 0, 30),
    ),
    # Europe/Moscow 2014-10-25 22:00Z: +04 -> +03 for good, local 02:00 back to 01:00 (fold
    # 01:00-01:59 on 10-26). 01:30+04 = 21:30Z the day before; 01:30+03 = 22:30Z after.
    fold(
        "moscow-2014-cron",
        "Europe/Moscow",
        "cron",
        "30 1 * * *",
        "2014-10-24T12:00/2014-10-27T00:00",
        first="2014-10-24T21:30 2014-10-25T21:30 2014-10-26T22:30",
        last="2014-10-24T21:30 2014-10-25T22:30 2014-10-26T22:30",
        both="2014-10-24T21:30 2014-10-25T21:30 2014-10-25T22:30 2014-10-26T22:30",
    ),
    # '0 * * * *': 01:00 twice (21:00Z, 22:00Z), then 02:00+03 = 23:00Z.
    fold(
        "moscow-2014-star",
        "Europe/Moscow",
        "star",
        "0 * * * *",
        "2014-10-25T20:00/2014-10-25T23:00",
        first="2014-10-25T21:00 2014-10-25T23:00",
        last="2014-10-25T22:00 2014-10-25T23:00",
        both="2014-10-25T21:00 2014-10-25T22:00 2014-10-25T23:00",
    ),
    fold(
        "moscow-2014-once",
        "Europe/Moscow",
        "once",
        L(2014, 10, 26, 1, 30),
        "2014-01-01T00:00/2015-01-01T00:00",
        first="2014-10-25T21:30",
        last="2014-10-25T22:30",
        both="2014-10-25T21:30 2014-10-25T22:30",
    ),
    # Asia/Kolkata: +05:30 all year, no transitions: every policy gives 09:30-05:30 = 04:00Z.
    *(
        gap(
            f"kolkata-{kind}",
            "Asia/Kolkata",
            kind,
            rule,
            "2024-03-09T00:00/2024-03-11T00:00",
            skip="2024-03-09T04:00 2024-03-10T04:00",
            shift="2024-03-09T04:00 2024-03-10T04:00",
            next_valid="2024-03-09T04:00 2024-03-10T04:00",
            anchor=L(2024, 1, 1, 9, 30),
        )
        for kind, rule in (("cron", "30 9 * * *"), ("rrule", "FREQ=DAILY"))
    ),
    fold(
        "kolkata-star",
        "Asia/Kolkata",
        "star",
        "*/30 * * * *",
        "2024-11-03T00:00/2024-11-03T01:00",
        first="2024-11-03T00:30 2024-11-03T01:00",
        last="2024-11-03T00:30 2024-11-03T01:00",
        both="2024-11-03T00:30 2024-11-03T01:00",
    ),
    # Africa/Casablanca 2024-03-10 02:00Z (Ramadan): +01 -> +00, local 03:00 back to 02:00.
    # 02:30+01 = 01:30Z; 02:30+00 = 02:30Z.
    *(
        fold(
            f"casablanca-fold-{kind}",
            "Africa/Casablanca",
            kind,
            rule,
            "2024-03-09T00:00/2024-03-11T12:00",
            first="2024-03-09T01:30 2024-03-10T01:30 2024-03-11T02:30",
            last="2024-03-09T01:30 2024-03-10T02:30 2024-03-11T02:30",
            both="2024-03-09T01:30 2024-03-10T01:30 2024-03-10T02:30 2024-03-11T02:30",
            anchor=L(2024, 3, 1, 2, 30),
        )
        for kind, rule in DAILY_0230
    ),
    # Africa/Casablanca 2024-04-14 02:00Z (after Ramadan): +00 -> +01, 02:00 jumps to 03:00.
    # 02:30+00 = 02:30Z (also the shifted time); jump 02:00Z; 02:30+01 = 01:30Z.
    gap(
        "casablanca-gap-cron",
        "Africa/Casablanca",
        "cron",
        "30 2 * * *",
        "2024-04-13T00:00/2024-04-15T12:00",
        skip="2024-04-13T02:30 2024-04-15T01:30",
        shift="2024-04-13T02:30 2024-04-14T02:30 2024-04-15T01:30",
        next_valid="2024-04-13T02:30 2024-04-14T02:00 2024-04-15T01:30",
    ),
    gap(
        "casablanca-gap-once",
        "Africa/Casablanca",
        "once",
        L(2024, 4, 14, 2, 30),
        "2024-01-01T00:00/2025-01-01T00:00",
        skip="",
        shift="2024-04-14T02:30",
        next_valid="2024-04-14T02:00",
    ),
]


@pytest.mark.parametrize(("case", "policy"), pairs(CASES))
def test_transition_table(case: Case, policy: str) -> None:
    check(case, policy)
