"""Canonical zone names: abbreviations refused with the zone people mean, links stored under
their canonical name.

``EST`` is a fixed -05:00 all year (it is a link to America/Panama), so "09:00 EST" in July is
10:00 in New York: almost never what was meant. ``CET``, ``EST5EDT`` and the like are legacy
rule names kept for compatibility. Names such as ``US/Eastern`` or ``Asia/Calcutta`` are links
(aliases) of a canonical zone: they work, but two names for one zone make schedules hard to
compare and search, so the canonical one is stored.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from scheduler_app.errors import UnknownTimezone
from scheduler_app.timing.zones import get_zone

MEANT: dict[str, str] = {
    # IANA legacy names: fixed offsets or old US/European rule sets.
    "EST": "America/New_York",
    "MST": "America/Denver",
    "HST": "Pacific/Honolulu",
    "EST5EDT": "America/New_York",
    "CST6CDT": "America/Chicago",
    "MST7MDT": "America/Denver",
    "PST8PDT": "America/Los_Angeles",
    "CET": "Europe/Paris",
    "MET": "Europe/Paris",
    "EET": "Europe/Athens",
    "WET": "Europe/Lisbon",
    # Common abbreviations that are not IANA names at all.
    "EDT": "America/New_York",
    "CST": "America/Chicago",
    "CDT": "America/Chicago",
    "MDT": "America/Denver",
    "PST": "America/Los_Angeles",
    "PDT": "America/Los_Angeles",
    "AKST": "America/Anchorage",
    "BST": "Europe/London",
    "CEST": "Europe/Paris",
    "EEST": "Europe/Athens",
    "MSK": "Europe/Moscow",
    "IST": "Asia/Kolkata",
    "JST": "Asia/Tokyo",
    "KST": "Asia/Seoul",
    "AEST": "Australia/Sydney",
    "AEDT": "Australia/Sydney",
    "NZST": "Pacific/Auckland",
}
"""Abbreviation -> the zone it usually stands for (suggested in the error message)."""

FIXED_OFFSET_NOTE = {
    "EST": "America/Panama",
    "MST": "America/Phoenix",
    "HST": "Pacific/Honolulu",
}
"""Fixed-offset legacy names -> a city zone with that offset all year (no DST)."""

UTC_NAMES = frozenset(
    {"UTC", "UCT", "GMT", "GMT0", "GMT+0", "GMT-0", "Greenwich", "Universal", "Zulu"}
    | {f"Etc/{name}" for name in ("UTC", "UCT", "GMT", "GMT0", "GMT+0", "GMT-0")}
    | {"Etc/Greenwich", "Etc/Universal", "Etc/Zulu"}
)


def canonical_zone(name: object, field: str = "timezone") -> str:
    """The canonical IANA name of ``name``; abbreviations and unknown names raise
    ``UnknownTimezone`` saying which zone to use."""
    if not isinstance(name, str):
        raise UnknownTimezone(field, "a time zone name is required, e.g. 'Europe/Riga' or 'UTC'")
    cleaned = name.strip()
    meant = MEANT.get(cleaned.upper()) if len(cleaned) <= 8 else None
    if meant is not None and cleaned.upper() not in UTC_NAMES:
        fixed = FIXED_OFFSET_NOTE.get(cleaned.upper())
        also = f" ({fixed} if you really want its offset all year, without DST)" if fixed else ""
        raise UnknownTimezone(
            field,
            f"{cleaned!r} is an abbreviation, not a place: it does not follow the local "
            f"daylight-saving rules; use an IANA zone such as {meant!r}{also}",
            code="abbreviation",
        )
    get_zone(cleaned, field)
    if cleaned in UTC_NAMES:
        return "UTC"
    return _links().get(cleaned, cleaned)


@cache
def _links() -> dict[str, str]:
    """Link name -> canonical zone, from the tzdata package's ``tzdata.zi`` (empty when the
    package or the file is missing: names are then stored as given)."""
    try:
        text = resources.files("tzdata").joinpath("zoneinfo", "tzdata.zi").read_text("utf-8")
    except (ModuleNotFoundError, FileNotFoundError, OSError):
        return {}
    links: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("L "):
            _, target, alias = line.split()
            links[alias] = target
    return links
