"""The specification's example with one field replaced by garbage: the import either
succeeds or refuses with readable, located problems, and a refused file writes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from scheduler_app.clock import FakeClock
from scheduler_app.contract import ContractError, import_text
from scheduler_app.models import Schedule, ScheduleVersion
from tests.integration.support import START

pytestmark = pytest.mark.django_db
EXAMPLE = json.loads(
    (Path(__file__).parent / "contract_fixtures" / "spec_example.json").read_text()
)
PATHS = [
    ("schedule_id",),
    ("uuid",),
    ("key",),
    ("owner_ref",),
    ("origin",),
    ("misfire",),
    ("max_lateness_s",),
    ("status",),
    ("version",),
    ("next_run_at",),
    ("target",),
    ("target", "type"),
    ("target", "job_type"),
    ("target", "payload_ref"),
    ("target", "options"),
    ("target", "kwargs"),
    ("timing", "kind"),
    ("timing", "active_window"),
    ("timing", "window_policy"),
    ("policies",),
]
GARBAGE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
    | st.sampled_from(
        ["\x00", "\ud800", "user://", "user://user://alice", "RECURRENCE", "real_time", "JOB"]
    ),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


@contextmanager
def rolled_back() -> Iterator[None]:
    with transaction.atomic():
        yield
        transaction.set_rollback(True)


@pytest.fixture
def world(settings: Any) -> None:
    settings.SCHEDULER_JOB_TYPES = {"source.sync": "demo.ping"}
    get_user_model().objects.create_user("alice")


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(path=st.sampled_from(PATHS), value=GARBAGE)
@example(path=("timing", "window_policy"), value=None)  # was stored as NULL (IntegrityError)
@example(path=("policies",), value=None)  # was a TypeError
@example(path=("target", "kwargs"), value={"note": "\x00"})
@example(path=("target", "kwargs"), value={"note": "\ud800"})
@example(path=("schedule_id",), value="\ud800")
@example(path=("key",), value="\ud800")
@example(path=("owner_ref",), value="user://\x00")  # was a DataError on PostgreSQL
@example(path=("owner_ref",), value="\ud800")
def test_one_garbage_field_is_accepted_or_refused_cleanly(
    world: None, path: tuple[str, ...], value: Any
) -> None:
    document = json.loads(json.dumps(EXAMPLE))
    place = document
    for name in path[:-1]:
        place = place[name]
    place[path[-1]] = value
    with rolled_back():
        before = (Schedule.objects.count(), ScheduleVersion.objects.count())
        try:
            import_text(json.dumps(document), clock=FakeClock(START))
        except ContractError as error:
            assert error.problems
            for problem in error.problems:
                text = str(problem)
                assert text and len(text) < 1000 and text.isprintable(), text[:200]
            assert (Schedule.objects.count(), ScheduleVersion.objects.count()) == before
