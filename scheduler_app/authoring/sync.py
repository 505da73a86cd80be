"""Keep the database in step with the schedules declared in code (``@scheduled``).

Upsert by key: a declaration without a row is created; a row whose definition differs is
updated through the service layer (a new version); an equal one is left alone (no version
bump); a code-declared row whose declaration is gone is retired (cancelled: no future
occurrences, history kept). Rows created here carry ``origin="code"``; rows of other origins
are never touched. Status is the operator's: a paused schedule stays paused.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal
from uuid import UUID

from celery import current_app
from django.db import IntegrityError, transaction

from scheduler_app.authoring.declarations import Declaration, ScheduleRegistry, registry
from scheduler_app.clock import Clock, SystemClock
from scheduler_app.definition.parsed import Definition, parse_definition
from scheduler_app.errors import (
    DuplicateKey,
    SchedulerError,
    ScheduleValidationError,
    StaleVersion,
)
from scheduler_app.handoff import djtasks_registry as djtasks
from scheduler_app.handoff.allowlist import check_target
from scheduler_app.models import SEMANTIC_FIELDS, Schedule, ScheduleOrigin, ScheduleStatus
from scheduler_app.policies.lateness import apply_class_defaults
from scheduler_app.safety.actors import SYNC
from scheduler_app.services import DEFAULTS, cancel_schedule, create_schedule, update_schedule
from scheduler_app.timing import first_slot_from

logger = logging.getLogger("scheduler_app.sync")
Action = Literal["create", "update", "unchanged", "retire", "error"]
_LABELS: tuple[tuple[Action, str], ...] = (
    ("create", "created"),
    ("update", "updated"),
    ("unchanged", "unchanged"),
    ("retire", "retired"),
    ("error", "failed"),
)


@dataclass(frozen=True, kw_only=True)
class SyncEntry:
    """What sync did (or, in a dry run, would do) for one key."""

    action: Action
    key: str
    task: str
    schedule_id: UUID | None = None
    version: int | None = None
    detail: str = ""

    def line(self) -> str:
        where = f" {self.schedule_id}" if self.schedule_id else ""
        version = f" v{self.version}" if self.version else ""
        detail = f": {self.detail}" if self.detail else ""
        return f"{self.action:9} {self.key} ({self.task}){where}{version}{detail}"


@dataclass(frozen=True, kw_only=True)
class SyncReport:
    entries: tuple[SyncEntry, ...]
    dry_run: bool = False

    def count(self, action: Action) -> int:
        return sum(1 for entry in self.entries if entry.action == action)

    @property
    def errors(self) -> tuple[SyncEntry, ...]:
        return tuple(entry for entry in self.entries if entry.action == "error")

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> str:
        counts = ", ".join(f"{self.count(action)} {label}" for action, label in _LABELS)
        return f"{counts}{' (dry run: nothing written)' if self.dry_run else ''}"


@dataclass(frozen=True)
class _Run:
    """What every step of one sync shares: its instant, its clock, whether it only reports."""

    now: datetime
    clock: Clock | None
    dry_run: bool


def sync_schedules(
    *,
    dry_run: bool = False,
    clock: Clock | None = None,
    declarations: ScheduleRegistry | None = None,
    app: Any = None,
) -> SyncReport:
    """Write the declared schedules to the database; ``dry_run`` only reports.

    Without ``declarations`` the Celery app's task modules are imported first (so every
    ``@scheduled`` has run) and the process registry is used. A declaration that cannot be
    applied is reported as an ``error`` entry; the others are applied all the same.
    """
    now = (clock or SystemClock()).now()
    if declarations is None:
        _import_task_modules(app)
        declarations = registry()
    declared = declarations.declarations()
    keys = [declaration.key for declaration in declared]
    rows = {row.key: row for row in Schedule.objects.filter(key__in=keys)}
    run = _Run(now, clock, dry_run)
    entries = [_sync_one(d, rows.get(d.key), run) for d in declared]
    gone = (
        Schedule.objects.filter(origin=ScheduleOrigin.CODE)
        .exclude(status=ScheduleStatus.CANCELLED)
        .exclude(key__in=keys)
        .order_by("key")
    )
    entries += [_retire(row, run) for row in gone]
    report = SyncReport(entries=tuple(entries), dry_run=dry_run)
    _log(report)
    return report


def _import_task_modules(app: Any) -> None:
    app = current_app if app is None else app
    app.loader.import_default_modules()
    djtasks.discover()  # the installed apps' tasks modules, where django.tasks tasks live


def _sync_one(declaration: Declaration, row: Schedule | None, run: _Run) -> SyncEntry:
    try:
        try:
            return _apply(declaration, row, run)
        except (IntegrityError, DuplicateKey, StaleVersion):
            # Another beat synced the same key at the same moment: look again, once.
            row = Schedule.objects.filter(key=declaration.key).first()
            return _apply(declaration, row, run)
    except (SchedulerError, IntegrityError) as exc:
        return _entry("error", declaration, row, detail=str(exc))


def _apply(declaration: Declaration, row: Schedule | None, run: _Run) -> SyncEntry:
    check_target(declaration.task)  # the allowlist, as for every other way in
    desired = desired_values(declaration)
    if row is None:
        return _create(declaration, desired, run)
    if row.origin != ScheduleOrigin.CODE:
        raise ScheduleValidationError(
            "key",
            f"key {declaration.key!r} belongs to schedule {row.id}, which was not declared in "
            "code; give the declaration another key= (or delete that schedule)",
            code="key_taken",
        )
    if row.status == ScheduleStatus.CANCELLED:
        return _replace_retired(declaration, row, desired, run)
    changes = differences(row, desired)
    if not run.dry_run and row.code_location != declaration.location:
        _locate(row.pk, declaration)  # the code moved: not a new definition
    if not changes:
        return _entry("unchanged", declaration, row)
    detail = f"changed {', '.join(sorted(changes))}"
    # The whole definition as declared (the stored anchor where none is declared): its
    # lateness policies are the declared ones, not the class defaults applied again.
    definition = _definition_to_store({**row.stored_definition(), **changes}, run.now)
    if run.dry_run:
        return _entry("update", declaration, row, version=row.version + 1, detail=detail)
    updated = update_schedule(
        row.id, expected_version=row.version, definition=definition, clock=run.clock, user=SYNC
    )
    return _entry("update", declaration, updated, detail=detail)


def _create(
    declaration: Declaration, desired: dict[str, Any], run: _Run, detail: str = ""
) -> SyncEntry:
    definition = _definition_to_store(desired, run.now, creating=True)
    if run.dry_run:
        return _entry("create", declaration, None, version=1, detail=detail)
    with transaction.atomic():
        created = create_schedule(
            definition=definition, clock=run.clock, user=SYNC, key=declaration.key
        )
        Schedule.objects.filter(pk=created.pk).update(origin=ScheduleOrigin.CODE)
        _locate(created.pk, declaration)
    return _entry("create", declaration, created, detail=detail)


def _locate(schedule_id: UUID, declaration: Declaration) -> None:
    """Record where the declaration is (``file:line``) for operators: not a semantic field."""
    Schedule.objects.filter(pk=schedule_id).update(code_location=declaration.location)


def _replace_retired(
    declaration: Declaration, row: Schedule, desired: dict[str, Any], run: _Run
) -> SyncEntry:
    """A retired key declared again: a new schedule takes the key; the old one keeps its
    history under the key with a ``~retired~`` suffix."""
    detail = f"declared again; retired schedule {row.id} keeps its history"
    if run.dry_run:
        return _create(declaration, desired, run, detail=detail)
    with transaction.atomic():
        Schedule.objects.filter(pk=row.pk).update(key=f"{row.key}~retired~{row.id.hex[:12]}")
        return _create(declaration, desired, run, detail=detail)


def _retire(row: Schedule, run: _Run) -> SyncEntry:
    entry = SyncEntry(
        action="retire",
        key=row.key or "",
        task=row.task,
        schedule_id=row.id,
        version=row.version,
        detail="no longer declared; cancelled, history kept",
    )
    if not run.dry_run:
        try:
            cancel_schedule(row.id, clock=run.clock, user=SYNC, reason="removed from the code")
        except SchedulerError as exc:
            return replace(entry, action="error", detail=str(exc))
    return entry


def desired_values(declaration: Declaration) -> dict[str, Any]:
    """Every semantic field as the declaration wants it, in stored form.

    Fields the declaration leaves out take the defaults of its ``lateness_class``, then the
    store's (so deleting ``misfire=`` from the code puts the default back). ``anchor`` is
    ``None`` when not declared: the store picks one at creation and later syncs keep it.
    """
    values: dict[str, Any] = {name: None for name in SEMANTIC_FIELDS}
    values.update({name: value for name, value in DEFAULTS.items() if name in values})
    declared = {
        name: value for name, value in declaration.schedule_fields().items() if name in values
    }
    values.update(apply_class_defaults(declared))
    return values


def differences(row: Schedule, desired: dict[str, Any]) -> dict[str, Any]:
    """The fields whose stored value differs from the declared one (as values, not text)."""
    changes = {}
    for name, value in desired.items():
        if name == "anchor" and value is None:
            continue
        current = getattr(row, name)
        if isinstance(current, datetime) and isinstance(value, datetime):
            same = current.astimezone(UTC) == value.astimezone(UTC)
        else:
            same = current == value
        if not same:
            changes[name] = value
    return changes


def _definition_to_store(
    values: dict[str, Any], now: datetime, *, creating: bool = False
) -> Definition:
    """The definition as the services will store it, or what they would refuse, found
    without writing: the same ``first_slot_from`` search under the settings' budget (a rule
    rarer than it sees is refused)."""
    given = {name: value for name, value in values.items() if value is not None}
    definition = parse_definition(given, now=now)
    first_slot_from(definition.timing, now, required=creating)
    return definition


def _entry(
    action: Action,
    declaration: Declaration,
    row: Schedule | None,
    *,
    version: int | None = None,
    detail: str = "",
) -> SyncEntry:
    return SyncEntry(
        action=action,
        key=declaration.key,
        task=declaration.task,
        schedule_id=row.id if row is not None else None,
        version=version if version is not None else (row.version if row is not None else None),
        detail=detail,
    )


def _log(report: SyncReport) -> None:
    for entry in report.entries:
        if entry.action == "unchanged":
            continue
        log = logger.error if entry.action == "error" else logger.info
        log(
            "sync %s %s%s",
            entry.action,
            entry.key,
            f": {entry.detail}" if entry.detail else "",
            extra={
                "action": f"sync.{entry.action}",
                "key": entry.key,
                "schedule_id": str(entry.schedule_id or ""),
                "dry_run": report.dry_run,
            },
        )
    logger.info(
        "schedules synced: %s",
        report.summary(),
        extra={"action": "sync.done", "dry_run": report.dry_run},
    )
