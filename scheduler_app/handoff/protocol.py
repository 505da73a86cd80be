"""What every handoff target implements and carries: the ``Publisher`` protocol the outbox hands
occurrences to, its errors, which targets a publisher serves, and the occurrence context a
task receives in its message headers (``HEADER``). Below the outbox, the publishers (Celery,
django.tasks) and the worker's context, which all speak it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Protocol

from scheduler_app.models import HandoffTarget, Occurrence

HEADER = "scheduler"
"""Name of the message header that carries the occurrence context."""


class PublishError(Exception):
    """The broker refused or could not be reached; the occurrence stays in the outbox."""


class Publisher(Protocol):
    """May also declare ``targets``: the ``HandoffTarget`` values it serves (a frozenset).
    The outbox then claims and hands it only rows of those targets (and rows of an unknown
    target, to park them); rows of another target stay pending for a process that serves
    them. A publisher without ``targets`` serves every target."""

    def publish(self, occurrences: Sequence[Occurrence]) -> list[Occurrence]:
        """Publish in order; return those published. Raise ``PublishError`` to stop early
        (the ones already published must be returned via ``PublishError.published``)."""
        ...


Targets = frozenset[str] | None
"""The targets a publisher serves; None: all of them."""


def served_targets(publisher: Publisher) -> Targets:
    """``publisher.targets`` (None when it declares none: it serves every target)."""
    targets = getattr(publisher, "targets", None)
    return None if targets is None else frozenset(str(target) for target in targets)


KNOWN_TARGETS = frozenset(HandoffTarget.values)
"""Every ``HandoffTarget`` value (``HandoffTarget.values`` builds a new list each time)."""


@lru_cache(maxsize=16)
def unserved(targets: Targets) -> tuple[str, ...]:
    """The known targets that a process serving ``targets`` leaves to another process
    (remembered: asked for every row of a batch)."""
    if targets is None:
        return ()
    return tuple(value for value in HandoffTarget.values if value not in targets)


def ours(row: Occurrence, targets: Targets) -> bool:
    """Whether a process serving ``targets`` hands ``row`` off (or parks it: an unknown
    target is parked by whichever process meets it)."""
    return row.target not in unserved(targets)


class UnknownTarget(ValueError):
    """An occurrence whose ``target`` is no ``HandoffTarget``: no process can hand it off."""

    def __init__(self, target: str) -> None:
        expected = ", ".join(HandoffTarget.values)
        super().__init__(
            f"unknown handoff target {target!r}: expected one of {expected}; set the "
            "occurrence's target to one of them (or fix its schedule) and replay it"
        )


@dataclass
class PartialPublish(PublishError):
    published: list[Occurrence] = field(default_factory=list)
    cause: str = ""

    def __str__(self) -> str:
        return f"published {len(self.published)} before the broker failed: {self.cause}"


def context_headers(occurrence: Occurrence) -> dict[str, Any]:
    """The occurrence context a task receives in its message headers."""
    return {
        "occurrence_id": str(occurrence.id),
        "schedule_id": str(occurrence.schedule_id),
        "schedule_version": occurrence.schedule_version.version,
        "idempotency_key": occurrence.idempotency_key,
        "scheduled_for": _iso(occurrence.scheduled_for),
        "window_start": _iso(occurrence.window_start),
        "window_end": _iso(occurrence.window_end),
        "timezone": occurrence.timezone,
        "trigger": occurrence.trigger,
        "catch_up": occurrence.catch_up,
        "objective": occurrence.schedule_version.definition.get("objective", ""),
        "deadline_at": _iso(occurrence.deadline_at) if occurrence.deadline_at else None,
    }


def _iso(value: datetime) -> str:
    """An instant in UTC, ``Z`` for its offset."""
    return _utc_iso(value.astimezone(UTC))


@lru_cache(maxsize=4096)
def _utc_iso(instant: datetime) -> str:
    """Remembered for UTC instants only (a burst's messages share their slots): two local
    times that differ only by ``fold`` compare and hash equal although an hour apart."""
    return instant.isoformat().replace("+00:00", "Z")
