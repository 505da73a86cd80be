"""The schedule row as the services read and write it: found (with the acting user's
tenants checked), locked, saved with its key checked, and each version's snapshot stored."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from django.db import IntegrityError, transaction

from scheduler_app.clock import Clock, SystemClock
from scheduler_app.definition.schedule import calendar_data_versions, is_uuid, version_id
from scheduler_app.errors import DuplicateKey, ScheduleValidationError, StaleVersion
from scheduler_app.models import SEMANTIC_FIELDS, Schedule, ScheduleVersion
from scheduler_app.safety.tenancy import check_access


def clock_of(clock: Clock | None) -> Clock:
    return clock or SystemClock()


def insert(schedule: Schedule) -> None:
    """Insert, translating a key conflict (checked first, and raced by the constraint)."""
    save_keyed(schedule, force_insert=True)


def save_keyed(schedule: Schedule, *, force_insert: bool = False) -> None:
    """Save, translating a conflict on the unique key into ``DuplicateKey`` (never a raw
    database error that every surface would answer with a 500)."""
    key_taken = DuplicateKey(
        "key",
        f"a schedule with key {schedule.key!r} exists already; pick another key or update it",
        code="duplicate_key",
    )
    others = Schedule.objects.filter(key=schedule.key).exclude(pk=schedule.pk)
    if schedule.key and others.exists():
        raise key_taken
    try:
        with transaction.atomic():
            schedule.save(force_insert=force_insert)
    except IntegrityError:
        if schedule.key and others.exists():
            raise key_taken from None
        raise


def check_version(schedule: Schedule, expected_version: int) -> None:
    if schedule.version != expected_version:
        raise StaleVersion(
            f"schedule {schedule.id} is at version {schedule.version}, your edit was based on "
            f"version {expected_version}; reload it and apply your change again"
        )


def get_schedule(schedule_id: UUID | str, user: Any = None) -> Schedule:
    """The schedule as stored, without a lock (validation happens before any lock).

    With ``user``, their tenants are checked (``TenantForbidden``)."""
    schedule = Schedule.objects.filter(pk=schedule_id).first() if is_uuid(schedule_id) else None
    if schedule is None:
        raise ScheduleValidationError(
            "schedule_id", f"no schedule with id {schedule_id}", code="not_found"
        )
    check_access(user, schedule)
    return schedule


def locked(schedule_id: UUID | str, user: Any = None) -> Schedule:
    try:
        schedule = Schedule.objects.select_for_update().get(pk=schedule_id)
    except (Schedule.DoesNotExist, ValueError):
        raise ScheduleValidationError(
            "schedule_id", f"no schedule with id {schedule_id}", code="not_found"
        ) from None
    check_access(user, schedule)
    return schedule


def snapshot(schedule: Schedule, now: datetime) -> ScheduleVersion:
    definition = {name: _jsonable(getattr(schedule, name)) for name in SEMANTIC_FIELDS}
    # Who and what it is called are versioned too: an edit of them is a new version.
    definition.update(name=schedule.name, tenant=schedule.tenant, owner_id=schedule.owner_id)
    definition.update(calendar_data_versions(schedule))
    return ScheduleVersion.objects.create(
        id=version_id(schedule.id, schedule.version),
        schedule=schedule,
        version=schedule.version,
        definition=definition,
        created_at=now,
    )


def _jsonable(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value
