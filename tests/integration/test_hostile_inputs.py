"""Hostile input to every way in: the contract importer, ``@scheduled``, the services and the
admin forms. The only outcomes are a success or the project's validation error with a readable
message; never an unhandled exception, a 500, or a partially written schedule.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from celery import Celery
from django.contrib.auth.models import User
from django.db import transaction
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from scheduler_app import services
from scheduler_app.authoring.declarations import isolated_registry, scheduled
from scheduler_app.clock import FakeClock
from scheduler_app.contract import ContractError, import_text
from scheduler_app.errors import SchedulerError, ScheduleValidationError
from scheduler_app.models import Occurrence, Schedule, ScheduleVersion
from tests.integration.support import START, TASK, admin_form

pytestmark = pytest.mark.django_db
DB_FUZZ = settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
EDGE_TIMES = [
    "0001-01-01T00:00:00Z",
    "0001-01-01T00:00:00+14:00",
    "1969-12-31T23:59:59Z",
    "1970-01-01T00:00:00Z",
    "9999-12-31T23:59:59-12:00",
    "9999-12-30T00:00:00Z",
    "2026-03-29T02:30:00",
    "not a date",
]
GARBAGE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
    | st.sampled_from(["\x00", "\ud800", "FREQ=SECONDLY", "* * * * *", "-1", "1e309", *EDGE_TIMES]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
RULES = st.sampled_from(
    [("cron", "*/5 * * * *"), ("cron", "0 0 30 2 *"), ("cron", "0 0 29 2 1"),
     ("rrule", "FREQ=SECONDLY;INTERVAL=1"), ("rrule", "FREQ=MINUTELY;BYSECOND=0,1,2"),
     ("rrule", "FREQ=MINUTELY;BYMONTH=2;BYMONTHDAY=30"), ("rrule", "FREQ=DAILY;COUNT=0"),
     ("rrule", "FREQ=MINUTELY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO"), ("rrule", "FREQ=DAILY;COUNT=1"),
     ("interval", "1"), ("interval", "10s"), ("interval", "999999999w"), ("interval", "15m"),
     ("once", "2026-01-05T00:00:00Z"), ("once", "9999-12-31T23:59:59-12:00"),
     ("once", "2030-01-01T09:00:00"), ("bogus", "x")]
)  # fmt: skip


@contextmanager
def rolled_back() -> Iterator[None]:
    """One hypothesis example: the test's database transaction is shared, so undo each one."""
    with transaction.atomic():
        yield
        transaction.set_rollback(True)


def counts() -> tuple[int, int, int]:
    return Schedule.objects.count(), ScheduleVersion.objects.count(), Occurrence.objects.count()


def readable(message: str) -> None:
    assert message and len(message) < 1000, message[:200]
    assert message.isprintable(), message


# -- the schedule.v1 importer ----------------------------------------------------------------


def document(**timing: Any) -> dict[str, Any]:
    return {
        "contract": "schedule.v1",
        "key": "hostile.report",
        "target": {"type": "task", "task": TASK, "kwargs": {"n": 1}},
        "timing": {"kind": "cron", "rule": "0 9 * * *", "timezone": "Europe/Riga", **timing},
        "policies": {"misfire": "catch_up", "max_lateness": 60},
    }


PATHS = [
    ("contract",),
    ("key",),
    ("name",),
    ("schedule_id",),
    ("owner_ref",),
    ("status",),
    ("target",),
    ("target", "task"),
    ("target", "kwargs"),
    ("timing",),
    ("timing", "kind"),
    ("timing", "rule"),
    ("timing", "timezone"),
    ("timing", "anchor"),
    ("timing", "starts_at"),
    ("timing", "ends_at"),
    ("timing", "max_count"),
    ("timing", "dst"),
    ("policies",),
    ("policies", "misfire"),
    ("policies", "jitter"),
    ("policies", "deadline"),
    ("policies", "catch_up_limit"),
]


