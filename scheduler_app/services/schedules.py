"""The service layer: every way of changing a schedule (admin, commands, decorator) goes here.

This module holds a definition's life: create and update (pause, resume, cancel and delete are
in ``status``). Which fields they take, their defaults and their canonical form are in
``scheduler_app.services.fields``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from django.db import transaction

from scheduler_app.clock import Clock
from scheduler_app.definition.parsed import (
    Definition,
    canonical_fields,
    parse_definition,
    stored_as_parsed,
)
from scheduler_app.definition.schedule import (
    timing_for,
    validate_definition,
)
from scheduler_app.dispatch.materialize import apply_overlap, insert_occurrences, plan_schedule
from scheduler_app.errors import (
    SchedulerError,
    ScheduleStateError,
    ScheduleValidationError,
)
from scheduler_app.handoff.allowlist import target_of
from scheduler_app.handoff.endpoints import check_event_route
from scheduler_app.models import (
    SEMANTIC_FIELDS,
    Occurrence,
    Schedule,
    ScheduleStatus,
)
from scheduler_app.models.audit import AuditAction
from scheduler_app.policies.limits import check_descriptive
from scheduler_app.safety import audit
from scheduler_app.safety.access import (
    ADD,
    CHANGE,
    authorize,
    check_tenant,
)
from scheduler_app.safety.approval import WHAT_RUNS, check_runner_edit
from scheduler_app.safety.gates import before_write
from scheduler_app.safety.permissions import check_owner_present, with_owner_rules
from scheduler_app.safety.routing import check_routing
from scheduler_app.services.fields import (
    DESCRIPTIVE_FIELDS,
    OPERATIONAL_FIELDS,
    NewFields,
    check_create_only,
    descriptive_values,
    operational_values,
    refuse_unknown,
    split_new,
)
from scheduler_app.services.rows import (
    check_version,
    clock_of,
    get_schedule,
    insert,
    locked,
    save_keyed,
    snapshot,
)
from scheduler_app.timing import (
    TICK,
    Timing,
    first_slot_from,
    next_after,
)

logger = logging.getLogger("scheduler_app.services")


def create_schedule(
    *,
    definition: Definition | None = None,
    clock: Clock | None = None,
    user: Any = None,
    reason: str = "",
    **fields: Any,
) -> Schedule:
    """Validate and store a new schedule (version 1); ``next_run_at`` is its first slot >= now.

    Required: ``task``, ``kind`` (cron|rrule|interval|once), ``rule``, or instead of the
    timing fields ``text`` (an English phrase, see ``scheduler_app.authoring``). See
    docs/api.md for the rest. Or the definition already parsed: ``definition=`` (built by
    ``parse_definition``), with only the fields that are not part of it. ``user`` is the
    person creating it: the owner defaults to them, and only a user allowed to assign owners
    may name another. Raises ``ScheduleValidationError`` and stores nothing when anything is
    wrong. Everything is validated before a transaction opens.
    """
    now = clock_of(clock).now()
    authorize(user, ADD)
    if definition is not None:
        definition = stored_as_parsed(definition)
        fields = {**_beside(definition, fields), **definition.columns}
    new = split_new(fields)
    descriptive = _admitted(new, user)
    definition = definition or parse_definition(new.definition, now=now)
    values = definition.columns
    tenant = str(descriptive.get("tenant") or "")
    check_routing(values.get("options"), tenant)
    check_event_route(values["task"], values.get("options"), tenant)
    first = first_slot_from(definition.timing, now)
    with transaction.atomic():
        schedule = Schedule(
            **values,
            target=target_of(values["task"]),  # where it is registered: Celery or django.tasks
            **descriptive,
            **new.operational,
            **new.create_only,
            next_run_at=first,
            created_at=now,
            updated_at=now,
        )
        before_write(schedule, creating=True, now=now)
        insert(schedule)
        snapshot(schedule, now)
        audit.record(schedule, AuditAction.CREATED, user, now, reason=reason)
    logger.info(
        "schedule created", extra={"action": "schedule.created", "schedule_id": str(schedule.id)}
    )
    return schedule


def _admitted(new: NewFields, user: Any) -> dict[str, Any]:
    """Whether ``user`` may create ``new``, checked before its definition is parsed (a refused
    create costs no rule evaluation): the tenant, the create-only fields, the owner and the
    runner's rights, then the descriptive limits. Returns the descriptive fields with the
    owner's rules applied (the owner defaults to the person creating it)."""
    check_tenant(user, new.descriptive.get("tenant"))
    check_create_only(new, user)
    descriptive = with_owner_rules(new.descriptive, user, current=None)
    owner = descriptive.get("owner")
    check_owner_present(owner, str(new.create_only.get("origin") or "api"))
    # A schedule made for another owner runs its task with that owner's rights: as for an
    # edit, that takes run_schedule.
    check_runner_edit(user, [name for name in WHAT_RUNS if new.definition.get(name)], owner)
    check_descriptive(descriptive)
    return descriptive


