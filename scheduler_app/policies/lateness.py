"""Lateness classes (the specification's): each sets defaults for the lateness policies.

A class fills in ``max_lateness``, ``misfire_policy`` and ``deadline`` when the caller did not
give them; an explicit value always wins. Called by the services (create and update), the
contract importer and the ``@scheduled`` sync, so every way in gets the same defaults.
``real_time`` is refused: sub-second control loops need a dedicated real-time system, not a
durable scheduler. The table is documented in docs/contract.md ("Lateness classes").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler_app.errors import ScheduleValidationError

LATENESS_FIELDS = ("max_lateness", "misfire_policy", "deadline")
"""The fields a lateness class gives defaults for."""

CLASS_DEFAULTS: dict[str, dict[str, Any]] = {
    # Late by more than a minute, a reminder is news; after 5 minutes, noise. Of several
    # missed reminders only the last is worth sending.
    "human_reminder": {"max_lateness": 60, "misfire_policy": "fire_once", "deadline": 300},
    # Batches are late in minutes; every missed period's batch still has to run (catch up),
    # within the hour.
    "business_batch": {"max_lateness": 900, "misfire_policy": "catch_up", "deadline": 3600},
    # Cleanups, vacuums, rotations: hours of slack, and one run covers every missed one.
    "maintenance": {"max_lateness": 3600, "misfire_policy": "fire_once", "deadline": 21600},
    # A step of a workflow with a deadline of its own: every step runs, a run after the
    # deadline is pointless. Set ``deadline`` to the domain's when it differs.
    "workflow_deadline": {"max_lateness": 300, "misfire_policy": "catch_up", "deadline": 900},
}
REFUSED = "real_time"


def check_class(name: object) -> str:
    """The class name as stored (lower case); ``""`` is "no class". Raises for others."""
    if name in (None, ""):
        return ""
    text = name.strip().lower() if isinstance(name, str) else name
    if text == REFUSED:
        raise ScheduleValidationError(
            "lateness_class",
            "real_time (sub-second) work is not a scheduler's job: use a dedicated real-time "
            "system; pick human_reminder, business_batch, maintenance or workflow_deadline",
            code="real_time",
        )
    if text not in CLASS_DEFAULTS:
        raise ScheduleValidationError(
            "lateness_class",
            f"unknown lateness class {name!r}; use one of {', '.join(CLASS_DEFAULTS)}",
            code="invalid_choice",
        )
    return str(text)


def apply_class_defaults(
    requested: Mapping[str, Any], *, current: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """``requested`` with the defaults of its ``lateness_class`` for the fields it leaves out.

    On an update (``current`` given) the defaults apply only when the class changes, so an
    edit of another field never resets a policy the user tuned.
    """
    values = dict(requested)
    if "lateness_class" not in values:
        return values
    name = values["lateness_class"] = check_class(values["lateness_class"])
    if not name or (current is not None and current.get("lateness_class") == name):
        return values
    for field, default in CLASS_DEFAULTS[name].items():
        values.setdefault(field, default)
    return values