def broken(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    doc = document()
    target = doc
    for name in path[:-1]:
        target = target[name]
    target[path[-1]] = value
    return doc


def import_outcome(text: str) -> None:
    before = counts()
    try:
        import_text(text, clock=FakeClock(START))
    except ContractError as error:
        assert error.problems
        for problem in error.problems:
            readable(str(problem))
        assert counts() == before, "a refused file wrote something"


@DB_FUZZ
@given(path=st.sampled_from(PATHS), value=GARBAGE, rule=RULES, valid_first=st.booleans())
@example(
    path=("timing", "rule"),
    value="FREQ=MINUTELY;BYMONTH=2;BYMONTHDAY=30",
    rule=("rrule", "FREQ=DAILY"),
    valid_first=True,
)
@example(  # found by hypothesis: year 1 at +00:01 is year 0 in UTC (OverflowError, fixed)
    path=("timing", "anchor"),
    value="0001-01-01000+0001",
    rule=("cron", "*/5 * * * *"),
    valid_first=False,
)
def test_contract_documents_with_one_broken_field(
    path: tuple[str, ...], value: Any, rule: tuple[str, str], valid_first: bool
) -> None:
    kind, text = rule
    docs = [document(kind=kind, rule=text, anchor="2026-01-05T00:00:00Z")]
    docs[0]["key"] = "hostile.rule"
    docs.append(broken(path, value))
    if not valid_first:
        docs.reverse()
    with rolled_back():
        import_outcome(json.dumps(docs))


@DB_FUZZ
@given(payload=GARBAGE)
def test_contract_files_of_random_json(payload: Any) -> None:
    with rolled_back():
        import_outcome(json.dumps(payload))
        import_outcome(json.dumps({"contract": "schedule.v1", "schedules": [payload]}))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\x00",
        "[" * 100_000,  # nested deeper than the JSON parser's recursion limit
        "[" + ",".join([json.dumps(document())] * 2) + "]",  # one key twice
        json.dumps([{**document(), "key": f"k{i}", "name": "x" * 100_000} for i in range(3)]),
        json.dumps([document(rule="FREQ=SECONDLY", kind="rrule")]),
        json.dumps([document(kind="once", rule="0001-01-01T00:00:00+14:00")]),
    ],
)
def test_contract_files_that_are_huge_or_deep(text: str) -> None:
    import_outcome(text)


# -- @scheduled ------------------------------------------------------------------------------

celery_app = Celery("hostile-test", set_as_current=False)


@celery_app.task(name="tests.hostile")
def hostile_task() -> None:
    """Only decorated."""


DECORATOR_VALUES = {
    "cron": st.sampled_from(["*/5 * * * *", "0 0 30 2 *", "\x00", "x" * 5000]) | GARBAGE,
    "rrule": st.sampled_from(["FREQ=SECONDLY", "FREQ=DAILY;COUNT=0", "FREQ=YEARLY;BYYEARDAY=-366"])
    | GARBAGE,
    "every": st.sampled_from(["1s", "15m", "999999999w", timedelta.max, 10**30]) | GARBAGE,
    "at": st.datetimes(timezones=st.sampled_from([UTC, None])) | GARBAGE,
    "anchor": st.datetimes(timezones=st.sampled_from([UTC, None])) | GARBAGE,
    "timezone": st.sampled_from(["Europe/Riga", "EST", "\x00", "a/" * 3000]) | GARBAGE,
    "objective": GARBAGE,
    "key": GARBAGE,
    "kwargs": GARBAGE,
    "starts_at": st.sampled_from([datetime(1, 1, 1, tzinfo=UTC), datetime.max.replace(tzinfo=UTC)])
    | GARBAGE,
    "max_count": GARBAGE,
    "misfire": GARBAGE,
    "jitter": GARBAGE,
    "window": GARBAGE,
}  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(options=st.fixed_dictionaries({}, optional=DECORATOR_VALUES))
def test_the_decorator_accepts_or_refuses_at_decoration_time(options: dict[str, Any]) -> None:
    with isolated_registry() as registry:
        try:
            scheduled(**options)(hostile_task)
        except ScheduleValidationError as error:
            readable(error.message)
            assert len(registry) == 0
            return
        assert len(registry) == 1


