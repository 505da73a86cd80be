"""Upsert planning shared by the contract import and the Celery beat migration.

An importer turns its source into ``Desired`` schedules; ``plan`` compares them with the
database without writing (a question: it returns changes and problems), ``apply`` carries a
plan out through the service layer. Callers wrap ``apply`` in one transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from scheduler_app.clock import Clock, SystemClock
from scheduler_app.definition.parsed import Definition, parse_definition
from scheduler_app.errors import ScheduleStateError, ScheduleValidationError
from scheduler_app.handoff.endpoints import check_event_route
from scheduler_app.models import SEMANTIC_FIELDS, Schedule, ScheduleStatus
from scheduler_app.safety.actors import COMMAND
from scheduler_app.safety.payloads import check_payload
from scheduler_app.services import (
    cancel_schedule,
    create_schedule,
    pause_schedule,
    resume_schedule,
    update_schedule,
)
from scheduler_app.timing import first_slot_from

logger = logging.getLogger("scheduler_app.importing")
DESCRIPTIVE = ("name", "key", "tenant", "owner")
SETTABLE_STATUSES = ("active", "paused", "cancelled", "completed")
VERDICT_STATUSES = ("completed", "awaiting_approval")
"""Statuses the engine (or the approval gate) decides: accepted in a document, never applied."""
Progress = Callable[[int], None]
"""Called with how many more items were handled (a progress bar's ``update``)."""


@dataclass(frozen=True, kw_only=True)
class Desired:
    """One schedule as a source wants it, in model field names."""

    label: str
    """Where it came from, for messages: ``schedules[3]``, ``celery-beat:nightly``."""
    fields: dict[str, Any]
    """Semantic fields (absent ones take the service defaults) and descriptive ones."""
    status: str = "active"
    schedule_id: UUID | None = None
    keep_existing: frozenset[str] = frozenset()
    """Fields whose stored value wins on update (e.g. an anchor the source leaves open)."""
    expected_version: int | None = None
    """The version the source was exported at; checked only when the caller asks to."""


@dataclass(frozen=True)
class Problem:
    """A reason a desired schedule cannot be applied; ``path`` locates it in the source."""

    label: str
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.label}.{self.path}" if self.path else self.label
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class Change:
    """What applying one desired schedule does: ``create``, ``update`` or ``unchanged``."""

    desired: Desired
    action: str
    values: dict[str, Any]
    definition: Definition | None = None
    """The parsed definition the services store as it is (not parsed again)."""
    existing: Schedule | None = None
    changed: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    status_from: str | None = None

    @property
    def status_changes(self) -> bool:
        return self.status_from is not None and self.status_from != self.desired.status


@dataclass(frozen=True)
class Plan:
    changes: tuple[Change, ...]
    problems: tuple[Problem, ...]

    def count(self, action: str) -> int:
        return sum(1 for change in self.changes if change.action == action)


def plan(
    desired: Sequence[Desired],
    now: datetime,
    *,
    field_paths: dict[str, str] | None = None,
    check_versions: bool = False,
    progress: Progress | None = None,
) -> Plan:
    """Compare every desired schedule with the database; write nothing.

    ``check_versions``: a desired schedule that carries ``expected_version`` must match the
    stored version (optimistic concurrency: nobody changed it since it was exported).
    """
    paths = field_paths or {}
    changes: list[Change] = []
    problems: list[Problem] = list(_duplicates(desired))
    stored = _Stored(desired)
    for item in desired:
        try:
            change = _plan_one(item, now, stored)
            if check_versions:
                _check_version(item, change.existing)
            changes.append(change)
        except ScheduleValidationError as exc:
            path = paths.get(exc.field) or paths.get(_root(exc.field), exc.field)
            problems.append(Problem(item.label, path, field_message(exc)))
        except ScheduleStateError as exc:
            problems.append(Problem(item.label, "status", str(exc)))
        if progress is not None:
            progress(1)
    return Plan(tuple(changes), tuple(problems))


def _check_version(item: Desired, existing: Schedule | None) -> None:
    wanted = item.expected_version
    if existing is None or wanted is None or existing.version == wanted:
        return
    raise ScheduleValidationError(
        "version",
        f"schedule {existing.pk} is at version {existing.version}, the document was exported at "
        f"version {wanted}: someone changed it since; export it again and reapply your edit",
        code="stale_version",
    )


