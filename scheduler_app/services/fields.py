"""The fields the schedule services take besides the definition.

Which fields a caller may pass besides the definition: descriptive ones, operational ones, and
create-only ones that only system actors give. The definition's own fields, their defaults and
canonical form are in ``scheduler_app.definition.canonical``. No database.
"""

from __future__ import annotations

from typing import Any

from scheduler_app.errors import ScheduleValidationError
from scheduler_app.models import ScheduleOrigin
from scheduler_app.safety.actors import is_system

DESCRIPTIVE_FIELDS = ("name", "key", "tenant", "owner")
OPERATIONAL_FIELDS = ("cost_estimate",)
"""Fields that change neither what runs nor who owns it: stored and audited, no new version."""
MAX_COST_ESTIMATE = 1e12
CREATE_ONLY_FIELDS = ("id", "origin")
"""Fields a caller may set when creating (an imported id, ``origin`` for code) but never change."""


def check_create_only(fields: dict[str, Any], user: Any) -> None:
    """An id or an origin is given by imports and decorator sync (system actors), never by a
    person: ``origin="code"`` would lock every person out of the schedule."""
    origin = fields.get("origin")
    if origin and origin not in ScheduleOrigin.values:
        choices = ", ".join(ScheduleOrigin.values)
        raise ScheduleValidationError(
            "origin", f"unknown origin {origin!r}; use one of: {choices}", code="invalid"
        )
    given = [name for name in CREATE_ONLY_FIELDS if fields.get(name)]
    if given and not is_system(user):
        raise ScheduleValidationError(
            given[0],
            f"{given[0]} is set by imports and by the code (@scheduled), not by a person; "
            "leave it out",
            code="not_allowed",
        )


def refuse_unknown(fields: dict[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = set(fields) - set(allowed)
    if unknown:
        name = sorted(unknown)[0]
        raise ScheduleValidationError(
            name, f"unknown schedule field {name!r}", code="unknown_field"
        )


def operational_values(fields: dict[str, Any]) -> dict[str, Any]:
    """The operational fields given, validated: ``cost_estimate`` is None or a finite number
    from 0 to 1e12 (the cost of one run, for backfill estimates)."""
    values = {name: fields[name] for name in OPERATIONAL_FIELDS if name in fields}
    if "cost_estimate" in values:
        values["cost_estimate"] = _cost(values["cost_estimate"])
    return values


def _cost(value: Any) -> float | None:
    if value is None:
        return None
    number = (
        float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    )
    if number is None or not 0 <= number <= MAX_COST_ESTIMATE:  # NaN fails both comparisons
        raise ScheduleValidationError(
            "cost_estimate",
            f"{value!r} is not a cost: give a number from 0 to {MAX_COST_ESTIMATE:g} (the cost "
            "of one run), or None",
            code="invalid",
        )
    return number


def descriptive_values(fields: dict[str, Any]) -> dict[str, Any]:
    return {name: fields[name] for name in DESCRIPTIVE_FIELDS if name in fields}
