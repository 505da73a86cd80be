"""The beat's claim of due schedules, and what publishing reads from them without a query.

One statement per batch locks up to ``batch_size`` due schedules (``FOR UPDATE SKIP
LOCKED``: a schedule another beat holds is left to it) and reads, beside each schedule, its
current version row's id and what publishing checks of that version (its task, args and
kwargs against the rows made from the schedule, and its objective). Only the columns a tick
reads are read (``READ_COLUMNS``), and the rows are loaded without ``Model.__init__``
(``db.rows.loaded``). On PostgreSQL the statement compares the
version's task, args and kwargs with the schedule's own and sends back only the objective
when they agree (the usual case); the stored parts come back only when they differ, for the
outbox's check to refuse (``safety.handoff.matches_version``). Sending the parts of every
version and decoding them was a third of the claim's time.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from django.db import connection
from django.db.models import JSONField, Min, OuterRef, Subquery
from django.db.models.expressions import RawSQL

from scheduler_app.db.rows import loaded, new_row, relate
from scheduler_app.definition.schedule import version_id
from scheduler_app.models import (
    SEMANTIC_FIELDS,
    Occurrence,
    Schedule,
    ScheduleRuntime,
    ScheduleStatus,
    ScheduleVersion,
)

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
    """What publishing checks of the claimed schedule's current version.

    On PostgreSQL a small document: ``{"objective": ...}`` (the key only when the version
    has one) when the version's task, args and kwargs are the schedule's, as the same JSON
    text (a key the version lacks is not compared; empty args are ``[]``, as
    ``matches_version`` reads a row made from the schedule; args that are no array or object
    are never taken as agreeing), else ``{"definition": ...}``:
    the version's stored ``VERSION_CHECKED`` parts, or its whole definition when that is no
    object, for ``matches_version`` to decide (it lets ``1.0`` stand for ``1``, as ever).
    Elsewhere the whole stored definition. None when the version row is missing."""
    if connection.vendor != "postgresql":
        return Subquery(_CURRENT.values("definition")[:1], output_field=JSONField())
    table = ScheduleVersion._meta.db_table
    s = f'"{Schedule._meta.db_table}"'
    keys = ", ".join(f"'{key}'" for key in VERSION_CHECKED)
    falsy = "'null', '[]', '{}', '0', '\"\"', 'false'"  # what ``row.args or []`` makes []
    return RawSQL(
        "(SELECT CASE WHEN jsonb_typeof(cv.definition) = 'object'"
        # Compared as text: the same text decodes to the same Python values, where jsonb's
        # own equality holds 1 and 1.0 (or a large integer and the float near it) equal.
        f" AND (NOT cv.definition ? 'task' OR (cv.definition -> 'task')::text ="
        f" to_jsonb({s}.task)::text)"
        # Args that are no array or object are left to Python: jsonb holds 1e-400 exactly,
        # where Python reads 0.0, which ``row.args or []`` makes [] (review 17).
        " AND (NOT cv.definition ? 'args' OR (cv.definition -> 'args')::text ="
        f" (CASE WHEN {s}.args IS NULL OR {s}.args IN ({falsy}) THEN '[]'::jsonb"
        f" WHEN jsonb_typeof({s}.args) IN ('array', 'object') THEN {s}.args END)::text)"
        " AND (NOT cv.definition ? 'kwargs' OR (cv.definition -> 'kwargs')::text ="
        f" coalesce({s}.kwargs, 'null'::jsonb)::text)"
        " THEN CASE WHEN cv.definition ? 'objective'"
        " THEN jsonb_build_object('objective', cv.definition -> 'objective') ELSE '{}' END"
        # A definition that is no object (written past the services) is sent whole: the
        # version check refuses it, where jsonb_each of it would fail the whole claim (and
        # every schedule's tick with it).
        " ELSE jsonb_build_object('definition', CASE WHEN jsonb_typeof(cv.definition) ="
        " 'object' THEN (SELECT jsonb_object_agg(e.key, e.value) FROM"
        f" jsonb_each(cv.definition) AS e WHERE e.key IN ({keys})) ELSE cv.definition END)"
        f' END FROM "{table}" AS cv WHERE cv.schedule_id = {s}.id AND cv.version = {s}.version)',
        [],
        output_field=JSONField(),
    )


UNREAD_DEFINITION = (
    "objective",
    "on_pause",
    "max_attempts",
    "retry_delay",
    "cancel_grace",
    "expected_every",
    "job_type",
    "payload_ref",
    "pause_after_failures",
    "archive_on_completion",
    "ping_url",
)
"""The parts of a schedule's definition that a tick never reads of the schedule row: the
message's objective is its version's; retries, cancelling, pings, monitors and archiving are
the worker's, reconcile's and the monitor's (they read the row themselves)."""