def _root(name: str) -> str:
    return name.split(".", 1)[0]


def field_message(exc: ScheduleValidationError) -> str:
    """Keep the engine's own sub-field (``cron.minute``) when it says more than the path."""
    return exc.message if "." not in exc.field else f"{exc.field}: {exc.message}"


def _duplicates(desired: Sequence[Desired]) -> Iterable[Problem]:
    seen: dict[tuple[str, str], str] = {}
    for item in desired:
        identities = [("schedule_id", str(item.schedule_id))] if item.schedule_id else []
        if item.fields.get("key"):
            identities.append(("key", str(item.fields["key"])))
        for kind, value in identities:
            first = seen.setdefault((kind, value), item.label)
            if first != item.label:
                yield Problem(item.label, kind, f"{value!r} is also used by {first}")


class _Stored:
    """The stored schedules a batch may match, read in a few queries instead of two per item."""

    def __init__(self, desired: Sequence[Desired]) -> None:
        ids = [item.schedule_id for item in desired if item.schedule_id is not None]
        keys = [str(item.fields["key"]) for item in desired if item.fields.get("key")]
        self.by_id: dict[UUID, Schedule] = {row.pk: row for row in _matching("pk__in", ids)}
        self.by_key: dict[str, Schedule] = {str(r.key): r for r in _matching("key__in", keys)}

    def find(self, item: Desired) -> Schedule | None:
        """By id, then by key (docs/contract.md, "Identity")."""
        if item.schedule_id is not None and item.schedule_id in self.by_id:
            return self.by_id[item.schedule_id]
        key = item.fields.get("key")
        return self.by_key.get(str(key)) if key else None


def _matching(lookup: str, values: Sequence[Any], chunk: int = 500) -> Iterator[Schedule]:
    """The schedules whose ``lookup`` is in ``values``, asked ``chunk`` values at a time."""
    for start in range(0, len(values), chunk):
        yield from Schedule.objects.filter(**{lookup: values[start : start + chunk]})


def _plan_one(item: Desired, now: datetime, stored: _Stored) -> Change:
    existing = stored.find(item)
    kept = {name: getattr(existing, name) for name in item.keep_existing} if existing else None
    definition = parse_definition(item.fields, now=now, kept=kept)
    values, timing = definition.columns, definition.timing
    # The services' write gate refuses secrets in the payload: say so in the plan, on the
    # document's field, not at apply time as a problem of the file.
    check_payload(values.get("kwargs") or {})
    check_payload(values.get("args") or [], "args")
    tenant = item.fields.get("tenant", existing.tenant if existing is not None else "")
    check_event_route(values["task"], values.get("options"), str(tenant or ""))
    descriptive = {k: v for k, v in item.fields.items() if k in DESCRIPTIVE}
    if item.status not in (*SETTABLE_STATUSES, *VERDICT_STATUSES):
        raise ScheduleValidationError(
            "status", f"unknown status {item.status!r}; use one of: {', '.join(SETTABLE_STATUSES)}"
        )
    if existing is None:
        first_slot_from(timing, now)
        # ``origin`` (api/code) is set when a schedule is created, never changed afterwards.
        create_only = {k: v for k, v in item.fields.items() if k == "origin" and v}
        return Change(item, "create", {**values, **descriptive, **create_only}, definition)
    if existing.key and item.fields.get("key") and existing.key != item.fields["key"]:
        _check_key_free(item.fields["key"], existing)
    changed = {
        name: (getattr(existing, name), value)
        for name, value in {**values, **descriptive}.items()
        if getattr(existing, name) != value
    }
    if any(name in values for name in changed):
        first_slot_from(timing, now, required=False)  # as the services will: within the budget
    _check_status(existing, item.status, bool(changed))
    status_from = existing.status if _wants_status(existing.status, item.status) else None
    action = "update" if changed or status_from else "unchanged"
    return Change(
        item,
        action,
        {**values, **descriptive},
        definition,
        existing=existing,
        changed=changed,
        status_from=status_from,
    )


def _check_key_free(key: str, existing: Schedule) -> None:
    if Schedule.objects.filter(key=key).exclude(pk=existing.pk).exists():
        raise ScheduleValidationError(
            "key", f"key {key!r} belongs to another schedule than {existing.pk}", code="conflict"
        )