# -- services ----------------------------------------------------------------------------------

SERVICE_VALUES = {
    "timezone": st.sampled_from(["UTC", "Europe/Riga", "Mars/Base", "\x00"]) | GARBAGE,
    "anchor": st.sampled_from([datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, tzinfo=UTC)])
    | st.datetimes(timezones=st.sampled_from([UTC, None]))
    | GARBAGE,
    "starts_at": st.datetimes(timezones=st.just(UTC)) | GARBAGE,
    "ends_at": st.datetimes(timezones=st.just(UTC)) | GARBAGE,
    "max_count": GARBAGE,
    "kwargs": GARBAGE,
    "misfire_policy": GARBAGE,
    "jitter": GARBAGE,
    "dst_nonexistent": GARBAGE,
    "active_window": GARBAGE,
    "deadline": GARBAGE,
    "name": st.text(max_size=300),
}


@DB_FUZZ
@given(rule=RULES, extra=st.fixed_dictionaries({}, optional=SERVICE_VALUES))
def test_service_create_and_update(rule: tuple[str, str], extra: dict[str, Any]) -> None:
    with rolled_back():
        create_and_update(rule, extra)


def create_and_update(rule: tuple[str, str], extra: dict[str, Any]) -> None:
    clock = FakeClock(START)
    base = services.create_schedule(
        clock=clock, task=TASK, kind="cron", rule="0 9 * * *", key="hostile.base"
    )
    kind, text = rule
    before = counts()
    try:
        services.create_schedule(clock=clock, task=TASK, kind=kind, rule=text, **extra)
    except ScheduleValidationError as error:
        readable(error.message)
        assert counts() == before
    before = counts()
    try:
        services.update_schedule(
            base.pk, expected_version=1, clock=clock, kind=kind, rule=text, **extra
        )
    except ScheduleValidationError as error:
        readable(error.message)
        assert counts() == before
        base.refresh_from_db()
        assert base.version == 1 and base.rule == "0 9 * * *"


@pytest.mark.parametrize(
    ("kind", "rule", "field", "code"),
    [
        ("rrule", "FREQ=SECONDLY;INTERVAL=1", "rule", "too_frequent"),
        ("rrule", "FREQ=MINUTELY;BYSECOND=0,1,2", "rule", "too_frequent"),
        ("interval", "5", "rule", "too_frequent"),
        ("rrule", "FREQ=MINUTELY;BYMONTH=2;BYMONTHDAY=30", "rrule", "never"),
        ("rrule", "FREQ=DAILY;COUNT=0", "rrule.COUNT", "range"),
        ("once", "9999-12-31T23:59:59-12:00", "at", "range"),
    ],
)
def test_floods_and_impossible_rules_are_refused(
    kind: str, rule: str, field: str, code: str
) -> None:
    with pytest.raises(ScheduleValidationError) as caught:
        services.create_schedule(clock=FakeClock(START), task=TASK, kind=kind, rule=rule)
    assert (caught.value.field, caught.value.code) == (field, code)
    readable(caught.value.message)
    assert counts() == (0, 0, 0)