READ_COLUMNS = (
    "id",
    "runtime_ptr_id",  # the schedule table's id: the link to its runtime row, always read
    "version",
    "status",
    "next_run_at",
    "last_scheduled_for",
    "missed_count",
    "skipped_count",
    "caught_up_count",
    "occurrence_count",
    "last_error",
    "target",
    "tenant",
    "approved_version",
    "name",
    "key",
    *(name for name in SEMANTIC_FIELDS if name not in UNREAD_DEFINITION),
)
"""The columns of a claimed schedule that a tick reads (when it is due and what the advance
writes, where its rows go, its definition but ``UNREAD_DEFINITION``), and its name and key
(what ``str(schedule)`` reads: a project's ``occurrence_finished`` receiver naming the
schedule of a row the screen refused); the claim reads no other. A schedule has 71 columns,
and decoding the 29 left out (notes, health, approval history, timestamps: a time-zone-aware
timestamp alone costs about 3 µs of Python) was a tenth of the claim's time. A column left
out costs a query per row when read (``test_claim_columns.py`` fails then); a field added to
the definition is read unless named in ``UNREAD_DEFINITION``."""


def claim_due(now: datetime, batch_size: int) -> list[Schedule]:
    """Lock and read up to ``batch_size`` active schedules due at ``now``, in due order, each
    with ``current_version_id`` and ``current_definition`` (see the module's docstring);
    only ``READ_COLUMNS`` read."""
    return loaded(
        Schedule.objects.select_for_update(skip_locked=True)
        .filter(status=ScheduleStatus.ACTIVE, next_run_at__lte=now)
        .only(*READ_COLUMNS)
        .annotate(current_version_id=_CURRENT_VERSION, current_definition=_current_definition())
        .order_by("next_run_at")[:batch_size]
    )


def version_of(schedule: Schedule) -> UUID:
    """The id of ``schedule``'s current version row: as the claim read it, else derived."""
    found: UUID | None = getattr(schedule, "current_version_id", None)
    return found if found is not None else version_id(schedule.id, schedule.version)


def earliest_due() -> datetime | None:
    """The earliest ``next_run_at`` of an active schedule (one indexed query of the runtime
    table alone: the same over the join with the schedule table reads every row)."""
    result = ScheduleRuntime.objects.filter(status=ScheduleStatus.ACTIVE).aggregate(
        Min("next_run_at")
    )
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
    postgresql = connection.vendor == "postgresql"
    for row in rows:
        schedule = by_id[row.schedule_id]
        relate(row, "schedule", schedule)
        version = versions.get(row.schedule_version_id)
        if version is None:
            definition = _checked_parts(schedule, postgresql)
            version = new_row(
                ScheduleVersion,
                id=row.schedule_version_id,
                schedule_id=schedule.id,
                version=schedule.version,
                definition=definition,
            )
            versions[row.schedule_version_id] = version
        relate(row, "schedule_version", version)


def _checked_parts(schedule: Schedule, postgresql: bool) -> Any:
    """The attached version's definition, as far as publishing reads it: its objective (none
    when the version has none: the message then says ``""``, as it does for a row read back
    from the outbox and as the worker's context does), and the stored task, args and kwargs
    unless the claim found them equal to the schedule's (the rows are made from the locked
    schedule, so the outbox's check of them would pass)."""
    claimed = getattr(schedule, "current_definition", None) or {}
    stored = claimed.get("definition", claimed) if postgresql else claimed
    if stored is None:  # JSON null: a definition without any of the keys, as ever
        stored = {}
    if not isinstance(stored, dict):
        return stored  # no object: ``matches_version`` refuses it
    return {key: stored[key] for key in VERSION_CHECKED if key in stored}
