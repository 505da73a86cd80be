"""The fields the schedule services take besides the definition.

Which fields a caller may pass besides the definition: descriptive ones, operational ones, and
create-only ones that only system actors give. The definition's own fields, their defaults and
canonical form are in ``scheduler_app.definition.canonical``. No database.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scheduler_app.errors import ScheduleValidationError
from scheduler_app.models import SEMANTIC_FIELDS, ScheduleOrigin
from scheduler_app.safety.actors import is_system

DESCRIPTIVE_FIELDS = ("name", "key", "tenant", "owner")
OPERATIONAL_FIELDS = ("cost_estimate",)
"""Fields that change neither what runs nor who owns it: stored and audited, no new version."""
MAX_COST_ESTIMATE = 1e12
CREATE_ONLY_FIELDS = ("id", "origin")
"""Fields a caller may set when creating (an imported id, ``origin`` for code) but never change."""


@dataclass(frozen=True)
class NewFields:
    """The fields of a new schedule, split by kind and read once (``split_new``)."""

    definition: dict[str, Any]
    """The definition's own fields as given (``text`` included): ``parse_definition`` reads
    and checks them."""
    descriptive: dict[str, Any]
    operational: dict[str, Any]
    """Checked (``operational_values``)."""
    create_only: dict[str, Any]
    """Those set (an imported id, ``origin``); who may set them: ``check_create_only``."""


def split_new(fields: dict[str, Any]) -> NewFields:
    """The fields given to ``create_schedule``, split by kind, with the checks that need no
    actor: every name known, a task named, a known origin, a cost that is a cost."""
    refuse_unknown(
        fields,
        (*SEMANTIC_FIELDS, "text", *DESCRIPTIVE_FIELDS, *OPERATIONAL_FIELDS, *CREATE_ONLY_FIELDS),
    )
    if fields.get("task") in (None, ""):
        raise ScheduleValidationError("task", "task is required", code="required")
    origin = fields.get("origin")
    if origin and origin not in ScheduleOrigin.values:
        choices = ", ".join(ScheduleOrigin.values)
        raise ScheduleValidationError(
            "origin", f"unknown origin {origin!r}; use one of: {choices}", code="invalid"
        )
    return NewFields(
        definition={k: v for k, v in fields.items() if k in SEMANTIC_FIELDS or k == "text"},
        descriptive=descriptive_values(fields),
        operational=operational_values(fields),
        create_only={name: fields[name] for name in CREATE_ONLY_FIELDS if fields.get(name)},
    )


def check_create_only(new: NewFields, user: Any) -> None:
    """An id or an origin is given by imports and decorator sync (system actors), never by a
    person: ``origin="code"`` would lock every person out of the schedule."""
    given = list(new.create_only)
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
