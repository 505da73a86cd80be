"""The beat's claim of due schedules, and what publishing reads from them without a query.

One statement per batch locks up to ``batch_size`` due schedules (``FOR UPDATE SKIP
LOCKED``: a schedule another beat holds is left to it) and reads, beside each schedule, its
current version row's id and the parts of that version publishing checks (task, args,
kwargs, objective). The rows are loaded without ``Model.__init__`` (``db.rows.loaded``), and
on PostgreSQL only those four parts of the stored definition are sent back, not the whole
document (decoding every version's full definition was a quarter of the claim).
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from django.db import connection
from django.db.models import JSONField, Min, OuterRef, Subquery
from django.db.models.expressions import RawSQL

from scheduler_app.db.rows import loaded, new_row, relate
from scheduler_app.definition.schedule import version_id
from scheduler_app.models import Occurrence, Schedule, ScheduleStatus, ScheduleVersion

VERSION_CHECKED = ("task", "args", "kwargs", "objective")
"""The parts of a version's definition that publishing reads (``handoff.matches_version``,
the message's objective)."""

_CURRENT = ScheduleVersion.objects.filter(
    schedule_id=OuterRef("pk"), version=OuterRef("version")
).order_by()

_CURRENT_VERSION = Subquery(_CURRENT.values("pk")[:1])
"""The claimed schedule's current version row id, read by the claim itself (the unique
``(schedule, version)`` index): None when the row is missing."""


def _current_definition() -> Subquery | RawSQL:
    """The checked parts of that version's stored definition: what the outbox checks each new
    row against (task, args, kwargs), as it does for rows it reads back from the ledger. On
    PostgreSQL only the keys the definition has among ``VERSION_CHECKED`` (a key it lacks
    stays absent, as in the stored document); elsewhere the whole definition."""
    if connection.vendor != "postgresql":
        return Subquery(_CURRENT.values("definition")[:1], output_field=JSONField())
    table = ScheduleVersion._meta.db_table
    schedules = Schedule._meta.db_table
    keys = ", ".join(f"'{key}'" for key in VERSION_CHECKED)
    return RawSQL(
        # A definition that is no object (written past the services) is read whole: the
        # version check refuses it, where jsonb_each of it would fail the whole claim (and
        # every schedule's tick with it).
        f"(SELECT CASE WHEN jsonb_typeof(cv.definition) = 'object' THEN"
        f" (SELECT jsonb_object_agg(e.key, e.value) FROM jsonb_each(cv.definition) AS e"
        f" WHERE e.key IN ({keys})) ELSE cv.definition END"
        f' FROM "{table}" AS cv'
        f' WHERE cv.schedule_id = "{schedules}".id AND cv.version = "{schedules}".version)',
        [],
        output_field=JSONField(),
    )


def claim_due(now: datetime, batch_size: int) -> list[Schedule]:
    """Lock and read up to ``batch_size`` active schedules due at ``now``, in due order, each
    with ``current_version_id`` and ``current_definition`` (see the module's docstring)."""
    return loaded(
        Schedule.objects.select_for_update(skip_locked=True)
        .filter(status=ScheduleStatus.ACTIVE, next_run_at__lte=now)
        .annotate(current_version_id=_CURRENT_VERSION, current_definition=_current_definition())
        .order_by("next_run_at")[:batch_size]
    )


def version_of(schedule: Schedule) -> UUID:
    """The id of ``schedule``'s current version row: as the claim read it, else derived."""
    found: UUID | None = getattr(schedule, "current_version_id", None)
    return found if found is not None else version_id(schedule.id, schedule.version)


def earliest_due() -> datetime | None:
    """The earliest ``next_run_at`` of an active schedule (one indexed query)."""
    result = Schedule.objects.filter(status=ScheduleStatus.ACTIVE).aggregate(Min("next_run_at"))
    value: datetime | None = result["next_run_at__min"]
    return value


def attach(rows: list[Occurrence], schedules: list[Schedule]) -> None:
    """Give each row what publishing reads from its relations, without a query: the
    (locked) schedule, and its current version as the claim read it (number, and the stored
    task, args, kwargs and objective). The outbox checks the row against that stored version,
    so a schedule whose task or payload was changed past the services is refused here, in
    the tick that made the row, as it is for a row read back from the outbox."""
    by_id = {schedule.id: schedule for schedule in schedules}
    versions: dict[UUID, ScheduleVersion] = {}
    for row in rows:
        schedule = by_id[row.schedule_id]
        relate(row, "schedule", schedule)
        version = versions.get(row.schedule_version_id)
        if version is None:
            stored = getattr(schedule, "current_definition", None) or {}
            definition = stored  # no object: ``matches_version`` refuses it
            if isinstance(stored, dict):
                definition = {key: stored[key] for key in VERSION_CHECKED if key in stored}
                definition.setdefault("objective", schedule.objective)
            version = new_row(
                ScheduleVersion,
                id=row.schedule_version_id,
                schedule_id=schedule.id,
                version=schedule.version,
                definition=definition,
            )
            versions[row.schedule_version_id] = version
        relate(row, "schedule_version", version)
