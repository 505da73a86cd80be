"""``AnyOf``: a batch's ids as one parameter on PostgreSQL, Django's ``IN`` elsewhere."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.db.models import F
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