def _beside(definition: Definition, fields: dict[str, Any]) -> dict[str, Any]:
    """The fields given beside a parsed ``definition``: none of them may be part of it."""
    twice = sorted(set(fields) & {*SEMANTIC_FIELDS, "text"})
    if twice:
        raise ScheduleValidationError(
            twice[0],
            f"{twice[0]} is part of the definition given; pass it once, in the definition",
            code="given_twice",
        )
    return fields


def update_schedule(
    schedule_id: UUID | str,
    *,
    expected_version: int,
    definition: Definition | None = None,
    clock: Clock | None = None,
    user: Any = None,
    reason: str = "",
    **changes: Any,
) -> Schedule:
    """Apply ``changes``; any change (definition, name, tenant, owner) makes a new version, and
    a change of the definition recomputes ``next_run_at``.

    ``expected_version`` is the version the caller edited: if someone changed the schedule
    since, ``StaleVersion`` is raised and nothing is written. ``user`` is the person editing:
    only a user allowed to assign owners may change the owner. The new definition is
    validated before the transaction opens (no lock is held while a rule is evaluated).
    ``definition=`` (built by ``parse_definition``) is the whole new definition, already
    checked: the fields that differ from the stored ones are the change, and only the fields
    that are not part of a definition may be given beside it.
    """
    now = clock_of(clock).now()
    if definition is not None:
        definition = stored_as_parsed(definition)
        changes = {**_beside(definition, changes), **definition.columns}
    refuse_unknown(changes, (*SEMANTIC_FIELDS, *DESCRIPTIVE_FIELDS, *OPERATIONAL_FIELDS))
    before = get_schedule(schedule_id, user)
    edit = _checked_edit(before, changes, definition, expected_version, user, now)
    with transaction.atomic():
        schedule = locked(schedule_id)
        # The same version as validated: nothing it depends on changed in between.
        check_version(schedule, expected_version)
        if schedule.status == ScheduleStatus.CANCELLED:
            raise ScheduleStateError(f"schedule {schedule.id} is cancelled; create a new one")
        due_rows: list[Occurrence] = _flush_due(schedule, now) if edit.semantic else []
        _apply_edit(schedule, edit, now)
        if edit.changed:
            audit.record(
                schedule, AuditAction.EDITED, user, now, reason=reason, fields=edit.changed
            )
        insert_occurrences(due_rows)
    return schedule


@dataclass(frozen=True)
class _Edit:
    """An edit as checked: the values that differ from the stored ones, by kind."""

    semantic: dict[str, Any]
    descriptive: dict[str, Any]
    operational: dict[str, Any]
    timing: Timing | None
    """The new timing, when the definition changed."""
    first: datetime | None
    """The first slot from now under the new timing."""

    @property
    def changed(self) -> list[str]:
        return sorted({**self.semantic, **self.descriptive, **self.operational})


