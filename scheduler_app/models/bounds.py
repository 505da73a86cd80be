"""The bounds of the schedule's whole-number fields (``limits.NUMBER_LIMITS``): as field
validators (``bounded``) and as the database's check constraints (``range_constraints``)."""

from __future__ import annotations

from typing import Any

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from scheduler_app.policies.limits import NUMBER_LIMITS


def bounded(field: str) -> list[Any]:
    """The validators of a whole-number field, from ``limits.NUMBER_LIMITS`` (forms show them
    as field errors; ``range_constraints`` makes the database refuse the same values)."""
    low, high = NUMBER_LIMITS[field]
    return [MinValueValidator(low), MaxValueValidator(high)]


def range_constraints() -> list[models.CheckConstraint]:
    """One check constraint per bounded field: a stored value out of range is refused even
    when it bypasses the services (a raw update, a fixture), so no process meets one."""
    constraints = []
    for field, (low, high) in NUMBER_LIMITS.items():
        within = Q(**{f"{field}__gte": low, f"{field}__lte": high})
        constraints.append(
            models.CheckConstraint(
                condition=within | Q(**{f"{field}__isnull": True}), name=f"sched_{field}_range"
            )
        )
    return constraints
