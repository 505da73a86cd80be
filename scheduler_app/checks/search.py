"""E008: the search budget's settings are usable (``scheduler_app.checks`` registers it).

``SCHEDULER_SEARCH_CANDIDATES`` and ``SCHEDULER_SEARCH_SPAN_DAYS`` bound every computation of
a slot (``timing/budget.py``). A value that is not a whole number >= 1 makes building every
schedule's rule raise: every create and edit would be refused and the beat would park every
schedule it plans. Tagged ``startup.TAG``, so a beat or worker refuses to start with it.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core import checks

from scheduler_app.checks.startup import TAG
from scheduler_app.conf import get_settings
from scheduler_app.timing.budget import (
    CANDIDATES_SETTING,
    DEFAULT_CANDIDATES,
    DEFAULT_SPAN_DAYS,
    SPAN_SETTING,
)

MAX_SPAN_DAYS = timedelta.max.days
"""The longest span a ``timedelta`` holds (a larger one overflows when the budget is built)."""


@checks.register(TAG)
def search_budget_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    current = get_settings()
    return search_budget_errors(current.SEARCH_CANDIDATES, current.SEARCH_SPAN_DAYS)


def search_budget_errors(candidates: object, span_days: object) -> list[checks.CheckMessage]:
    """E008 for each search budget setting that is not a whole number >= 1 (nor too large)."""
    settings = (
        (CANDIDATES_SETTING, candidates, DEFAULT_CANDIDATES, None),
        (SPAN_SETTING, span_days, DEFAULT_SPAN_DAYS, MAX_SPAN_DAYS),
    )
    return [
        checks.Error(
            f"{name} is {value!r}, not a whole number >= 1"
            + (f" and <= {most:,}" if most is not None else "")
            + ": every schedule's rule would fail to build (refused, or parked by the beat)",
            hint=f"set it to a whole number >= 1, or remove it (the default: {default})",
            id="scheduler_app.E008",
        )
        for name, value, default, most in settings
        if not whole(value, 1, most)
    ]


def whole(value: object, least: int, most: int | None) -> bool:
    """``value`` is a whole number (an ``int``, not a ``bool``) from ``least`` to ``most``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        return False
    return most is None or value <= most
