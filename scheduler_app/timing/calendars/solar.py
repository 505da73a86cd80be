"""Solar rules: one slot a day at sunrise, sunset, dawn, dusk or solar noon at a place.

Computed with ``astral`` (3.x: maintained, pure Python, no data files, NOAA's algorithm, which
agrees with the almanac to within a minute between the polar circles). The rule is stored as
text, ``EVENT LATITUDE LONGITUDE`` in decimal degrees (north and east positive), e.g.
``sunrise 56.9496 24.1052`` for Riga. Dawn and dusk are civil (the sun 6 degrees below the
horizon). The day is the local date in the schedule's zone. A day on which the event does not
happen (polar night or day; a white night without dawn or dusk) has no slot;
``missing_reason`` says why, for previews. After ``QUIET_DAYS`` local dates in a row without
the event the rule is taken to have no more slots (the search is bounded, see there).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from scheduler_app.compat import install_extra
from scheduler_app.errors import InvalidRule

try:
    from astral import Observer
    from astral import sun as _sun
except ImportError:  # pragma: no cover - the extra is installed wherever it is used
    Observer = None  # type: ignore[assignment,misc]
    _sun = None  # type: ignore[assignment]

EXAMPLE = "e.g. 'sunrise 56.9496 24.1052' (EVENT LATITUDE LONGITUDE, decimal degrees)"
FIRST_DAY = date(1, 1, 4)
LAST_DAY = date(9999, 12, 29)
_DAY = timedelta(days=1)
QUIET_DAYS = 1500
"""How many local dates in a row without the event end a solar rule's slots: just over four
years. Polar nights and days last under a year, but at a pole (or within a few tenths of a
degree of it) an event that falls near local midnight happens only in some years of the
leap-year cycle: pauses of up to 1,460 days were measured there. Without this bound a rule
whose event never falls on a local date (``sunset 89.99 -179.9`` in UTC) walked every day
up to the year 9999, about 90 seconds of CPU, before answering."""


class SolarEvent(enum.StrEnum):
    """The events a solar rule can fire at."""

    SUNRISE = "sunrise"
    """The sun's upper edge appears (refraction included)."""
    SUNSET = "sunset"
    """The sun's upper edge disappears."""
    DAWN = "dawn"
    """Civil dawn: the sun 6 degrees below the horizon, rising."""
    DUSK = "dusk"
    """Civil dusk: the sun 6 degrees below the horizon, setting."""
    NOON = "noon"
    """Solar noon: the sun at its highest (every day, everywhere)."""


@dataclass(frozen=True)
class SolarRule:
    event: SolarEvent
    latitude: float
    longitude: float

    @property
    def text(self) -> str:
        """The canonical stored form."""
        return f"{self.event.value} {self.latitude:g} {self.longitude:g}"

    def event_on(self, day: date, zone: ZoneInfo) -> datetime | None:
        """The event's instant (UTC, whole seconds) on the local date ``day``; None when it
        does not happen that day."""
        try:
            return _compute(self, day, zone).astimezone(UTC).replace(microsecond=0)
        except ValueError:  # astral: the sun does not reach that elevation on this local date
            return None

    def missing_reason(self, day: date, zone: ZoneInfo) -> str | None:
        """Why there is no slot on ``day`` ("polar night: the sun stays below the horizon"),
        or None when there is one."""
        try:
            _compute(self, day, zone)
        except ValueError as error:
            return self._reason(day, str(error))
        return None

    def _reason(self, day: date, error: str) -> str:
        if "Unable to find" in error:  # astral: the event moved past midnight, on no local date
            return f"no {self.event.value} on this local date (it moves across midnight)"
        twilight = self.event in (SolarEvent.DAWN, SolarEvent.DUSK)
        observer = Observer(latitude=self.latitude, longitude=self.longitude)
        highest = 90.0 - _sun.zenith(observer, _sun.noon(observer, day))
        if twilight and highest < -6.0:
            return "polar night: the sun stays more than 6 degrees below the horizon"
        if twilight:
            return "white night: the sun never sinks 6 degrees below the horizon"
        if highest < 0.0:
            return "polar night: the sun stays below the horizon"
        return "polar day: the sun stays above the horizon"


