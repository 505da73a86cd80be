"""Zone names in schedule phrases: IANA names (``in Europe/Riga``, any case), ``UTC``, and the
abbreviations people write (``JST``, ``ET``). An abbreviation that names one half of the year
(``EST`` is New York's winter only) or several places (``IST``) is refused with the IANA name
to write instead: read as the IANA zone of the same name, ``EST`` would run at UTC-5 all year.
Pure: no Django, no clock."""

from __future__ import annotations

import re
from functools import cache
from zoneinfo import available_timezones

READ = {
    "utc": "UTC", "z": "UTC", "jst": "Asia/Tokyo", "kst": "Asia/Seoul",
    "hkt": "Asia/Hong_Kong", "sgt": "Asia/Singapore", "hst": "Pacific/Honolulu",
    "msk": "Europe/Moscow", "sast": "Africa/Johannesburg", "wib": "Asia/Jakarta",
    "pht": "Asia/Manila", "ict": "Asia/Bangkok", "et": "America/New_York",
    "ct": "America/Chicago", "pt": "America/Los_Angeles",
}  # fmt: skip
"""Abbreviations with one meaning that covers the whole year (a zone without DST, or a name
such as ET that stands for the place's time summer and winter)."""
_REGIONS = {"eastern": "et", "central": "ct", "pacific": "pt", "mountain": "mt"}
REFUSED = {
    "est": "America/New_York", "edt": "America/New_York",
    "cst": "America/Chicago (or Asia/Shanghai for China)", "cdt": "America/Chicago",
    "pst": "America/Los_Angeles", "pdt": "America/Los_Angeles",
    "mst": "America/Denver (or America/Phoenix, which keeps no summer time)",
    "mdt": "America/Denver", "mt": "America/Denver or America/Phoenix",
    "akst": "America/Anchorage", "akdt": "America/Anchorage",
    "gmt": "UTC (the same offset all year) or Europe/London (UK time)",
    "bst": "Europe/London", "ist": "Asia/Kolkata, Europe/Dublin or Asia/Jerusalem",
    "cet": "Europe/Paris, Europe/Berlin or your city", "cest": "Europe/Paris, Europe/Berlin",
    "eet": "Europe/Riga, Europe/Helsinki or your city", "eest": "Europe/Riga, Europe/Helsinki",
    "wet": "Europe/Lisbon", "west": "Europe/Lisbon",
    "aest": "Australia/Sydney (or Australia/Brisbane, which keeps no summer time)",
    "aedt": "Australia/Sydney", "acst": "Australia/Adelaide or Australia/Darwin",
    "awst": "Australia/Perth", "nzst": "Pacific/Auckland", "nzdt": "Pacific/Auckland",
    "ast": "America/Halifax or Asia/Riyadh", "brt": "America/Sao_Paulo",
}  # fmt: skip
_OFFSET = re.compile(r"^(utc|gmt)[+-]\d{1,2}(:?\d{2})?$")


def is_zone_word(word: str, after: str) -> bool:
    """Whether ``word`` starts a zone clause (without ``in``)."""
    return (
        "/" in word
        or word in READ
        or word in REFUSED
        or _OFFSET.match(word) is not None
        or (word in _REGIONS and after == "time")
    )


def zone_name(word: str, after: str) -> tuple[str | None, int, str]:
    """(IANA name or None, words used, why it is refused) for the zone written as ``word``."""
    lower = word.lower()
    used = 1
    if lower in _REGIONS:
        used = 2 if after == "time" else 1
        lower = _REGIONS[lower]
    if lower in READ:
        return READ[lower], used, ""
    if lower in REFUSED:
        return (
            None,
            used,
            (f"{word} is not one zone all year; write the IANA zone: {REFUSED[lower]}"),
        )
    if _OFFSET.match(lower):
        return (
            None,
            used,
            (
                "a fixed offset is not a place's time; write the IANA zone, e.g. 'in Europe/Riga' "
                "(or Etc/GMT-2 for UTC+2 all year: the sign is reversed)"
            ),
        )
    return _iana(word), used, "not an IANA time zone; say e.g. 'in Europe/Riga' or 'in UTC'"


def _iana(word: str) -> str | None:
    if "/" not in word:
        return None
    return _by_lower_name().get(word.lower())


@cache
def _by_lower_name() -> dict[str, str]:
    return {name.lower(): name for name in available_timezones()}
