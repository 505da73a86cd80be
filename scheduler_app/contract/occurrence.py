"""``occurrence.v1``: the specification's record of one occurrence, and what exports it.

The specification's statuses describe the scheduler's side of a run: ``PENDING`` (not handed
off yet), ``EMITTED`` (handed to the broker; the outcome is not known yet) and the outcomes.
Our finer states map onto them (``STATUS_OF_STATE``); the record keeps the fine ``state`` and
its ``reason`` beside, so nothing is lost. See docs/contract.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import suppress
from datetime import UTC, datetime
from typing import Any
from uuid import UUID
from zoneinfo import ZoneInfo

from django.db.models import Q, QuerySet

from scheduler_app.contract.export import looks_like_uuid
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.models import Occurrence, OccurrenceState, Schedule

OCCURRENCE_CONTRACT = "occurrence.v1"
STATUS_OF_STATE: dict[str, str] = {
    OccurrenceState.PENDING: "PENDING",
    OccurrenceState.BUFFERED: "PENDING",
    OccurrenceState.DISPATCHED: "EMITTED",
    OccurrenceState.RUNNING: "EMITTED",
    OccurrenceState.RETRYING: "EMITTED",
    OccurrenceState.SUCCEEDED: "SUCCEEDED",
    OccurrenceState.FAILED: "FAILED",
    OccurrenceState.EXPIRED: "EXPIRED",
    OccurrenceState.SKIPPED: "SKIPPED",
    OccurrenceState.CANCELLED: "CANCELLED",
}
"""Every occurrence state -> its occurrence.v1 status (a test covers every state)."""
STATUSES = tuple(dict.fromkeys(STATUS_OF_STATE.values()))
LATER_INSTANTS = ("window_start", "window_end", "deadline_at", "started_at", "finished_at")
"""The instants a record ends with, named as the occurrence's fields."""


def occurrence_contract(occurrence: Occurrence) -> dict[str, Any]:
    """One occurrence as an ``occurrence.v1`` record (keys in the documented order).

    Instants carry the offset of the occurrence's zone (the schedule's zone when it was
    produced). ``target_ref`` is the Celery task id of the message, ``null`` until the first
    handoff; ``emitted_at`` is the first successful handoff.
    """
    zone = occurrence.timezone
    handed_off = occurrence.emitted_at is not None or occurrence.publish_count > 0
    emitted_at = occurrence.emitted_at or (occurrence.dispatched_at if handed_off else None)
    schedule = occurrence.schedule
    return {
        "contract": OCCURRENCE_CONTRACT,
        "occurrence_id": str(occurrence.pk),
        "schedule_id": str(occurrence.schedule_id),
        "schedule_version": occurrence.schedule_version.version,
        "scheduled_for": local_instant(occurrence.scheduled_for, zone),
        "emitted_at": local_instant(emitted_at, zone),
        "idempotency_key": occurrence.idempotency_key,
        "target_ref": str(occurrence.pk) if handed_off else None,
        "status": STATUS_OF_STATE[occurrence.state],
        "state": occurrence.state,
        "reason": occurrence.reason,
        "trigger": occurrence.trigger,
        "schedule_key": schedule.key,
        "task": occurrence.task,
        "attempts": occurrence.attempts,
        **{name: local_instant(getattr(occurrence, name), zone) for name in LATER_INSTANTS},
    }


def local_instant(value: datetime | None, zone: str) -> str | None:
    if value is None:
        return None
    with suppress(ValueError, KeyError, OSError):  # a zone the database lost: UTC says it
        return value.astimezone(ZoneInfo(zone)).isoformat()
    return value.astimezone(UTC).isoformat()


# -- selecting occurrences for export --------------------------------------------------------


def states_for(names: Iterable[str]) -> list[str]:
    """Native states for ``--state`` values: a state (``failed``) or a status (``EMITTED``)."""
    wanted: list[str] = []
    for name in names:
        text = name.strip()
        if text.lower() in STATUS_OF_STATE:
            wanted.append(text.lower())
        elif text.upper() in STATUSES:
            wanted += [s for s, status in STATUS_OF_STATE.items() if status == text.upper()]
        else:
            choices = ", ".join([*STATUS_OF_STATE, *STATUSES])
            raise ScheduleValidationError(
                "state", f"unknown state {name!r}; use one of: {choices}", code="invalid_choice"
            )
    return list(dict.fromkeys(wanted))


def find_schedule(ref: str) -> Schedule:
    """A schedule by its UUID or its key (the external id of the spec style)."""
    match = Q(key=ref) | Q(pk=UUID(ref)) if looks_like_uuid(ref) else Q(key=ref)
    schedule = Schedule.objects.filter(match).first()
    if schedule is None:
        raise ScheduleValidationError(
            "schedule", f"no schedule with id or key {ref!r}", code="not_found"
        )
    return schedule


def select_occurrences(
    *,
    schedule: Schedule | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    states: Iterable[str] = (),
) -> QuerySet[Occurrence]:
    """Occurrences by slot: ``since`` inclusive, ``until`` exclusive; ordered by slot, id."""
    rows = Occurrence.objects.select_related("schedule", "schedule_version")
    if schedule is not None:
        rows = rows.filter(schedule=schedule)
    if since is not None:
        rows = rows.filter(scheduled_for__gte=since)
    if until is not None:
        rows = rows.filter(scheduled_for__lt=until)
    wanted = list(states)
    if wanted:
        rows = rows.filter(state__in=wanted)
    return rows.order_by("scheduled_for", "id")
