"""``exclude_holidays``: public holidays of a country or subdivision, from the ``holidays`` package.

A code is ``CC`` (ISO 3166-1 alpha-2, e.g. ``LV``) or ``CC-SUBDIV`` (e.g. ``US-NY``). A slot is
left out when its *local* date in the schedule's zone is a holiday there. Names are English
where the package has them ("Christmas Eve"), else the country's own language.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from typing import Any

from scheduler_app.compat import install_extra
from scheduler_app.errors import ScheduleValidationError

try:
    import holidays as _holidays
except ImportError:  # pragma: no cover - the extra is installed wherever it is used
    _holidays = None  # type: ignore[assignment]

FIELD = "exclude_holidays"
HOW_TO_LIST = (
    'list the valid codes with: python -c "import holidays; '
    'print(holidays.list_supported_countries())" (country -> its subdivisions), '
    "or see https://holidays.readthedocs.io"
)
_ENGLISH = ("en_US", "en_GB", "en")


@dataclass(frozen=True)
class HolidayCalendar:
    """The public holidays of one country (and subdivision), by local date."""

    country: str
    subdiv: str | None = None

    @property
    def code(self) -> str:
        return f"{self.country}-{self.subdiv}" if self.subdiv else self.country

    def name_on(self, day: date) -> str | None:
        """The holiday's name on ``day`` ("Christmas Eve"), or None on an ordinary day."""
        names = _calendar(self.country, self.subdiv).get_list(day)
        return "; ".join(names) if names else None


def data_version() -> str:
    """The ``holidays`` package's version: its data ships with it, so a data update is a new
    version (recorded in each schedule version that excludes holidays)."""
    return str(_require().__version__)


def parse_holidays(code: object) -> HolidayCalendar | None:
    """``"LV"``, ``"us-ny"`` ... as a calendar; ``""``/None: no exclusion. Unknown codes are
    refused with how to find the valid ones."""
    if code is None or code == "":
        return None
    if not isinstance(code, str) or len(code) > 40 or not code.strip():
        raise ScheduleValidationError(
            FIELD, f"expected a code such as 'LV' or 'US-NY', got {str(code)[:40]!r}"
        )
    country, _, subdiv = code.strip().upper().partition("-")
    supported = _require().list_supported_countries()
    if country not in supported or len(country) != 2:
        raise ScheduleValidationError(
            FIELD,
            f"unknown country {country!r}: use an ISO 3166-1 alpha-2 code the holidays "
            f"package knows (e.g. LV, DE, US); {HOW_TO_LIST}",
            code="unknown_country",
        )
    if subdiv and subdiv not in supported[country]:
        known = ", ".join(supported[country][:12]) or "none"
        more = ", ..." if len(supported[country]) > 12 else ""
        raise ScheduleValidationError(
            FIELD,
            f"unknown subdivision {subdiv!r} of {country} (known: {known}{more}); {HOW_TO_LIST}",
            code="unknown_subdivision",
        )
    return HolidayCalendar(country, subdiv or None)


def _require() -> Any:
    if _holidays is None:
        raise ScheduleValidationError(
            FIELD,
            "excluding public holidays needs the holidays package: " + install_extra("holidays"),
            code="missing_dependency",
        )
    return _holidays


@lru_cache(maxsize=256)
def _calendar(country: str, subdiv: str | None) -> Any:
    """One lazily filled calendar per code (the package computes a year when first asked)."""
    module = _require()
    languages = module.country_holidays(country).supported_languages
    language = next((name for name in _ENGLISH if name in languages), None)
    return module.country_holidays(country, subdiv=subdiv, language=language)
