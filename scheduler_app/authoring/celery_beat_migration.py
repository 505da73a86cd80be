"""The last step of a Celery beat migration: the mapped schedules compared with the database
(``plan_migration``, no writes), then written (``apply_migration``), each entry alone in a
savepoint of its own; a refused one changes nothing stored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from django.db import DataError, IntegrityError, transaction

from scheduler_app.authoring import importing
from scheduler_app.authoring.celery_beat_values import (
    CONTENT_ERRORS,
    Mapping,
    log_refused,
    one_line,
    unreadable,
)
from scheduler_app.authoring.importing import Change, Desired, Plan
from scheduler_app.clock import Clock
from scheduler_app.errors import SchedulerError

APPLY_ERRORS: tuple[type[Exception], ...] = (
    SchedulerError,
    IntegrityError,
    DataError,
    *CONTENT_ERRORS,
)
"""What writing one entry can raise and leave the others to go on (in its own savepoint)."""


@dataclass(frozen=True)
class MigrationPlan:
    """The mappings, the changes they make, and every entry that will not be imported."""

    mappings: tuple[Mapping, ...]
    plan: Plan
    refused: dict[str, str]

    def change_for(self, label: str) -> Change | None:
        return next((c for c in self.plan.changes if c.desired.label == label), None)


def plan_migration(
    mappings: Iterable[Mapping], now: datetime, *, mode: str | None = None
) -> MigrationPlan:
    """Compare the mapped schedules with the database (no writes).

    ``mode`` (live/shadow) is applied when given; otherwise new schedules are live and existing
    ones keep the mode they have (so a re-run does not flip shadow schedules live).
    """
    items = tuple(mappings)
    refused = {m.label: m.refusal for m in items if m.desired is None}
    desired = [_with_mode(m.desired, mode) for m in items if m.desired is not None]
    planned = _plan_each_apart_if_needed(desired, now, refused)
    for problem in planned.problems:
        refused[problem.label] = one_line(f"{problem.path}: {problem.message}")
    return MigrationPlan(items, planned, refused)


def _plan_each_apart_if_needed(
    desired: Sequence[Desired], now: datetime, refused: dict[str, str]
) -> Plan:
    """Plan the batch (a few queries); if one entry makes planning raise rather than report a
    problem, plan each alone to find it, refuse it, and plan the rest together again (the
    duplicate checks need the whole batch)."""
    try:
        return importing.plan(desired, now)
    except CONTENT_ERRORS:
        pass
    sound = []
    for item in desired:
        try:
            importing.plan([item], now)
        except CONTENT_ERRORS as exc:
            _refuse(refused, item.label, unreadable(exc))
        else:
            sound.append(item)
    return importing.plan(sound, now)


def _refuse(refused: dict[str, str], label: str, reason: str) -> None:
    refused[label] = reason
    log_refused("import entry", label, reason)


def _with_mode(desired: Desired, mode: str | None) -> Desired:
    if mode is not None:
        return replace(desired, fields={**desired.fields, "mode": mode})
    return replace(desired, keep_existing=desired.keep_existing | {"mode"})


def apply_migration(
    migration: MigrationPlan,
    *,
    clock: Clock | None = None,
    progress: Callable[[int], None] | None = None,
) -> MigrationPlan:
    """Create or update every mapped schedule; refused ones are left out.

    One transaction, each entry in a savepoint of its own: an entry the services refuse (or
    the database: a key taken meanwhile) is rolled back alone and moves to ``refused`` in the
    returned plan; the others are written. ``progress(n)`` is called as entries are done.
    """
    done: list[Change] = []
    refused = dict(migration.refused)
    with transaction.atomic():
        for change in migration.plan.changes:
            if _apply_one(change, clock, refused):
                done.append(change)
            if progress is not None:
                progress(1)
    carried_out = replace(migration.plan, changes=tuple(done))
    return replace(migration, plan=carried_out, refused=refused)


def _apply_one(change: Change, clock: Clock | None, refused: dict[str, str]) -> bool:
    if change.action == "unchanged":
        return True
    try:
        with transaction.atomic():
            importing.apply([change], clock=clock)
    except APPLY_ERRORS as exc:
        reason = str(exc) if isinstance(exc, SchedulerError) else unreadable(exc)
        _refuse(refused, change.desired.label, one_line(reason))
        return False
    return True
