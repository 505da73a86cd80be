"""What the contract tests share: the fields a round trip must keep, and a clean slate."""

from __future__ import annotations

from typing import Any

from scheduler_app.models import SEMANTIC_FIELDS, Schedule, ScheduleVersion

COMPARED = (
    *SEMANTIC_FIELDS,
    *("id", "key", "name", "tenant", "owner_id", "status", "version", "origin"),
)
"""Every field a document carries: the semantic ones and the schedule's identity and state."""


def snapshot() -> dict[str, tuple[Any, ...]]:
    """Every schedule's compared fields, by id."""
    return {
        str(s.pk): tuple(getattr(s, f) for f in COMPARED) for s in Schedule.objects.order_by("pk")
    }


def wipe() -> None:
    """An empty schedule table (versions first: they protect nothing, but reference it)."""
    ScheduleVersion.objects.all().delete()
    Schedule.objects.all().delete()
