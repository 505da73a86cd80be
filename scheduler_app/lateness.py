"""Lateness classes (the specification's): each sets defaults for the lateness policies.

A class fills in ``max_lateness``, ``misfire_policy`` and ``deadline`` when the caller did not
give them; an explicit value always wins. ``real_time`` is refused: sub-second control loops
need a dedicated real-time system, not a durable scheduler.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler_app.errors import ScheduleValidationError

CLASS_DEFAULTS: dict[str, dict[str, Any]] = {
    "human_reminder": {"max_lateness": 60, "misfire_policy": "fire_once", "deadline": 300},
    "business_batch": {"max_lateness": 900, "misfire_policy": "catch_up", "deadline": 3600},
    "maintenance": {"max_lateness": 3600, "misfire_policy": "fire_once", "deadline": 21600},
    "workflow_deadline": {"max_lateness": 300, "misfire_policy": "catch_up", "deadline": 900},
}


def apply_class_defaults(
    requested: Mapping[str, Any], *, current: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """``requested`` with the defaults of its ``lateness_class`` for the fields it leaves out.

    On an update (``current`` given) the defaults apply only when the class changes.
    """
    values = dict(requested)
    name = values.get("lateness_class")
    if not name or (current is not None and current.get("lateness_class") == name):
        return values
    if name == "real_time":
        raise ScheduleValidationError(
            "lateness_class",
            "real_time (sub-second) work is not a scheduler's job: use a dedicated real-time "
            "system; pick human_reminder, business_batch, maintenance or workflow_deadline",
            code="real_time",
        )
    if name not in CLASS_DEFAULTS:
        raise ScheduleValidationError(
            "lateness_class",
            f"unknown lateness class {name!r}; use one of {', '.join(CLASS_DEFAULTS)}",
            code="invalid_choice",
        )
    for field, default in CLASS_DEFAULTS[name].items():
        values.setdefault(field, default)
    return values