def _wants_status(current: str, wanted: str) -> bool:
    """``completed`` and ``awaiting_approval`` are verdicts, not orders: never applied."""
    if wanted in VERDICT_STATUSES or current == wanted:
        return False
    return not (current == ScheduleStatus.COMPLETED and wanted == ScheduleStatus.ACTIVE)


def _check_status(existing: Schedule, wanted: str, redefined: bool) -> None:
    if existing.status != ScheduleStatus.CANCELLED:
        if wanted == ScheduleStatus.PAUSED and existing.status == ScheduleStatus.COMPLETED:
            raise ScheduleStateError(
                f"schedule {existing.pk} is completed and cannot be paused; drop the status"
            )
        return
    if redefined or wanted not in (ScheduleStatus.CANCELLED, ScheduleStatus.COMPLETED):
        raise ScheduleStateError(
            f"schedule {existing.pk} is cancelled and cannot be changed or reactivated; "
            "remove schedule_id and key from the document to create a new schedule"
        )


def apply(
    changes: Sequence[Change],
    *,
    clock: Clock | None = None,
    progress: Progress | None = None,
    user: Any = COMMAND,
) -> list[Schedule]:
    """Carry out a plan through the services, as ``user`` (default: the command actor).
    Call inside ``transaction.atomic()``."""
    clock = clock or SystemClock()
    done = []
    for change in changes:
        if change.action != "unchanged":
            done.append(_apply_one(change, clock, user))
        if progress is not None:
            progress(1)
    return done


def _apply_one(change: Change, clock: Clock, user: Any) -> Schedule:
    if change.action == "create":
        wanted_id: dict[str, Any] = (
            {"id": change.desired.schedule_id} if change.desired.schedule_id else {}
        )
        beside = {k: v for k, v in change.values.items() if k not in SEMANTIC_FIELDS}
        schedule = create_schedule(
            definition=change.definition, clock=clock, user=user, **beside, **wanted_id
        )
        current = ScheduleStatus.ACTIVE.value
    else:
        existing = change.existing
        if existing is None:  # pragma: no cover - a Change("update") always has one
            raise ValueError("an update needs the existing schedule")
        schedule = existing
        current = existing.status
        if change.changed:
            # The document's whole definition (its lateness policies as written, not the
            # class defaults applied again), and the other fields that changed.
            beside = {
                name: new
                for name, (_old, new) in change.changed.items()
                if name not in SEMANTIC_FIELDS
            }
            schedule = update_schedule(
                existing.pk,
                expected_version=existing.version,
                definition=change.definition,
                clock=clock,
                user=user,
                **beside,
            )
    _set_status(schedule.pk, current, change.desired.status, clock, user)
    logger.info(
        "schedule imported",
        extra={
            "action": f"schedule.import.{change.action}",
            "schedule_id": str(schedule.pk),
            "source": change.desired.label,
        },
    )
    return schedule


def _set_status(schedule_id: UUID, current: str, wanted: str, clock: Clock, user: Any) -> None:
    if not _wants_status(current, wanted):
        return
    if wanted == ScheduleStatus.PAUSED:
        pause_schedule(schedule_id, clock=clock, user=user)
    elif wanted == ScheduleStatus.ACTIVE:
        resume_schedule(schedule_id, clock=clock, user=user)
    elif wanted == ScheduleStatus.CANCELLED:
        cancel_schedule(schedule_id, clock=clock, user=user)


PAST = {"create": "created", "update": "updated", "unchanged": "unchanged"}


def describe_change(change: Change, *, applied: bool = False, schedule_id: str = "") -> str:
    """One human line per change: what would be done (``--dry-run``) or what was done."""
    known = change.existing.pk if change.existing else change.desired.schedule_id
    target = str(known) if known else schedule_id
    verb = PAST.get(change.action, change.action) if applied else change.action
    head = f"{verb:<9} {change.desired.label}" + (f" ({target})" if target else "")
    if change.action == "create":
        values = change.values
        return (
            f"{head}: {values['task']} {values['kind']} {values['rule']!r} in {values['timezone']}"
        )
    parts = [f"{name}: {old!r} -> {new!r}" for name, (old, new) in sorted(change.changed.items())]
    if change.status_changes:
        parts.append(f"status: {change.status_from} -> {change.desired.status}")
    return head + (": " + "; ".join(parts) if parts else "")
