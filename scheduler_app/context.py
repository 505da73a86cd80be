"""The occurrence context a scheduled task sees: one frozen object.

Inside a run started by ``OccurrenceTask`` (Celery) or by the django.tasks adapter's claim
(``scheduler_app.djtasks.worker``) it is built from the stored occurrence, never from what the
message claims; ``context_from_request`` reads the Celery message header only to tell a
scheduled delivery from an ordinary task call.

Target-neutral: nothing here imports Celery. A Celery request is read only when the process
has imported Celery already (a Celery worker has; a ``db_worker`` need not).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from scheduler_app.handoff.protocol import HEADER

if TYPE_CHECKING:
    from scheduler_app.models import Occurrence


@dataclass(frozen=True, kw_only=True)
class OccurrenceContext:
    occurrence_id: str
    schedule_id: str
    schedule_version: int | None
    idempotency_key: str
    scheduled_for: datetime
    window_start: datetime
    window_end: datetime
    timezone: str
    trigger: str
    catch_up: bool
    objective: str
    deadline_at: datetime | None
    attempt: int = 1
    rule: str = ""
    """The schedule's rule as its version stores it (cron, RRULE, seconds, ISO instant)."""
    fired_at: datetime | None = None
    """When the beat handed the occurrence to the broker (its latest handoff)."""
    payload_ref: str = ""
    """The schedule's payload reference, for tasks that resolve their input by reference."""

    @classmethod
    def from_occurrence(cls, occurrence: Occurrence, attempt: int) -> OccurrenceContext:
        """The context of a stored occurrence (with ``schedule_version`` loaded)."""
        definition = occurrence.schedule_version.definition
        return cls(
            occurrence_id=str(occurrence.pk),
            schedule_id=str(occurrence.schedule_id),
            schedule_version=occurrence.schedule_version.version,
            idempotency_key=occurrence.idempotency_key,
            scheduled_for=occurrence.scheduled_for.astimezone(UTC),
            window_start=occurrence.window_start.astimezone(UTC),
            window_end=occurrence.window_end.astimezone(UTC),
            timezone=occurrence.timezone,
            trigger=occurrence.trigger,
            catch_up=occurrence.catch_up,
            objective=str(definition.get("objective") or ""),
            deadline_at=occurrence.deadline_at,
            attempt=attempt,
            rule=str(definition.get("rule") or ""),
            fired_at=occurrence.dispatched_at or occurrence.emitted_at,
            payload_ref=str(definition.get("payload_ref") or ""),
        )

    @classmethod
    def from_header(cls, header: dict[str, Any], attempt: int = 1) -> OccurrenceContext:
        return cls(
            occurrence_id=header["occurrence_id"],
            schedule_id=header["schedule_id"],
            schedule_version=header.get("schedule_version"),
            idempotency_key=header["idempotency_key"],
            scheduled_for=_parse(header["scheduled_for"]),
            window_start=_parse(header["window_start"]),
            window_end=_parse(header["window_end"]),
            timezone=header["timezone"],
            trigger=header["trigger"],
            catch_up=bool(header.get("catch_up")),
            objective=header.get("objective") or "",
            deadline_at=_parse(header["deadline_at"]) if header.get("deadline_at") else None,
            attempt=attempt,
            rule=str(header.get("rule") or ""),
            fired_at=_parse(header["fired_at"]) if header.get("fired_at") else None,
            payload_ref=str(header.get("payload_ref") or ""),
        )

    @property
    def window(self) -> tuple[datetime, datetime]:
        """The business period this run covers: (previous slot, this slot)."""
        return self.window_start, self.window_end

    def remaining(self, now: datetime | None = None) -> float | None:
        """Seconds left before the deadline (None when there is no deadline).

        Ask before an expensive step; ``now`` defaults to the wall clock (tests pass one).
        """
        if self.deadline_at is None:
            return None
        return (self.deadline_at - (now or datetime.now(UTC))).total_seconds()


def _parse(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


def scheduler_header(request: Any) -> dict[str, Any] | None:
    """The scheduler's header of a Celery task request: present on every delivery the beat
    published (a scheduled delivery), absent on ordinary task calls."""
    header = getattr(request, HEADER, None)
    if header is None and isinstance(getattr(request, "headers", None), dict):
        header = request.headers.get(HEADER)
    return header if isinstance(header, dict) else None


def header_slot(header: dict[str, Any]) -> datetime | None:
    """The slot (``scheduled_for``) a scheduler header names, or None when it names none or
    one that does not parse (an older message). A hint for finding the row (the ledger's
    partition key), never trusted: the claim checks it against the row."""
    value = header.get("scheduled_for")
    if not isinstance(value, str):
        return None
    try:
        slot = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return slot if slot.tzinfo is not None else None  # naive: no instant to look up by


def context_from_request(request: Any) -> OccurrenceContext | None:
    """The context the message header claims, or None for a task not run by us (or a header
    that does not parse). Informational only: a run uses the stored occurrence."""
    header = scheduler_header(request)
    if header is None:
        return None
    try:
        return OccurrenceContext.from_header(
            header, attempt=(getattr(request, "retries", 0) or 0) + 1
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


_CURRENT: ContextVar[OccurrenceContext | None] = ContextVar("scheduler_occurrence", default=None)


def enter_occurrence(context: OccurrenceContext) -> Token[OccurrenceContext | None]:
    """Make ``context`` current until ``leave_occurrence`` (for adapters whose start and end
    are two callbacks, such as django.tasks' ``task_started`` and ``task_finished``)."""
    return _CURRENT.set(context)


def leave_occurrence(token: Token[OccurrenceContext | None]) -> None:
    _CURRENT.reset(token)


@contextmanager
def use_occurrence(context: OccurrenceContext) -> Iterator[OccurrenceContext]:
    """Make ``context`` the current occurrence (set by the task base class while it runs)."""
    token = _CURRENT.set(context)
    try:
        yield context
    finally:
        _CURRENT.reset(token)


def current_occurrence() -> OccurrenceContext | None:
    """The occurrence of the task running here, if it was scheduled by us.

    Inside a task run by ``OccurrenceTask`` or claimed by the django.tasks adapter this
    includes the attempt number recorded by the claim; otherwise it is read from the Celery
    request's headers (when Celery runs the task).
    """
    claimed = _CURRENT.get()
    if claimed is not None:
        return claimed
    state = sys.modules.get("celery._state")
    if state is None:  # Celery never imported here: no Celery task can be running
        return None
    task = state.get_current_task()
    if task is None:  # not inside a Celery task (a django.tasks job, a shell)
        return None
    return context_from_request(task.request)
