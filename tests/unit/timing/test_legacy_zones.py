"""Legacy zone names: abbreviations are refused with the zone people mean; links are stored
under their canonical name."""

from __future__ import annotations

import pytest

from scheduler_app.errors import UnknownTimezone
from scheduler_app.timing import canonical_zone


@pytest.mark.parametrize(
    ("name", "meant"),
    [
        ("EST", "America/New_York"),
        ("MST", "America/Denver"),
        ("CET", "Europe/Paris"),
        ("EET", "Europe/Athens"),
        ("HST", "Pacific/Honolulu"),
        ("EST5EDT", "America/New_York"),
        ("PST8PDT", "America/Los_Angeles"),
        ("PST", "America/Los_Angeles"),
        ("cest", "Europe/Paris"),
    ],
)
def test_abbreviations_are_refused_with_the_zone_meant(name: str, meant: str) -> None:
    with pytest.raises(UnknownTimezone) as caught:
        canonical_zone(name)
    assert (caught.value.field, caught.value.code) == ("timezone", "abbreviation")
    assert repr(meant) in str(caught.value)


def test_a_fixed_offset_abbreviation_also_names_a_zone_without_dst() -> None:
    with pytest.raises(UnknownTimezone, match="America/Panama"):
        canonical_zone("EST")


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("US/Eastern", "America/New_York"),
        ("Asia/Calcutta", "Asia/Kolkata"),
        ("Europe/Kiev", "Europe/Kyiv"),
        ("Japan", "Asia/Tokyo"),
        ("GB", "Europe/London"),
        ("America/New_York", "America/New_York"),
        (" Europe/Riga ", "Europe/Riga"),
        ("UTC", "UTC"),
        ("Etc/UTC", "UTC"),
        ("GMT", "UTC"),
        ("Zulu", "UTC"),
    ],
)
def test_links_become_their_canonical_name(name: str, canonical: str) -> None:
    assert canonical_zone(name) == canonical


@pytest.mark.parametrize("name", ["Nowhere/Town", "", None, 5, "x" * 500])
def test_unknown_names_are_still_unknown(name: object) -> None:
    with pytest.raises(UnknownTimezone):
        canonical_zone(name)