def _checked_edit(
    before: Schedule,
    changes: dict[str, Any],
    definition: Definition | None,
    expected_version: int,
    user: Any,
    now: datetime,
) -> _Edit:
    """Every check of an edit, before any lock: rights, tenant, version, owner, limits, then
    the definition (parsed here unless ``definition`` was), routing and the first slot."""
    authorize(user, CHANGE, before)
    if "tenant" in changes:
        check_tenant(user, changes["tenant"])
    check_version(before, expected_version)
    changes = with_owner_rules(changes, user, current=before)
    if "owner" in changes:
        check_owner_present(changes["owner"], before.origin)
    check_descriptive(changes)
    current = before.stored_definition()
    if definition is None:
        values = canonical_fields(changes, now=now, current=current)
    else:
        values = definition.columns
    semantic = {k: v for k, v in values.items() if v != current[k]}
    # Nobody runs their task or arguments, or the owner's task more often, with another
    # person's rights by editing: refused before the rule is evaluated (review 9: an edit
    # that is refused cost the validation first).
    owner = changes.get("owner", before.owner)
    owner_changed = "owner" in changes and changes["owner"] != before.owner
    tenant = str(changes.get("tenant", before.tenant) or "")
    moved = ["tenant"] if tenant != (before.tenant or "") else []
    check_runner_edit(user, [*semantic, *moved], owner, owner_changed=owner_changed)
    timing = None
    if semantic:
        timing = validate_definition(values) if definition is None else definition.timing
    check_routing(values.get("options"), tenant)
    check_event_route(values["task"], values.get("options"), tenant)
    first = first_slot_from(timing, now, required=False) if timing is not None else None
    if first is not None and finished(before, now):  # it would run again
        check_runner_edit(user, (), owner, restarts=True)
    descriptive = {
        k: v for k, v in descriptive_values(changes).items() if _differs(getattr(before, k), v)
    }
    operational = {k: v for k, v in operational_values(changes).items() if getattr(before, k) != v}
    return _Edit(semantic, descriptive, operational, timing, first)


def _apply_edit(schedule: Schedule, edit: _Edit, now: datetime) -> None:
    """Write a checked edit to the locked row: a new version when the definition or a
    descriptive field changed, the next slot anew when the timing did."""
    for name, value in {**edit.semantic, **edit.descriptive, **edit.operational}.items():
        setattr(schedule, name, value)
    if "task" in edit.semantic:
        schedule.target = target_of(schedule.task)
    if edit.semantic or edit.descriptive:
        schedule.version += 1
    if edit.timing is not None:
        _restart_at(schedule, edit.first)
    schedule.updated_at = now
    before_write(schedule, creating=False, now=now)
    save_keyed(schedule)
    if edit.semantic or edit.descriptive:
        snapshot(schedule, now)


def _differs(old: Any, new: Any) -> bool:
    """Compare a stored descriptive value with a requested one (an owner by primary key)."""
    return getattr(old, "pk", old) != getattr(new, "pk", new)


def _flush_due(schedule: Schedule, now: datetime) -> list[Occurrence]:
    """Slots already due under the current version are materialized with it before an edit:
    the restart from ``now`` must not drop them silently (a tick could have run first)."""
    if (
        schedule.status != ScheduleStatus.ACTIVE
        or schedule.next_run_at is None
        or schedule.next_run_at > now
    ):
        return []
    rows = plan_schedule(schedule, now)
    apply_overlap([schedule], {schedule.id: rows}, now)
    # Completion (or parking) under the old definition is moot: ``_restart`` decides anew.
    schedule.status = ScheduleStatus.ACTIVE
    return rows


def restart(schedule: Schedule, timing: Timing, now: datetime) -> None:
    """Recompute the next slot from now under a new definition."""
    _restart_at(schedule, next_after(timing, now - TICK))


def finished(schedule: Schedule, now: datetime) -> bool:
    """Whether ``schedule``'s stored definition would run no more: completed, or paused with
    no slot after ``now`` (a one-time run whose time passed). New timing makes it run again.
    A definition that cannot be evaluated counts as finished."""
    if schedule.status == ScheduleStatus.COMPLETED:
        return True
    if schedule.status != ScheduleStatus.PAUSED:
        return False
    try:
        return next_after(timing_for(schedule), now) is None
    except (SchedulerError, ValueError):
        return True


def _restart_at(schedule: Schedule, first: datetime | None) -> None:
    schedule.next_run_at = first
    schedule.last_error = ""
    if schedule.next_run_at is None:
        schedule.status = ScheduleStatus.COMPLETED
    elif schedule.status == ScheduleStatus.COMPLETED:
        schedule.status = ScheduleStatus.ACTIVE
