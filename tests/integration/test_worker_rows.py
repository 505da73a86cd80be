"""``worker.rows.build`` makes the instance the ORM reads, without ``Model.__init__`` (issue 39:
the worker's Python per delivery): every field converted as the ORM converts it, an instance
Django treats as loaded from its database, ``pre_init``/``post_init`` receivers still called;
and the claim's and the outcome's rows on PostgreSQL are the rows the ORM reads."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.db.models import Model, signals

from scheduler_app.clock import FakeClock
from scheduler_app.models import (
    Occurrence,
    OccurrenceState,
    Schedule,
    ScheduleVersion,
)
from scheduler_app.worker import claiming
from scheduler_app.worker import sql as worker_sql
from scheduler_app.worker.rows import build, columns, parents_joined
from tests.integration.support import START
from tests.integration.worker_support import due_one, fetch

pytestmark = pytest.mark.django_db


def read(model: type[Model], pk: Any) -> tuple[Any, ...]:
    """The row of ``model`` with this key, in ``columns`` order, as the driver returns it."""
    table = model._meta.db_table
    key = model._meta.pk.get_db_prep_value(pk, connection)  # type: ignore[union-attr]
    with connection.cursor() as cursor:
        cursor.execute(
            f'SELECT {columns(model, "t")} FROM "{table}" t {parents_joined(model, "t")} '
            "WHERE t.id = %s",
            [key],
        )
        row = cursor.fetchone()
    assert row is not None
    return tuple(row)


def same_fields(built: Model, ordinary: Model) -> None:
    assert type(built) is type(ordinary)
    for field in type(ordinary)._meta.concrete_fields:
        assert getattr(built, field.attname) == getattr(ordinary, field.attname), field.name
    assert (built._state.adding, built._state.db) == (False, ordinary._state.db)
    assert built.get_deferred_fields() == set()


@pytest.fixture
def occurrence() -> Occurrence:
    clock = FakeClock(START)
    return due_one(clock, kwargs={"n": 1, "nested": {"a": [1, 2]}}, args=[3, "x"])


def test_a_built_row_is_the_row_the_orm_reads(occurrence: Occurrence) -> None:
    version = ScheduleVersion.objects.get(pk=occurrence.schedule_version_id)
    for model, pk in (
        (Occurrence, occurrence.pk),
        (Schedule, occurrence.schedule_id),
        (ScheduleVersion, version.pk),
    ):
        built = build(model, read(model, pk))
        same_fields(built, model.objects.get(pk=pk))
    built_occurrence = build(Occurrence, read(Occurrence, occurrence.pk))
    assert built_occurrence.kwargs == {"n": 1, "nested": {"a": [1, 2]}}  # JSON decoded
    assert built_occurrence.args == [3, "x"]
    assert built_occurrence.scheduled_for == occurrence.scheduled_for  # an aware instant


def test_a_built_row_saves_and_reads_its_relations_like_any_other(
    occurrence: Occurrence,
) -> None:
    built = build(Occurrence, read(Occurrence, occurrence.pk))
    assert built.schedule.pk == occurrence.schedule_id  # read on first use
    assert built.schedule_version.version == 1
    built.reason = "changed"
    built.save(update_fields=["reason"])  # an UPDATE: the row exists
    assert Occurrence.objects.get(pk=occurrence.pk).reason == "changed"
    assert Occurrence.objects.count() == 1


@pytest.fixture
def init_receivers() -> Iterator[list[tuple[str, Any]]]:
    seen: list[tuple[str, Any]] = []

    def before(sender: Any, **kwargs: Any) -> None:
        seen.append(("pre_init", sender))

    def after(sender: Any, instance: Any, **kwargs: Any) -> None:
        seen.append(("post_init", instance.kwargs))

    signals.pre_init.connect(before, sender=Occurrence, weak=False)
    signals.post_init.connect(after, sender=Occurrence, weak=False)
    try:
        yield seen
    finally:
        signals.pre_init.disconnect(before, sender=Occurrence)
        signals.post_init.disconnect(after, sender=Occurrence)


def test_init_receivers_still_see_every_built_row(
    occurrence: Occurrence, init_receivers: list[tuple[str, Any]]
) -> None:
    row = read(Occurrence, occurrence.pk)
    init_receivers.clear()
    built = build(Occurrence, row)
    assert init_receivers == [("pre_init", Occurrence), ("post_init", built.kwargs)]
    same_fields(built, Occurrence.objects.get(pk=occurrence.pk))
    init_receivers.clear()
    build(Schedule, read(Schedule, occurrence.schedule_id))  # receivers of another model
    assert init_receivers == []


@pytest.mark.postgres
def test_the_claim_and_the_outcome_read_the_rows_the_orm_reads(occurrence: Occurrence) -> None:
    """The one-statement claim returns the occurrence as it was before it, with its schedule
    and version; the outcome returns the occurrence as it left it and the schedule it locked
    (then moved ``last_success_at`` forward): each field equal to the ORM's read."""
    assert worker_sql.available()
    before = fetch(occurrence)
    now = before.scheduled_for + timedelta(seconds=1)
    claim = claiming.claim(
        before.pk,
        owner="host:1:2",
        now=now,
        lease=timedelta(minutes=5),
        task=before.task,
        scheduled_for=before.scheduled_for,
    )
    assert claim.claimed and claim.occurrence is not None
    same_fields(claim.occurrence, before)
    same_fields(claim.occurrence.schedule, before.schedule)
    same_fields(claim.occurrence.schedule_version, before.schedule_version)
    ended = worker_sql.finish(
        str(before.pk),
        scheduled_for=before.scheduled_for,
        schedule_id=before.schedule_id,
        token=claim.token,
        state=OccurrenceState.SUCCEEDED,
        reason="",
        now=now,
        error="",
    )
    assert ended is not None
    after = Occurrence.objects.get(pk=before.pk)
    assert after.state == OccurrenceState.SUCCEEDED
    same_fields(ended.occurrence, after)
    same_fields(ended.schedule, Schedule.objects.get(pk=before.schedule_id))
    assert ended.occurrence.schedule is ended.schedule
