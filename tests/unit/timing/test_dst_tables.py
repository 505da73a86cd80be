"""Table tests on real DST transitions: every policy, every rule kind, exact UTC instants.

Every expected instant is computed by hand from the transition written in the comment above
each group (checked against tzdata with ``zoneinfo``), never by calling the engine.
Notation: "gap" = local times that do not exist (spring forward), "fold" = local times that
happen twice (fall back). Windows are ``(after, until]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import pytest

from scheduler_app.timing import Timing, build_timing

from .helpers import window

GAP_POLICIES = ("skip", "shift", "next_valid")
FOLD_POLICIES = ("first", "last", "both")


@dataclass(frozen=True)
class Case:
    name: str
    zone: str
    kind: str  # "cron", "star" (a cron whose minute or hour starts with '*'), "rrule", "once"
    rule: str | datetime
    after: str
    until: str
    expected: dict[str, list[str]]
    anchor: datetime | None = None
    transition: str = field(default="gap")

    def timing(self, policy: str) -> Timing:
        kind = "cron" if self.kind == "star" else self.kind
        nonexistent = policy if self.transition == "gap" else None
        ambiguous = policy if self.transition == "fold" else None
        return build_timing(
            kind=kind,
            rule=self.rule,
            timezone=self.zone,
            anchor=self.anchor,
            nonexistent=nonexistent,
            ambiguous=ambiguous,
        )


# The documented defaults ('auto'), per rule kind and transition.
AUTO = {
    ("cron", "gap"): "next_valid",
    ("cron", "fold"): "first",
    ("star", "gap"): "skip",
    ("star", "fold"): "both",
    ("rrule", "gap"): "shift",
    ("rrule", "fold"): "first",
    ("once", "gap"): "shift",
    ("once", "fold"): "first",
}


def gap(name: str, zone: str, kind: str, rule: str | datetime, after: str, until: str,
        skip: list[str], shift: list[str], next_valid: list[str],
        anchor: datetime | None = None) -> Case:  # fmt: skip
    expected = {"skip": skip, "shift": shift, "next_valid": next_valid}
    return Case(name, zone, kind, rule, after, until, expected, anchor, "gap")


def fold(name: str, zone: str, kind: str, rule: str | datetime, after: str, until: str,
         first: list[str], last: list[str], both: list[str],
         anchor: datetime | None = None) -> Case:  # fmt: skip
    expected = {"first": first, "last": last, "both": both}
    return Case(name, zone, kind, rule, after, until, expected, anchor, "fold")


L = datetime  # naive local wall time in the case's zone

CASES = [
    # Europe/Riga 2024-03-31 01:00Z: +02 -> +03, local 03:00 jumps to 04:00 (gap 03:00-03:59).
    # 03:30 the day before = 01:30Z; shifted 03:30+02 = 01:30Z (04:30 local); jump = 01:00Z;
    # 03:30+03 the day after = 00:30Z.
    *(
        gap(f"riga-gap-{kind}", "Europe/Riga", kind, rule, "2024-03-30T00:00", "2024-04-01T12:00",
            skip=["2024-03-30T01:30Z", "2024-04-01T00:30Z"],
            shift=["2024-03-30T01:30Z", "2024-03-31T01:30Z", "2024-04-01T00:30Z"],
            next_valid=["2024-03-30T01:30Z", "2024-03-31T01:00Z", "2024-04-01T00:30Z"],
            anchor=L(2024, 3, 1, 3, 30))  # fmt: skip
        for kind, rule in (("cron", "30 3 * * *"), ("rrule", "FREQ=DAILY;BYHOUR=3;BYMINUTE=30"))
    ),
    gap("riga-gap-once", "Europe/Riga", "once", L(2024, 3, 31, 3, 30), "2024-01-01T00:00",
        "2025-01-01T00:00", skip=[], shift=["2024-03-31T01:30Z"],
        next_valid=["2024-03-31T01:00Z"]),  # fmt: skip
    # '15 * * * *': 01:15+02 = 23:15Z, 02:15+02 = 00:15Z, 03:15 missing (shift lands on 04:15 =
    # 01:15Z, one slot; next_valid adds the jump 01:00Z), 04:15+03 = 01:15Z.
    gap("riga-gap-star", "Europe/Riga", "star", "15 * * * *", "2024-03-30T23:00",
        "2024-03-31T02:00",
        skip=["2024-03-30T23:15Z", "2024-03-31T00:15Z", "2024-03-31T01:15Z"],
        shift=["2024-03-30T23:15Z", "2024-03-31T00:15Z", "2024-03-31T01:15Z"],
        next_valid=["2024-03-30T23:15Z", "2024-03-31T00:15Z", "2024-03-31T01:00Z",
                    "2024-03-31T01:15Z"]),  # fmt: skip
    # Europe/Riga 2024-10-27 01:00Z: +03 -> +02, local 04:00 back to 03:00 (fold 03:00-03:59).
    # 03:30 the day before = 00:30Z; on the day 03:30+03 = 00:30Z and 03:30+02 = 01:30Z.
    *(
        fold(f"riga-fold-{kind}", "Europe/Riga", kind, rule, "2024-10-26T00:00", "2024-10-28T12:00",
             first=["2024-10-26T00:30Z", "2024-10-27T00:30Z", "2024-10-28T01:30Z"],
             last=["2024-10-26T00:30Z", "2024-10-27T01:30Z", "2024-10-28T01:30Z"],
             both=["2024-10-26T00:30Z", "2024-10-27T00:30Z", "2024-10-27T01:30Z",
                   "2024-10-28T01:30Z"],
             anchor=L(2024, 10, 1, 3, 30))  # fmt: skip
        for kind, rule in (("cron", "30 3 * * *"), ("rrule", "FREQ=DAILY;BYHOUR=3;BYMINUTE=30"))
    ),
    fold("riga-fold-once", "Europe/Riga", "once", L(2024, 10, 27, 3, 30), "2024-01-01T00:00",
         "2025-01-01T00:00", first=["2024-10-27T00:30Z"], last=["2024-10-27T01:30Z"],
         both=["2024-10-27T00:30Z", "2024-10-27T01:30Z"]),  # fmt: skip
    # '*/30': 03:00 -> 00:00Z/01:00Z, 03:30 -> 00:30Z/01:30Z, 04:00+02 = 02:00Z.
    fold("riga-fold-star", "Europe/Riga", "star", "*/30 * * * *", "2024-10-26T23:45",
         "2024-10-27T02:15",
         first=["2024-10-27T00:00Z", "2024-10-27T00:30Z", "2024-10-27T02:00Z"],
         last=["2024-10-27T01:00Z", "2024-10-27T01:30Z", "2024-10-27T02:00Z"],
         both=["2024-10-27T00:00Z", "2024-10-27T00:30Z", "2024-10-27T01:00Z",
               "2024-10-27T01:30Z", "2024-10-27T02:00Z"]),  # fmt: skip
    # Hourly RRULE at :30: 02:30+03 = 23:30Z, 03:30 twice (00:30Z, 01:30Z), 04:30+02 = 02:30Z.
    fold("riga-fold-hourly-rrule", "Europe/Riga", "rrule", "FREQ=HOURLY;BYMINUTE=30",
         "2024-10-26T23:00", "2024-10-27T02:30",
         first=["2024-10-26T23:30Z", "2024-10-27T00:30Z", "2024-10-27T02:30Z"],
         last=["2024-10-26T23:30Z", "2024-10-27T01:30Z", "2024-10-27T02:30Z"],
         both=["2024-10-26T23:30Z", "2024-10-27T00:30Z", "2024-10-27T01:30Z",
               "2024-10-27T02:30Z"], anchor=L(2024, 10, 1, 0, 30)),  # fmt: skip
    # Europe/Moscow 2014-10-25 22:00Z: +04 -> +03 for good, local 02:00 back to 01:00
    # (fold 01:00-01:59 on 10-26). 01:30+04 = 21:30Z the day before; 01:30+03 = 22:30Z after.
    fold("moscow-2014-cron", "Europe/Moscow", "cron", "30 1 * * *", "2014-10-24T12:00",
         "2014-10-27T00:00",
         first=["2014-10-24T21:30Z", "2014-10-25T21:30Z", "2014-10-26T22:30Z"],
         last=["2014-10-24T21:30Z", "2014-10-25T22:30Z", "2014-10-26T22:30Z"],
         both=["2014-10-24T21:30Z", "2014-10-25T21:30Z", "2014-10-25T22:30Z",
               "2014-10-26T22:30Z"]),  # fmt: skip
    # '0 * * * *': 01:00 twice (21:00Z, 22:00Z), 02:00+03 = 23:00Z.
    fold("moscow-2014-star", "Europe/Moscow", "star", "0 * * * *", "2014-10-25T20:00",
         "2014-10-25T23:00", first=["2014-10-25T21:00Z", "2014-10-25T23:00Z"],
         last=["2014-10-25T22:00Z", "2014-10-25T23:00Z"],
         both=["2014-10-25T21:00Z", "2014-10-25T22:00Z", "2014-10-25T23:00Z"]),  # fmt: skip
    fold("moscow-2014-once", "Europe/Moscow", "once", L(2014, 10, 26, 1, 30), "2014-01-01T00:00",
         "2015-01-01T00:00", first=["2014-10-25T21:30Z"], last=["2014-10-25T22:30Z"],
         both=["2014-10-25T21:30Z", "2014-10-25T22:30Z"]),  # fmt: skip
    # America/New_York 2024-03-10 07:00Z: -05 -> -04, local 02:00 jumps to 03:00.
    # 02:30-05 = 07:30Z the day before and shifted; jump 07:00Z; 02:30-04 = 06:30Z after.
    *(
        gap(f"new-york-gap-{kind}", "America/New_York", kind, rule, "2024-03-09T00:00",
            "2024-03-11T12:00",
            skip=["2024-03-09T07:30Z", "2024-03-11T06:30Z"],
            shift=["2024-03-09T07:30Z", "2024-03-10T07:30Z", "2024-03-11T06:30Z"],
            next_valid=["2024-03-09T07:30Z", "2024-03-10T07:00Z", "2024-03-11T06:30Z"],
            anchor=L(2024, 1, 1, 2, 30))  # fmt: skip
        for kind, rule in (("cron", "30 2 * * *"), ("rrule", "FREQ=DAILY;BYHOUR=2;BYMINUTE=30"))
    ),
    # America/New_York 2024-11-03 06:00Z: -04 -> -05, local 02:00 back to 01:00.
    fold("new-york-fold-cron", "America/New_York", "cron", "30 1 * * *", "2024-11-02T00:00",
         "2024-11-04T12:00",
         first=["2024-11-02T05:30Z", "2024-11-03T05:30Z", "2024-11-04T06:30Z"],
         last=["2024-11-02T05:30Z", "2024-11-03T06:30Z", "2024-11-04T06:30Z"],
         both=["2024-11-02T05:30Z", "2024-11-03T05:30Z", "2024-11-03T06:30Z",
               "2024-11-04T06:30Z"]),  # fmt: skip
    # '*/20': 01:00/01:20/01:40 at -04 (05:xxZ) and at -05 (06:xxZ), then 02:00-05 = 07:00Z.
    fold("new-york-fold-star", "America/New_York", "star", "*/20 * * * *", "2024-11-03T04:50",
         "2024-11-03T07:10",
         first=["2024-11-03T05:00Z", "2024-11-03T05:20Z", "2024-11-03T05:40Z",
                "2024-11-03T07:00Z"],
         last=["2024-11-03T06:00Z", "2024-11-03T06:20Z", "2024-11-03T06:40Z",
               "2024-11-03T07:00Z"],
         both=["2024-11-03T05:00Z", "2024-11-03T05:20Z", "2024-11-03T05:40Z",
               "2024-11-03T06:00Z", "2024-11-03T06:20Z", "2024-11-03T06:40Z",
               "2024-11-03T07:00Z"]),  # fmt: skip
    # America/Santiago 2024-04-07 03:00Z: -03 -> -04, local 24:00 on 04-06 back to 23:00
    # (fold 23:00-23:59 on 04-06). 23:30-03 = 02:30Z next UTC day; 23:30-04 = 03:30Z.
    fold("santiago-fold-cron", "America/Santiago", "cron", "30 23 * * *", "2024-04-05T12:00",
         "2024-04-08T12:00",
         first=["2024-04-06T02:30Z", "2024-04-07T02:30Z", "2024-04-08T03:30Z"],
         last=["2024-04-06T02:30Z", "2024-04-07T03:30Z", "2024-04-08T03:30Z"],
         both=["2024-04-06T02:30Z", "2024-04-07T02:30Z", "2024-04-07T03:30Z",
               "2024-04-08T03:30Z"]),  # fmt: skip
    # Midnight itself is not ambiguous there: 04-06 00:00-03 = 03:00Z, 04-07 00:00-04 = 04:00Z.
    fold("santiago-fold-midnight", "America/Santiago", "cron", "0 0 * * *", "2024-04-05T12:00",
         "2024-04-08T12:00",
         first=["2024-04-06T03:00Z", "2024-04-07T04:00Z", "2024-04-08T04:00Z"],
         last=["2024-04-06T03:00Z", "2024-04-07T04:00Z", "2024-04-08T04:00Z"],
         both=["2024-04-06T03:00Z", "2024-04-07T04:00Z", "2024-04-08T04:00Z"]),  # fmt: skip
    # America/Santiago 2024-09-08 04:00Z: -04 -> -03, local 00:00 jumps to 01:00 (gap
    # 00:00-00:59 on 09-08). Midnight: shifted 00:00-04 = 04:00Z = the jump itself.
    gap("santiago-gap-midnight", "America/Santiago", "cron", "0 0 * * *", "2024-09-06T12:00",
        "2024-09-10T12:00",
        skip=["2024-09-07T04:00Z", "2024-09-09T03:00Z", "2024-09-10T03:00Z"],
        shift=["2024-09-07T04:00Z", "2024-09-08T04:00Z", "2024-09-09T03:00Z",
               "2024-09-10T03:00Z"],
        next_valid=["2024-09-07T04:00Z", "2024-09-08T04:00Z", "2024-09-09T03:00Z",
                    "2024-09-10T03:00Z"]),  # fmt: skip
    # 00:30: 04:30Z before, shifted 04:30Z (01:30 local), jump 04:00Z, 03:30Z after.
    gap("santiago-gap-0030", "America/Santiago", "cron", "30 0 * * *", "2024-09-06T12:00",
        "2024-09-09T12:00", skip=["2024-09-07T04:30Z", "2024-09-09T03:30Z"],
        shift=["2024-09-07T04:30Z", "2024-09-08T04:30Z", "2024-09-09T03:30Z"],
        next_valid=["2024-09-07T04:30Z", "2024-09-08T04:00Z", "2024-09-09T03:30Z"]),  # fmt: skip
    gap("santiago-gap-once", "America/Santiago", "once", L(2024, 9, 8, 0, 30),
        "2024-01-01T00:00", "2025-01-01T00:00", skip=[], shift=["2024-09-08T04:30Z"],
        next_valid=["2024-09-08T04:00Z"]),  # fmt: skip
    # '@hourly': 23:00-04 = 03:00Z, 00:00 missing (shift/next_valid land on 01:00 = 04:00Z).
    gap("santiago-gap-star", "America/Santiago", "star", "@hourly", "2024-09-08T02:30",
        "2024-09-08T06:00",
        skip=["2024-09-08T03:00Z", "2024-09-08T04:00Z", "2024-09-08T05:00Z", "2024-09-08T06:00Z"],
        shift=["2024-09-08T03:00Z", "2024-09-08T04:00Z", "2024-09-08T05:00Z",
               "2024-09-08T06:00Z"],
        next_valid=["2024-09-08T03:00Z", "2024-09-08T04:00Z", "2024-09-08T05:00Z",
                    "2024-09-08T06:00Z"]),  # fmt: skip
    # Australia/Sydney 2024-04-06 16:00Z: +11 -> +10, local 03:00 back to 02:00 on 04-07.
    fold("sydney-fold-cron", "Australia/Sydney", "cron", "30 2 * * *", "2024-04-05T00:00",
         "2024-04-08T00:00",
         first=["2024-04-05T15:30Z", "2024-04-06T15:30Z", "2024-04-07T16:30Z"],
         last=["2024-04-05T15:30Z", "2024-04-06T16:30Z", "2024-04-07T16:30Z"],
         both=["2024-04-05T15:30Z", "2024-04-06T15:30Z", "2024-04-06T16:30Z",
               "2024-04-07T16:30Z"]),  # fmt: skip
    # Australia/Sydney 2024-10-05 16:00Z: +10 -> +11, local 02:00 jumps to 03:00 on 10-06.
    *(
        gap(f"sydney-gap-{kind}", "Australia/Sydney", kind, rule, "2024-10-04T00:00",
            "2024-10-07T00:00",
            skip=["2024-10-04T16:30Z", "2024-10-06T15:30Z"],
            shift=["2024-10-04T16:30Z", "2024-10-05T16:30Z", "2024-10-06T15:30Z"],
            next_valid=["2024-10-04T16:30Z", "2024-10-05T16:00Z", "2024-10-06T15:30Z"],
            anchor=L(2024, 9, 1, 2, 30))  # fmt: skip
        for kind, rule in (("cron", "30 2 * * *"), ("rrule", "FREQ=DAILY;BYHOUR=2;BYMINUTE=30"))
    ),
    # Australia/Lord_Howe 2024-04-06 15:00Z: +11 -> +10:30, local 02:00 back to 01:30 on
    # 04-07 (fold 01:30-01:59). 01:45+11 = 14:45Z, 01:45+10:30 = 15:15Z.
    fold("lord-howe-fold-cron", "Australia/Lord_Howe", "cron", "45 1 * * *", "2024-04-05T00:00",
         "2024-04-08T00:00",
         first=["2024-04-05T14:45Z", "2024-04-06T14:45Z", "2024-04-07T15:15Z"],
         last=["2024-04-05T14:45Z", "2024-04-06T15:15Z", "2024-04-07T15:15Z"],
         both=["2024-04-05T14:45Z", "2024-04-06T14:45Z", "2024-04-06T15:15Z",
               "2024-04-07T15:15Z"]),  # fmt: skip
    # '*/15': 01:30 (14:30Z/15:00Z), 01:45 (14:45Z/15:15Z), 02:00+10:30 = 15:30Z.
    fold("lord-howe-fold-star", "Australia/Lord_Howe", "star", "*/15 * * * *",
         "2024-04-06T14:20", "2024-04-06T15:35",
         first=["2024-04-06T14:30Z", "2024-04-06T14:45Z", "2024-04-06T15:30Z"],
         last=["2024-04-06T15:00Z", "2024-04-06T15:15Z", "2024-04-06T15:30Z"],
         both=["2024-04-06T14:30Z", "2024-04-06T14:45Z", "2024-04-06T15:00Z",
               "2024-04-06T15:15Z", "2024-04-06T15:30Z"]),  # fmt: skip
    # Australia/Lord_Howe 2024-10-05 15:30Z: +10:30 -> +11, local 02:00 jumps to 02:30 on
    # 10-06 (gap 02:00-02:29). 02:15+10:30 = 15:45Z (shifted: 02:45 local); jump 15:30Z.
    gap("lord-howe-gap-cron", "Australia/Lord_Howe", "cron", "15 2 * * *", "2024-10-04T00:00",
        "2024-10-07T00:00", skip=["2024-10-04T15:45Z", "2024-10-06T15:15Z"],
        shift=["2024-10-04T15:45Z", "2024-10-05T15:45Z", "2024-10-06T15:15Z"],
        next_valid=["2024-10-04T15:45Z", "2024-10-05T15:30Z", "2024-10-06T15:15Z"]),  # fmt: skip
    # '*/20': 01:40 = 15:10Z; 02:00 and 02:20 missing (shifted: 15:30Z and 15:50Z, which come
    # after the real 02:40 = 15:40Z: the engine must re-order); 03:00+11 = 16:00Z.
    gap("lord-howe-gap-star", "Australia/Lord_Howe", "star", "*/20 * * * *", "2024-10-05T15:00",
        "2024-10-05T16:00",
        skip=["2024-10-05T15:10Z", "2024-10-05T15:40Z", "2024-10-05T16:00Z"],
        shift=["2024-10-05T15:10Z", "2024-10-05T15:30Z", "2024-10-05T15:40Z",
               "2024-10-05T15:50Z", "2024-10-05T16:00Z"],
        next_valid=["2024-10-05T15:10Z", "2024-10-05T15:30Z", "2024-10-05T15:40Z",
                    "2024-10-05T16:00Z"]),  # fmt: skip
    # Asia/Kolkata: +05:30 all year, no transitions: every policy gives 09:30-05:30 = 04:00Z.
    *(
        gap(f"kolkata-{kind}", "Asia/Kolkata", kind, rule, "2024-03-09T00:00", "2024-03-11T00:00",
            skip=["2024-03-09T04:00Z", "2024-03-10T04:00Z"],
            shift=["2024-03-09T04:00Z", "2024-03-10T04:00Z"],
            next_valid=["2024-03-09T04:00Z", "2024-03-10T04:00Z"],
            anchor=L(2024, 1, 1, 9, 30))  # fmt: skip
        for kind, rule in (("cron", "30 9 * * *"), ("rrule", "FREQ=DAILY"))
    ),
    fold("kolkata-star", "Asia/Kolkata", "star", "*/30 * * * *", "2024-11-03T00:00",
         "2024-11-03T01:00", first=["2024-11-03T00:30Z", "2024-11-03T01:00Z"],
         last=["2024-11-03T00:30Z", "2024-11-03T01:00Z"],
         both=["2024-11-03T00:30Z", "2024-11-03T01:00Z"]),  # fmt: skip
    # Pacific/Apia 2011-12-30 10:00Z: -10 -> +14, local 2011-12-30 00:00 jumps to 12-31 00:00:
    # the whole of 12-30 is a gap. 09:00-10 = 19:00Z; shifted 12-30 09:00-10 = 12-30T19:00Z,
    # which is also 12-31 09:00+14 (one slot); jump = 12-30T10:00Z.
    gap("apia-2011-daily", "Pacific/Apia", "cron", "0 9 * * *", "2011-12-28T00:00",
        "2012-01-01T00:00",
        skip=["2011-12-28T19:00Z", "2011-12-29T19:00Z", "2011-12-30T19:00Z", "2011-12-31T19:00Z"],
        shift=["2011-12-28T19:00Z", "2011-12-29T19:00Z", "2011-12-30T19:00Z",
               "2011-12-31T19:00Z"],
        next_valid=["2011-12-28T19:00Z", "2011-12-29T19:00Z", "2011-12-30T10:00Z",
                    "2011-12-30T19:00Z", "2011-12-31T19:00Z"]),  # fmt: skip
    # Only on 30 December: 12:00-10 = 22:00Z (shift), else next year 12:00+14 = 12-29T22:00Z.
    gap("apia-2011-dec30", "Pacific/Apia", "cron", "0 12 30 12 *", "2011-12-01T00:00",
        "2012-12-31T00:00", skip=["2012-12-29T22:00Z"],
        shift=["2011-12-30T22:00Z", "2012-12-29T22:00Z"],
        next_valid=["2011-12-30T10:00Z", "2012-12-29T22:00Z"]),  # fmt: skip
    gap("apia-2011-once", "Pacific/Apia", "once", L(2011, 12, 30, 12, 0), "2011-01-01T00:00",
        "2013-01-01T00:00", skip=[], shift=["2011-12-30T22:00Z"],
        next_valid=["2011-12-30T10:00Z"]),  # fmt: skip
    # Pacific/Apia 2011-04-02 14:00Z: -10 -> -11, local 04:00 back to 03:00.
    fold("apia-2011-fold", "Pacific/Apia", "cron", "30 3 * * *", "2011-04-01T00:00",
         "2011-04-03T23:00",
         first=["2011-04-01T13:30Z", "2011-04-02T13:30Z", "2011-04-03T14:30Z"],
         last=["2011-04-01T13:30Z", "2011-04-02T14:30Z", "2011-04-03T14:30Z"],
         both=["2011-04-01T13:30Z", "2011-04-02T13:30Z", "2011-04-02T14:30Z",
               "2011-04-03T14:30Z"]),  # fmt: skip
    # Africa/Casablanca 2024-03-10 02:00Z (Ramadan): +01 -> +00, local 03:00 back to 02:00.
    *(
        fold(f"casablanca-fold-{kind}", "Africa/Casablanca", kind, rule, "2024-03-09T00:00",
             "2024-03-11T12:00",
             first=["2024-03-09T01:30Z", "2024-03-10T01:30Z", "2024-03-11T02:30Z"],
             last=["2024-03-09T01:30Z", "2024-03-10T02:30Z", "2024-03-11T02:30Z"],
             both=["2024-03-09T01:30Z", "2024-03-10T01:30Z", "2024-03-10T02:30Z",
                   "2024-03-11T02:30Z"], anchor=L(2024, 3, 1, 2, 30))  # fmt: skip
        for kind, rule in (("cron", "30 2 * * *"), ("rrule", "FREQ=DAILY;BYHOUR=2;BYMINUTE=30"))
    ),
    # Africa/Casablanca 2024-04-14 02:00Z (after Ramadan): +00 -> +01, 02:00 jumps to 03:00.
    gap("casablanca-gap-cron", "Africa/Casablanca", "cron", "30 2 * * *", "2024-04-13T00:00",
        "2024-04-15T12:00", skip=["2024-04-13T02:30Z", "2024-04-15T01:30Z"],
        shift=["2024-04-13T02:30Z", "2024-04-14T02:30Z", "2024-04-15T01:30Z"],
        next_valid=["2024-04-13T02:30Z", "2024-04-14T02:00Z", "2024-04-15T01:30Z"]),  # fmt: skip
    gap("casablanca-gap-once", "Africa/Casablanca", "once", L(2024, 4, 14, 2, 30),
        "2024-01-01T00:00", "2025-01-01T00:00", skip=[], shift=["2024-04-14T02:30Z"],
        next_valid=["2024-04-14T02:00Z"]),  # fmt: skip
]

PAIRS = [
    pytest.param(case, policy, id=f"{case.name}-{policy}")
    for case in CASES
    for policy in (*case.expected, "auto")
]


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text + "+00:00")


@pytest.mark.parametrize(("case", "policy"), PAIRS)
def test_transition_table(case: Case, policy: str) -> None:
    expected_key = AUTO[case.kind, case.transition] if policy == "auto" else policy
    expected = case.expected[expected_key]
    got = window(case.timing(policy), _utc(case.after), _utc(case.until))
    assert got == expected


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_the_other_policy_does_not_matter(case: Case) -> None:
    # A gap case never meets a fold and vice versa, so the other choice changes nothing.
    other = FOLD_POLICIES if case.transition == "gap" else GAP_POLICIES
    for policy in case.expected:
        for choice in other:
            kwargs = {"ambiguous": choice} if case.transition == "gap" else {"nonexistent": choice}
            kind = "cron" if case.kind == "star" else case.kind
            timing = build_timing(
                kind=kind,
                rule=case.rule,
                timezone=case.zone,
                anchor=case.anchor,
                **{("nonexistent" if case.transition == "gap" else "ambiguous"): policy},
                **kwargs,
            )
            assert window(timing, _utc(case.after), _utc(case.until)) == case.expected[policy]


@pytest.mark.parametrize(("case", "policy"), PAIRS)
def test_slots_are_strictly_increasing(case: Case, policy: str) -> None:
    got = window(case.timing(policy), _utc(case.after), _utc(case.until))
    assert got == sorted(set(got))