def test_the_minimum_interval_names_the_setting_and_can_be_lowered(settings: Any) -> None:
    flood = {"task": TASK, "kind": "rrule", "rule": "FREQ=MINUTELY;BYSECOND=0,1,2"}
    with pytest.raises(ScheduleValidationError) as caught:
        services.create_schedule(clock=FakeClock(START), **flood)
    message = caught.value.message
    assert "1s apart" in message and "10s" in message and "SCHEDULER_MIN_INTERVAL" in message
    settings.SCHEDULER_MIN_INTERVAL = 1
    services.create_schedule(clock=FakeClock(START), **flood)
    settings.SCHEDULER_MIN_INTERVAL = 3600
    with pytest.raises(ScheduleValidationError, match="cron expression can fire 300s apart"):
        services.create_schedule(clock=FakeClock(START), task=TASK, kind="cron", rule="*/5 * * * *")


# -- the admin -------------------------------------------------------------------------------

ADD_URL = reverse("admin:scheduler_app_schedule_add")
FORM = admin_form(name="hostile", task=TASK)
# No lone surrogates: they cannot be encoded into a request body (the test client refuses them).
FORM_TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        ["", "-1", "0", "99999999999999999999", "1e309", "NaN", "null", "[]", '{"a": [1, {}]}',
         "\x00", "\x1b[2J", "x" * 20_000, "FREQ=SECONDLY", "FREQ=MINUTELY;BYMONTH=2;BYMONTHDAY=30",
         "0 0 30 2 *", "rrule", "interval", "once", "9999-12-31 23:59:59", "0001-01-01 00:00:00",
         "1969-12-31 23:59:59", "Mars/Base"]
    ),
)  # fmt: skip


@contextmanager
def superuser_client() -> Iterator[Client]:
    # No password: hashing one (PBKDF2) per example would dominate the run time.
    user = User.objects.create(username="admin", is_staff=True, is_superuser=True)
    browser = Client(raise_request_exception=False)
    browser.force_login(user)
    yield browser


def post_outcome(browser: Client, url: str, data: dict[str, Any]) -> int:
    before = counts()
    response = browser.post(url, data)
    assert response.status_code in (200, 302), response.status_code
    if response.status_code == 200:
        assert counts() == before, "a form with errors wrote something"
        # Django's own field errors echo the value ("Select a valid choice. X is not one of
        # the available choices."), HTML-escaped on the page; ours are checked in the unit tests.
        errors = response.context["adminform"].form.errors if response.context else {}
        assert all(messages for messages in errors.values())
    return int(response.status_code)


@DB_FUZZ
@given(changes=st.dictionaries(st.sampled_from(sorted(FORM)), FORM_TEXT, max_size=4))
@example(changes={"kind": "rrule", "rule": "FREQ=SECONDLY"})
@example(changes={"kind": "once", "rule": "9999-12-31T23:59:59-12:00"})
@example(changes={"starts_at_0": "9999-12-31", "starts_at_1": "23:59:59"})
def test_admin_add_form(changes: dict[str, str]) -> None:
    with rolled_back(), superuser_client() as browser:
        post_outcome(browser, ADD_URL, {**FORM, **changes})


@DB_FUZZ
@given(changes=st.dictionaries(st.sampled_from(sorted(FORM)), FORM_TEXT, max_size=4))
@example(changes={"kind": "rrule", "rule": "FREQ=MINUTELY;BYMONTH=2;BYMONTHDAY=30"})
@example(changes={"expected_version": "99999999999999999999"})
def test_admin_change_form(changes: dict[str, str]) -> None:
    with rolled_back():
        change_form(changes)


def change_form(changes: dict[str, str]) -> None:
    clock = FakeClock(START)
    schedule = services.create_schedule(clock=clock, task=TASK, kind="cron", rule="0 9 * * *")
    url = reverse("admin:scheduler_app_schedule_change", args=[schedule.pk])
    with superuser_client() as browser:
        status = post_outcome(browser, url, {**FORM, "expected_version": "1", **changes})
    schedule.refresh_from_db()
    if status == 200:
        assert schedule.version == 1 and schedule.rule == "0 9 * * *"
    with pytest.raises(SchedulerError):  # the services still refuse a stale edit afterwards
        services.update_schedule(schedule.pk, expected_version=0, rule="0 10 * * *")
