"""A schedule's runtime: what the beat and the worker update, in a narrow table of its own.

``Schedule`` inherits from ``ScheduleRuntime`` (multi-table inheritance): one schedule is a row
of each table with the same id, and the ORM reads and writes both as one object
(``schedule.next_run_at``, ``filter(next_run_at__lte=...)``). What a person defines stays in the
wide schedule table; the beat's advance (``dispatch.bulk.ADVANCE_FIELDS``) writes only this one,
whose rows are a fifth as wide, and the due scan and the earliest-due probe read only this one.

``status`` lives here because the advance completes a schedule and the due index is partial on
it; ``interval_mode`` because the check ``sched_active_has_next_run`` reads it beside
``next_run_at`` and ``status`` (a check constraint sees one row of one table).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, cast

from django.db import connections, models, transaction
from django.db.models import Q, QuerySet

from scheduler_app.models.choices import IntervalMode, ScheduleStatus


class ScheduleRuntime(models.Model):
    """The part of a schedule the engine updates: next run, last slot, counters, last error."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    status = models.CharField(
        max_length=20, choices=ScheduleStatus.choices, default=ScheduleStatus.ACTIVE
    )
    interval_mode = models.CharField(
        max_length=12, choices=IntervalMode.choices, default=IntervalMode.FIXED_RATE
    )
    next_run_at = models.DateTimeField(null=True, blank=True)
    last_scheduled_for = models.DateTimeField(
        null=True, blank=True, help_text="The last slot handled (run or skipped)."
    )
    missed_count = models.PositiveBigIntegerField(default=0)
    skipped_count = models.PositiveBigIntegerField(default=0)
    caught_up_count = models.PositiveBigIntegerField(default=0)
    occurrence_count = models.PositiveBigIntegerField(default=0)
    last_error = models.TextField(blank=True, default="")
    updated_at = models.DateTimeField()

    class Meta:
        db_table = "scheduler_app_schedule_runtime"
        indexes = [
            models.Index(
                fields=["next_run_at"],
                name="sched_due_idx",
                condition=Q(status="active"),
            ),
            # The admin's list ordered by next run.
            models.Index(fields=["next_run_at"], name="sched_next_run_idx"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=~Q(status="active")
                | Q(next_run_at__isnull=False)
                | Q(interval_mode="fixed_delay"),
                name="sched_active_has_next_run",
            ),
        ]

    def __str__(self) -> str:
        return f"runtime of {self.pk}"


class ScheduleQuerySet(QuerySet[Any, Any]):
    """``Schedule.objects``: an ``update()`` that sets a runtime field is made under row locks.

    Django splits an update of a child model that sets a parent's field: it selects the
    matching ids (no lock), then updates each table by id, so the filter (a compare-and-set on
    ``status``...) is no longer checked when the rows are written. Here the rows are locked
    first (both tables: ``FOR UPDATE`` of the join, which PostgreSQL checks again against a
    row changed meanwhile), and the update by id runs under that lock, in one transaction.
    So does an update of definition fields whose filter reads a runtime field; any other
    update of definition fields alone is Django's one statement."""

    def update(self, **kwargs: Any) -> int:
        if RUNTIME_FIELDS.isdisjoint(kwargs) and not self._filters_runtime():
            return super().update(**kwargs)
        with transaction.atomic(using=self.db):
            # The schedule's two tables alone (``of``): a filter over a nullable join (the
            # owner...) makes an outer join, whose nullable side PostgreSQL refuses to lock,
            # and no other table joined is this update's to lock. Django names the parent's
            # table in ``OF`` only when a column of it is selected, so ``status`` is read
            # beside the id (with the id alone, ``OF`` names the schedule table, and a
            # concurrent change of the runtime row is not waited for).
            locking = (
                self.select_for_update(of=("self", "runtime_ptr"))
                if connections[self.db].features.has_select_for_update_of
                else self.select_for_update()
            )
            ids = [pk for pk, _ in locking.order_by().values_list("pk", "status")]
            if not ids:
                return 0
            by_id: QuerySet[Any, Any] = QuerySet(self.model, using=self.db)
            return by_id.filter(pk__in=ids).update(**kwargs)

    update.alters_data = True  # type: ignore[attr-defined]

    def _filters_runtime(self) -> bool:
        """Whether the filter reads the runtime table (``status=...``): Django's one statement
        then updates the schedule table by ``id IN (SELECT ... JOIN runtime ...)``, which
        neither locks the runtime row nor waits for a transaction changing it."""
        table = ScheduleRuntime._meta.db_table
        query = self.query
        # A join the filter does not use stays in the map with no reference (``pk=`` sets
        # one up through the parent link and trims it).
        return any(
            join.table_name == table and query.alias_refcount.get(alias, 0) > 0
            for alias, join in query.alias_map.items()
        )


RUNTIME_FIELDS = frozenset(
    field.name for field in ScheduleRuntime._meta.concrete_fields if not field.primary_key
)
"""The fields a ``Schedule`` keeps in its runtime row."""


def bulk_create_schedules(schedules: Sequence[Any], batch_size: int = 1000) -> None:
    """Insert many new schedules at once, each a row of both tables (Django's ``bulk_create``
    refuses a model with a parent table): the runtime rows, then the definition rows, in one
    transaction. No signal is sent and no version made, as with ``bulk_create`` (fixtures,
    benchmarks)."""
    runtime_fields = ScheduleRuntime._meta.concrete_fields
    for schedule in schedules:
        schedule.runtime_ptr_id = schedule.id
    with transaction.atomic():
        ScheduleRuntime.objects.bulk_create(
            [
                ScheduleRuntime(**{f.attname: getattr(row, f.attname) for f in runtime_fields})
                for row in schedules
            ],
            batch_size=batch_size,
        )
        if schedules:
            model = type(schedules[0])
            # What ``bulk_create`` does for a model without a parent, for the child's columns.
            queryset = cast(Any, model.objects.all())
            queryset._batched_insert(list(schedules), model._meta.local_concrete_fields, batch_size)
            # Stored rows now, as ``bulk_create`` leaves them: a later ``save()`` updates them
            # (one still "adding" would be inserted again, its id having a default).
            for schedule in schedules:
                schedule._state.adding = False
                schedule._state.db = queryset.db
