"""Solar schedules against an independent astronomy library (PyEphem, tests only): the slots
of each event agree within two minutes at several cities, one above the Arctic circle, and the
polar night and midnight-sun days that have no event have no slot."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import ephem
import pytest

from scheduler_app.errors import ScheduleValidationError
from scheduler_app.timing import (
    build_timing,
    describe,
    first_slot,
    next_after,
    previous_slot,
    slots_between,
)
from scheduler_app.timing.calendars.solar import missing_days, parse_solar
from tests.unit.timing.helpers import utc

CITIES = {
    "riga": (56.9496, 24.1052, "Europe/Riga"),
    "new_york": (40.7128, -74.006, "America/New_York"),
    "sydney": (-33.8688, 151.2093, "Australia/Sydney"),
    "quito": (-0.1807, -78.4678, "America/Guayaquil"),
    "tromso": (69.6496, 18.956, "Europe/Oslo"),
}
DATES = [
    date(2027, 1, 20),
    date(2027, 3, 14),
    date(2027, 3, 28),
    date(2027, 6, 1),
    date(2027, 9, 22),
    date(2027, 11, 7),
    date(2027, 12, 21),
]
TOLERANCE = timedelta(minutes=2)


def ephem_event(event: str, lat: float, lon: float, zone: ZoneInfo, day: date) -> datetime | None:
    """The event on the local date ``day`` by PyEphem (USNO conventions), or None."""
    observer = ephem.Observer()
    observer.lat, observer.lon = str(lat), str(lon)
    observer.pressure = 0  # refraction is in the horizon below, as the almanac does it
    midnight = datetime.combine(day, datetime.min.time(), zone).astimezone(UTC)
    observer.date = ephem.Date(midnight.replace(tzinfo=None))
    sun = ephem.Sun()
    try:
        if event == "noon":
            found = observer.next_transit(sun)
        else:
            twilight = event in ("dawn", "dusk")
            observer.horizon = "-6" if twilight else "-0:34"  # upper limb: centre at -0:50
            rising = event in ("sunrise", "dawn")
            method = observer.next_rising if rising else observer.next_setting
            found = method(sun, use_center=twilight)
    except (ephem.NeverUpError, ephem.AlwaysUpError):
        return None
    instant = found.datetime().replace(tzinfo=UTC)
    return instant if instant.astimezone(zone).date() == day else None


@pytest.mark.parametrize("city", sorted(CITIES))
@pytest.mark.parametrize("event", ["sunrise", "sunset", "dawn", "dusk", "noon"])
def test_slots_agree_with_pyephem(city: str, event: str) -> None:
    lat, lon, zone_name = CITIES[city]
    timing = build_timing(kind="solar", rule=f"{event} {lat} {lon}", timezone=zone_name)
    zone = ZoneInfo(zone_name)
    for day in DATES:
        midnight = datetime.combine(day, datetime.min.time(), zone).astimezone(UTC)
        ours = [
            s
            for s in slots_between(
                timing, midnight - timedelta(seconds=1), midnight + timedelta(hours=24)
            )
            if s.astimezone(zone).date() == day
        ]
        theirs = ephem_event(event, lat, lon, zone, day)
        if theirs is None:
            assert ours == [], (city, event, day)
            continue
        assert len(ours) == 1, (city, event, day, ours)
        assert abs(ours[0] - theirs) <= TOLERANCE, (city, event, day, ours[0], theirs)


def test_polar_night_and_midnight_sun_have_no_slot_and_say_why() -> None:
    lat, lon, zone_name = CITIES["tromso"]
    zone = ZoneInfo(zone_name)
    sunrise = build_timing(kind="solar", rule=f"sunrise {lat} {lon}", timezone=zone_name)
    # The last sunrise before the polar night, then the first after it.
    last = next_after(sunrise, utc(2026, 11, 26))
    assert last is not None and last.astimezone(zone).date() == date(2026, 11, 26)
    back = next_after(sunrise, last)
    assert back is not None and back.astimezone(zone).date() == date(2027, 1, 16)
    assert ephem_event("sunrise", lat, lon, zone, date(2026, 12, 21)) is None
    # The edges of the polar night: the sun barely shows, and the libraries may differ by
    # a day on which one is the first (PyEphem has the sun graze the horizon on Jan 15).
    first_theirs = next(
        date(2027, 1, 1) + timedelta(days=n)
        for n in range(40)
        if ephem_event("sunrise", lat, lon, zone, date(2027, 1, 1) + timedelta(days=n))
    )
    assert abs(first_theirs - date(2027, 1, 16)) <= timedelta(days=1)
    runs = missing_days(
        parse_solar(f"sunrise {lat} {lon}"), zone, date(2026, 11, 1), date(2027, 1, 31)
    )
    assert runs == [
        (date(2026, 11, 27), date(2027, 1, 15), "polar night: the sun stays below the horizon")
    ]
    summer = missing_days(
        parse_solar(f"sunset {lat} {lon}"), zone, date(2027, 6, 1), date(2027, 7, 1)
    )
    assert summer[0][2] == "polar day: the sun stays above the horizon"
    assert ephem_event("sunset", lat, lon, zone, date(2027, 6, 21)) is None
    noon = build_timing(kind="solar", rule=f"noon {lat} {lon}", timezone=zone_name)
    assert len(slots_between(noon, utc(2026, 12, 1), utc(2026, 12, 31))) == 30  # noon: daily
    dusk = missing_days(parse_solar(f"dusk {lat} {lon}"), zone, date(2027, 6, 1), date(2027, 6, 30))
    assert dusk and "white night" in dusk[-1][2]


def test_search_and_previous_slot_cross_the_polar_night() -> None:
    lat, lon, zone_name = CITIES["tromso"]
    sunrise = build_timing(kind="solar", rule=f"sunrise {lat} {lon}", timezone=zone_name)
    found = first_slot(sunrise, utc(2026, 12, 1))
    assert found is not None and found.date() == date(2027, 1, 16)
    before = previous_slot(sunrise, utc(2027, 1, 1))
    assert before is not None and before.date() == date(2026, 11, 26)


def test_slots_are_whole_seconds_and_described() -> None:
    timing = build_timing(kind="solar", rule="SUNSET  56.9496   24.1052", timezone="Europe/Riga")
    slot = next_after(timing, utc(2027, 6, 21))
    assert slot is not None and slot.microsecond == 0
    assert describe(timing) == "At sunset at 56.9496, 24.1052, Europe/Riga"
    assert describe(build_timing(kind="solar", rule="dawn 0 0")) == "At civil dawn at 0, 0, UTC"


@pytest.mark.parametrize(
    ("rule", "field", "words"),
    [
        ("sunrise 56.9", "solar", "expected three parts"),
        ("moonrise 56.9 24.1", "solar.event", "use one of: sunrise, sunset, dawn, dusk, noon"),
        ("sunrise 91 24.1", "solar.latitude", "from -90 to 90"),
        ("sunrise 56.9 -180.5", "solar.longitude", "from -180 to 180"),
        ("sunrise nan 24.1", "solar.latitude", "decimal degrees"),
        ("sunrise 56.9 east", "solar.longitude", "decimal degrees"),
    ],
)
def test_bad_solar_rules_name_the_part(rule: str, field: str, words: str) -> None:
    with pytest.raises(ScheduleValidationError) as caught:
        build_timing(kind="solar", rule=rule, timezone="Europe/Riga")
    assert caught.value.field == field
    assert words in caught.value.message


def test_without_astral_the_error_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("scheduler_app.timing.calendars.solar._sun", None)
    with pytest.raises(ScheduleValidationError) as caught:
        parse_solar("sunrise 56.9 24.1")
    assert caught.value.code == "missing_dependency"
    assert "[solar] extra" in caught.value.message and "make dist" in caught.value.message
