"""Hostile input at the service boundary (so every form, import, API call and decorator sync):
each case ends as a field error naming the field, never as a 500, a dead beat or a stored row
that breaks something later. Reproduces the security review's findings."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction

from scheduler_app.clock import FakeClock
from scheduler_app.dispatch.reconcile import reconcile
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.models import Schedule, ScheduleStatus
from scheduler_app.policies.limits import MAX_JSON_DEPTH, NUMBER_LIMITS, RULE_LENGTHS
from scheduler_app.services import update_schedule
from tests.integration.support import START, reload, schedule

pytestmark = pytest.mark.django_db
HOURLY = {"kind": "cron", "rule": "0 * * * *"}


def refused(**fields: Any) -> ScheduleValidationError:
    with pytest.raises(ScheduleValidationError) as caught:
        schedule(FakeClock(START), **{**HOURLY, **fields})
    assert Schedule.objects.count() == 0
    return caught.value


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"x": float("nan")}, "not_finite"),
        ({"x": [1, float("inf")]}, "not_finite"),
        ({"x": -float("inf")}, "not_finite"),
        (nested(900), "too_deep"),
        (nested(MAX_JSON_DEPTH + 1), "too_deep"),
        ({"x": "a\x00b"}, "bad_character"),
        ({"x\x00": 1}, "bad_character"),
        ({"x": "\ud800"}, "bad_character"),
        ({"x": 10**30}, "number_too_large"),
    ],
    ids=["nan", "inf-in-list", "-inf", "900-deep", "21-deep", "nul", "nul-key", "surrogate", "big"],
)
def test_hostile_payloads_are_field_errors(kwargs: dict[str, Any], code: str) -> None:
    error = refused(kwargs=kwargs)
    assert (error.field, error.code) == ("kwargs", code)


def test_a_payload_at_the_depth_limit_is_accepted() -> None:
    schedule(FakeClock(START), kwargs=nested(MAX_JSON_DEPTH), **HOURLY)


@pytest.mark.parametrize(
    ("field", "value", "code"),
    [
        ("objective", "x" * 101, "too_long"),
        ("objective", "nul\x00", "bad_character"),
        ("name", "x" * 201, "too_long"),
        ("tenant", "\ud800", "bad_character"),
        ("payload_ref", "r" * 501, "too_long"),
        ("active_window", "MON-FRI 09:00-18:00; " * 40, "too_long"),
        ("options", {"queue": float("nan")}, "not_finite"),
        ("options", {"queue": "q" * 5000}, "too_large"),
    ],
)
def test_hostile_texts_are_field_errors(field: str, value: Any, code: str) -> None:
    error = refused(**{field: value})
    assert (error.field, error.code) == (field, code)


@pytest.mark.parametrize("kind", sorted(RULE_LENGTHS))
def test_every_kind_of_rule_has_a_length_cap(kind: str) -> None:
    started = time.perf_counter()
    error = refused(kind=kind, rule="1" * (RULE_LENGTHS[kind] + 1))
    assert (error.field, error.code) == ("rule", "too_long")
    assert time.perf_counter() - started < 1.0


def test_a_20_mb_once_rule_is_refused_quickly() -> None:
    started = time.perf_counter()
    error = refused(kind="once", rule="2027-01-01T00:00:00Z" + " " * 20_000_000)
    assert error.code == "too_long"
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize("field", sorted(NUMBER_LIMITS))
def test_every_numeric_field_has_a_maximum(field: str) -> None:
    high = NUMBER_LIMITS[field][1]
    extra = {"max_count": 5, "starts_at": START} if field == "max_count" else {}
    error = refused(**{**extra, field: high + 1})
    assert (error.field, error.code) == (field, "out_of_range")
    error = refused(**{**extra, field: 10**20})  # too large for any integer column
    assert error.field == field
    schedule(FakeClock(START), **{**HOURLY, **extra, field: high})


def test_a_float_cancel_grace_is_refused() -> None:
    error = refused(overlap_policy="cancel_previous", cancel_grace=1e11)
    assert error.field == "cancel_grace"


def test_the_database_refuses_out_of_range_values_written_around_the_services() -> None:
    target = schedule(FakeClock(START), **HOURLY)
    with pytest.raises(IntegrityError), transaction.atomic():
        Schedule.objects.filter(pk=target.pk).update(catch_up_limit=10**6)
    with pytest.raises(IntegrityError), transaction.atomic():
        Schedule.objects.filter(pk=target.pk).update(cancel_grace=10**9)


def test_a_rule_that_almost_never_fires_is_refused_in_well_under_a_second() -> None:
    started = time.perf_counter()
    error = refused(
        kind="rrule",
        rule="FREQ=YEARLY;BYMONTH=2;BYDAY=MO;BYSETPOS=-1",
        active_window="MON-FRI 09:00-10:00",
        window_policy="skip",
    )
    assert (error.field, error.code) == ("rule", "never_fires")
    assert time.perf_counter() - started < 2.0


def test_an_edit_is_validated_before_the_row_is_locked(
    django_assert_max_num_queries: Any,
) -> None:
    target = schedule(FakeClock(START), **HOURLY)
    # An invalid edit reads the row once and writes nothing: no lock, no transaction.
    with django_assert_max_num_queries(1), pytest.raises(ScheduleValidationError):
        update_schedule(target.pk, expected_version=1, clock=FakeClock(START), kwargs=nested(99))


def _store_unchecked(target: Schedule, **values: Any) -> None:
    """Write values the constraints refuse (SQLite), as a row stored before they existed."""
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA ignore_check_constraints = ON")
    try:
        Schedule.objects.filter(pk=target.pk).update(**values)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA ignore_check_constraints = OFF")


def test_the_reconciler_parks_a_row_it_cannot_process_and_carries_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from scheduler_app.dispatch import reconcile as reconciler
    from scheduler_app.models import Occurrence, OccurrenceState
    from tests.integration.support import MemoryPublisher, ticker

    clock = FakeClock(START)
    bad = schedule(clock, kind="interval", rule="60s", overlap_policy="cancel_previous")
    good = schedule(clock, kind="interval", rule="60s", overlap_policy="cancel_previous")
    if connection.vendor == "sqlite":
        _store_unchecked(bad, cancel_grace=10**11)  # the review's row: OverflowError for real
    else:
        # PostgreSQL's integer column cannot hold such a value; fail the same way instead.
        real = reconciler._within_grace

        def overflowing(target: Schedule, now: datetime) -> bool:
            if target.pk == bad.pk:
                raise OverflowError("date value out of range")
            return real(target, now)

        monkeypatch.setattr(reconciler, "_within_grace", overflowing)
    beat = ticker(MemoryPublisher(), clock)
    for _ in range(2):  # two slots: the second asks the first to stop
        clock.advance(timedelta(seconds=60))
        beat.tick()
    assert Occurrence.objects.filter(cancel_requested_at__isnull=False).count() == 2
    clock.advance(timedelta(seconds=120))
    reconcile(clock.now(), retry_grace=timedelta(seconds=60))  # does not raise
    stored = reload(bad)
    assert stored.status == ScheduleStatus.PAUSED
    assert "OverflowError" in stored.last_error and stored.last_error.startswith("reconciler")
    assert reload(good).status == ScheduleStatus.ACTIVE
    released = Occurrence.objects.filter(schedule=good, reason="released_after_grace")
    assert released.get().state == OccurrenceState.PENDING


def test_limits_hold_for_edits_too() -> None:
    target = schedule(FakeClock(START), **HOURLY)
    with pytest.raises(ScheduleValidationError) as caught:
        update_schedule(
            target.pk, expected_version=1, clock=FakeClock(START), catch_up_window=10**9
        )
    assert caught.value.field == "catch_up_window"
    assert reload(target).version == 1
    assert datetime.now(UTC) > START  # the clock above is fake; nothing slept
