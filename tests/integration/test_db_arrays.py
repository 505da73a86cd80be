"""``AnyOf``: a batch's ids as one parameter on PostgreSQL, Django's ``IN`` elsewhere."""

from __future__ import annotations

import uuid

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models import F, Q
from django.test.utils import CaptureQueriesContext

from scheduler_app.clock import FakeClock
from scheduler_app.db.arrays import AnyOf
from scheduler_app.models import Schedule
from tests.integration.support import START, schedule

pytestmark = pytest.mark.django_db


def test_it_finds_the_rows_whose_id_is_one_of_the_ids_and_no_other() -> None:
    clock = FakeClock(START)
    made = [schedule(clock, kind="interval", rule="60") for _ in range(3)]
    wanted = [made[0].id, str(made[2].id).upper(), uuid.uuid4()]  # any spelling of a UUID
    found = set(Schedule.objects.filter(AnyOf(F("pk"), wanted)).values_list("pk", flat=True))
    assert found == {made[0].id, made[2].id}


def test_no_ids_match_nothing() -> None:
    schedule(FakeClock(START), kind="interval", rule="60")
    assert not Schedule.objects.filter(AnyOf(F("pk"), [])).exists()


def test_on_postgresql_the_ids_are_one_parameter() -> None:
    clock = FakeClock(START)
    ids = [schedule(clock, kind="interval", rule="60").id for _ in range(2)]
    ids += [uuid.uuid4() for _ in range(98)]
    with CaptureQueriesContext(connection) as queries:
        assert Schedule.objects.filter(AnyOf(F("pk"), ids)).count() == 2
    sql = queries.captured_queries[0]["sql"]
    if connection.vendor == "postgresql":
        assert "= ANY(string_to_array(" in sql
        assert sql.count(str(ids[-1])) == 1 and " IN (" not in sql
    else:
        assert " IN (" in sql


def test_inside_a_subquery_an_or_and_an_exclude_it_names_its_own_table() -> None:
    clock = FakeClock(START)
    made = [schedule(clock, kind="interval", rule="60") for _ in range(3)]
    inner = Schedule.objects.filter(AnyOf(F("pk"), [made[0].id, made[1].id]))
    outer = Schedule.objects.filter(pk__in=inner.values("pk")).filter(
        Q(AnyOf(F("pk"), [made[1].id, made[2].id])) | Q(pk=made[0].id)
    )
    assert set(outer.values_list("pk", flat=True)) == {made[0].id, made[1].id}
    left = Schedule.objects.exclude(AnyOf(F("pk"), [made[0].id]))
    assert set(left.values_list("pk", flat=True)) == {made[1].id, made[2].id}
    assert Schedule.objects.filter(AnyOf(F("pk"), [made[0].id] * 3)).count() == 1


def test_ids_given_as_a_generator_are_read_once_and_kept() -> None:
    clock = FakeClock(START)
    made = [schedule(clock, kind="interval", rule="60") for _ in range(2)]
    query = Schedule.objects.filter(AnyOf(F("pk"), (row.id for row in made)))
    assert query.count() == 2
    assert query.count() == 2  # compiled again: the ids are still there


def test_none_matches_nothing_as_with_in() -> None:
    made = schedule(FakeClock(START), kind="interval", rule="60")
    assert Schedule.objects.filter(AnyOf(F("pk"), [None, made.id])).count() == 1
    assert Schedule.objects.filter(AnyOf(F("pk"), [None])).count() == 0


def test_a_number_column_is_compared_as_numbers() -> None:
    made = schedule(FakeClock(START), kind="interval", rule="60")
    assert Schedule.objects.filter(AnyOf(F("version"), [made.version, 99])).count() == 1


def test_text_that_is_no_id_is_refused_on_both_databases() -> None:
    """Two ids joined by a comma would be split into two on PostgreSQL: refused instead, as
    Django's ``IN`` refuses a malformed UUID."""
    clock = FakeClock(START)
    made = [schedule(clock, kind="interval", rule="60") for _ in range(2)]
    with pytest.raises(ValidationError):
        Schedule.objects.filter(AnyOf(F("pk"), [f"{made[0].id},{made[1].id}"])).count()