def parse_solar(text: object) -> SolarRule:
    """``"sunrise 56.9496 24.1052"`` as a ``SolarRule``; bad input names the part."""
    if not isinstance(text, str):
        raise InvalidRule("solar", f"a solar rule is text, {EXAMPLE}")
    parts = text.split()
    if len(parts) != 3:
        raise InvalidRule("solar", f"expected three parts, got {len(parts)}; {EXAMPLE}")
    try:
        event = SolarEvent(parts[0].lower())
    except ValueError:
        choices = ", ".join(e.value for e in SolarEvent)
        raise InvalidRule(
            "solar.event", f"unknown event {parts[0][:20]!r}; use one of: {choices}"
        ) from None
    latitude = _degrees(parts[1], "latitude", 90)
    longitude = _degrees(parts[2], "longitude", 180)
    if _sun is None:
        raise InvalidRule(
            "solar",
            "solar schedules need the astral package: " + install_extra("solar"),
            code="missing_dependency",
        )
    return SolarRule(event, latitude, longitude)


def _degrees(text: str, name: str, limit: int) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not -limit <= value <= limit:  # also refuses nan and inf
        raise InvalidRule(
            f"solar.{name}",
            f"{text[:20]!r} is not a {name} in decimal degrees from -{limit} to {limit}; {EXAMPLE}",
            code="range",
        )
    return round(value, 6)  # about 10 cm: more digits only make equal rules compare unequal


def solar_items(
    rule: SolarRule,
    zone: ZoneInfo,
    after: datetime,
    *,
    strict: bool = False,
    charge: Callable[[datetime], bool] | None = None,
) -> Iterator[tuple[datetime, datetime, None]]:
    """``(slot, local wall time, None)`` for each day's event strictly after ``after``.

    Ends after ``QUIET_DAYS`` local dates in a row without the event; ``strict`` (the
    validation search) raises ``InvalidRule`` instead, saying so. ``charge(instant)`` is
    called for each day without the event (the search budget counts them as candidates: the
    days with one are charged as they are handed out); when it answers False, the items end."""
    day = max(after.astimezone(zone).date() - _DAY, FIRST_DAY)
    last: datetime | None = None
    quiet = 0
    while day <= LAST_DAY:
        instant = rule.event_on(day, zone)
        if instant is None:
            # The day's UTC midnight: near enough for a span of years.
            if charge is not None and not charge(
                datetime(day.year, day.month, day.day, tzinfo=UTC)
            ):
                return
            quiet += 1
            if quiet >= QUIET_DAYS:
                if strict:
                    raise InvalidRule("rule", _never_message(rule, zone, day), code="never_fires")
                return
        else:
            quiet = 0
        # The event of a local day is after that of the day before; the check guards the
        # boundaries where a library answer could fall on a neighbouring date.
        if instant is not None and instant > after and (last is None or instant > last):
            last = instant
            yield instant, instant.astimezone(zone).replace(tzinfo=None), None
        day += _DAY


def _never_message(rule: SolarRule, zone: ZoneInfo, day: date) -> str:
    first = day - (QUIET_DAYS - 1) * _DAY
    return (
        f"no {rule.event.value} at latitude {rule.latitude:g}, longitude {rule.longitude:g} "
        f"falls on a local date in {zone.key} on {QUIET_DAYS:,} days in a row ({first} to "
        f"{day}): {rule.missing_reason(first, zone) or 'the event is missing'}; the rule "
        "never fires. Pick another event or place (near a pole an event may happen only "
        "around an equinox, and not every year), or a time zone whose midnight the event "
        "does not straddle"
    )


def missing_days(
    rule: SolarRule, zone: ZoneInfo, start: date, end: date
) -> list[tuple[date, date, str]]:
    """Runs of local dates in ``[start, end]`` without the event: ``(first, last, reason)``."""
    runs: list[tuple[date, date, str]] = []
    day = start
    while day <= end:
        reason = rule.missing_reason(day, zone)
        if reason is not None:
            if runs and runs[-1][1] == day - _DAY and runs[-1][2] == reason:
                runs[-1] = (runs[-1][0], day, reason)
            else:
                runs.append((day, day, reason))
        day += _DAY
    return runs


def _compute(rule: SolarRule, day: date, zone: ZoneInfo) -> datetime:
    observer = Observer(latitude=rule.latitude, longitude=rule.longitude)
    if rule.event is SolarEvent.SUNRISE:
        return _sun.sunrise(observer, day, zone)
    if rule.event is SolarEvent.SUNSET:
        return _sun.sunset(observer, day, zone)
    if rule.event is SolarEvent.DAWN:
        return _sun.dawn(observer, day, tzinfo=zone)
    if rule.event is SolarEvent.DUSK:
        return _sun.dusk(observer, day, tzinfo=zone)
    return _sun.noon(observer, day, zone)
