"""The materializer's bulk writes: the one-statement insert of occurrences on PostgreSQL (conflicts,
what it reports as inserted, the values it stores), the batch's advance, and the previous-slot
shortcuts (the interval grid by arithmetic, a remembered answer per rule and slot)."""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import DataError, transaction

from scheduler_app.clock import FakeClock
from scheduler_app.dispatch.materialize import insert_occurrences, materialize_batch, plan_schedule
from scheduler_app.models import Occurrence, Schedule, Trigger
from scheduler_app.timing import build_timing, previous_slot, slots_between
from tests.integration.support import START, MemoryPublisher, reload, rows, schedule, ticker
from tests.subclasses import Letter, Loud, Number

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
FIRST = datetime(2026, 1, 5, 1, 0, tzinfo=UTC)
"""The first slot of an hourly cron created at START."""


def hourly(clock: FakeClock, **fields: object) -> Schedule:
    return schedule(clock, kind="cron", rule="0 * * * *", **fields)


def planned(target: Schedule, now: datetime) -> list[Occurrence]:
    return plan_schedule(reload(target), now)


def stored(row: Occurrence) -> dict[str, object]:
    return {f.attname: getattr(row, f.attname) for f in Occurrence._meta.concrete_fields}


# --- the unnest insert (PostgreSQL) ---------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.django_db
def test_inserted_rows_are_reported_and_a_rerun_inserts_nothing() -> None:
    clock = FakeClock(START)
    targets = [hourly(clock, kwargs={"n": n}) for n in range(3)]
    now = FIRST + timedelta(seconds=5)
    batch = [row for target in targets for row in planned(target, now)]
    assert len(batch) == 3

    assert insert_occurrences(batch) == {row.id for row in batch}
    again = [row for target in targets for row in planned(target, now)]
    assert [row.id for row in again] == [row.id for row in batch]
    assert insert_occurrences(again) == set()
    assert Occurrence.objects.count() == 3


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_row_for_the_same_rule_slot_is_not_counted_as_inserted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock(START)
    taken, free = hourly(clock), hourly(clock)
    now = FIRST + timedelta(seconds=5)
    # Another row for the same (schedule, slot), with another id and key: the partial unique
    # constraint on rule slots keeps the new one out.
    [existing] = planned(taken, now)
    existing.id = uuid.uuid4()
    existing.idempotency_key = f"{existing.idempotency_key}:other"
    Occurrence.objects.bulk_create([existing])

    batch = planned(taken, now) + planned(free, now)
    with caplog.at_level(logging.INFO, logger="scheduler_app.materialize"):
        inserted = insert_occurrences(batch)

    assert inserted == {batch[1].id}
    assert [row.id for row in rows(taken)] == [existing.id]
    assert [row.id for row in rows(free)] == [batch[1].id]
    [record] = [r for r in caplog.records if getattr(r, "action", "") == "materialize.conflict"]
    assert record.count == 1  # type: ignore[attr-defined]


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_taken_idempotency_key_is_a_conflict_but_a_manual_run_of_the_slot_is_not() -> None:
    clock = FakeClock(START)
    keyed, manual = hourly(clock), hourly(clock)
    now = FIRST + timedelta(seconds=5)
    # The same key on a row outside the rule-slot constraint (a backfill of the slot): its id
    # is derived from the key, so the primary key absorbs the beat's row of that slot.
    [by_key] = planned(keyed, now)
    by_key.trigger = Trigger.BACKFILL
    [run_now] = planned(manual, now)
    run_now.id = uuid.uuid4()
    run_now.trigger = Trigger.MANUAL
    run_now.idempotency_key = f"manual:{run_now.id}"
    Occurrence.objects.bulk_create([by_key, run_now])

    batch = planned(keyed, now) + planned(manual, now)
    assert insert_occurrences(batch) == {batch[1].id}
    assert [row.id for row in rows(keyed)] == [by_key.id]
    # The partial constraint covers scheduled and catch-up rows only.
    assert sorted(str(row.trigger) for row in rows(manual)) == ["manual", "scheduled"]


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_insert_stores_what_the_orm_would() -> None:
    clock = FakeClock(START)
    odd = {"quote": 'say "hi"', "slash": "a\\b", "braces": "{1,2}", "nested": [1, {"x": None}]}
    targets = [
        hourly(clock, kwargs=odd, deadline=120, jitter=30, timezone="Asia/Kolkata"),
        hourly(clock, kwargs={"ü": "✓"}, mode="shadow"),
        schedule(
            clock, kind="interval", rule="30m", anchor=START, misfire_policy="catch_up", kwargs={}
        ),
    ]
    now = FIRST + 3 * HOUR + timedelta(seconds=5)
    batch = [row for target in targets for row in planned(target, now)]
    assert len({row.trigger for row in batch}) == 2  # catch-up and on-time rows alike
    assert len({row.deadline_at for row in batch}) > 1  # a column with NULLs and values

    assert insert_occurrences(batch) == {row.id for row in batch}
    for row in batch:
        assert stored(Occurrence.objects.get(pk=row.pk)) == stored(row)


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_single_row_and_an_empty_batch() -> None:
    clock = FakeClock(START)
    [row] = planned(hourly(clock), FIRST)
    assert insert_occurrences([]) == set()
    assert insert_occurrences([row]) == {row.id}
    assert stored(Occurrence.objects.get()) == stored(row)


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_value_too_long_for_its_column_is_refused_not_cut() -> None:
    clock = FakeClock(START)
    batch = planned(hourly(clock), FIRST) + planned(hourly(clock), FIRST)
    batch[1].reason = "x" * 41  # reason is varchar(40)
    with pytest.raises(DataError), transaction.atomic():
        insert_occurrences(batch)
    assert Occurrence.objects.count() == 0


# --- the batch -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_existing_occurrence_is_kept_and_the_schedule_still_advances() -> None:
    clock = FakeClock(START)
    target = hourly(clock)
    now = FIRST + timedelta(seconds=5)
    [existing] = planned(target, now)
    Occurrence.objects.bulk_create([existing])

    result = materialize_batch(now, 10)
    # ``created`` counts the planned rows, a conflicting one included (as it always did).
    assert (result.claimed, result.created) == (1, 1)
    assert [row.id for row in rows(target)] == [existing.id]
    after = reload(target)
    assert (after.next_run_at, after.last_scheduled_for) == (FIRST + HOUR, FIRST)
    assert materialize_batch(now, 10).claimed == 0


@pytest.mark.django_db
def test_each_schedule_of_a_batch_gets_its_own_advance() -> None:
    clock = FakeClock(START)
    rules = ["0 * * * *", "*/30 * * * *", "0 */2 * * *"]
    targets = [schedule(clock, kind="cron", rule=rule) for rule in rules]
    clock.set(FIRST + 2 * HOUR + timedelta(seconds=5))
    assert ticker(MemoryPublisher(), clock).tick().created == 3 + 6 + 1
    advanced = [reload(target) for target in targets]
    assert [t.next_run_at for t in advanced] == [
        FIRST + 3 * HOUR,
        FIRST + 2 * HOUR + timedelta(minutes=30),
        FIRST + 3 * HOUR,
    ]
    assert [t.last_scheduled_for for t in advanced] == [FIRST + 2 * HOUR] * 2 + [FIRST + HOUR]
    assert [t.occurrence_count for t in advanced] == [3, 6, 1]
    assert [t.caught_up_count for t in advanced] == [2, 5, 1]


# --- the slot before a schedule's first slot -------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fields", "first", "before"),
    [
        ({"kind": "cron", "rule": "30 9 * * *"}, datetime(2026, 1, 5, 9, 30, tzinfo=UTC), DAY),
        (
            {"kind": "rrule", "rule": "FREQ=WEEKLY;BYDAY=MO;BYHOUR=9;BYMINUTE=0;BYSECOND=0"},
            datetime(2026, 1, 5, 9, tzinfo=UTC),
            timedelta(0),  # an RRULE starts at its DTSTART (the creation): nothing before it
        ),
        (
            {"kind": "interval", "rule": "90m", "anchor": START - DAY + timedelta(minutes=20)},
            START + timedelta(minutes=20),
            timedelta(minutes=90),
        ),
    ],
)
def test_a_schedule_that_never_ran_has_the_rule_slot_before_as_window_start(
    fields: dict[str, object], first: datetime, before: timedelta
) -> None:
    clock = FakeClock(START)
    targets = [schedule(clock, **fields) for _ in range(3)]  # the same rule: asked once
    assert {reload(target).next_run_at for target in targets} == {first}
    clock.set(first + timedelta(seconds=5))
    assert ticker(MemoryPublisher(), clock).tick().created == 3
    for target in targets:
        [row] = rows(target)
        assert (row.window_start, row.window_end) == (first - before, first)


def test_interval_previous_slot_is_the_grid_point_the_walk_finds() -> None:
    anchor = datetime(2026, 3, 29, 0, 0, 7, tzinfo=UTC)
    probes = [
        anchor + timedelta(minutes=m, seconds=s)
        for m in (-90, -1, 0, 1, 44, 45, 46, 600)
        for s in (-1, 0, 1)
    ]
    bounds = [
        {},
        {"starts_at": anchor + timedelta(minutes=50)},
        {"ends_at": anchor + timedelta(minutes=200)},
        {"starts_at": anchor - DAY, "ends_at": anchor + timedelta(minutes=45)},
    ]
    for extra in bounds:
        timing = build_timing(kind="interval", rule=timedelta(minutes=45), anchor=anchor, **extra)  # type: ignore[arg-type]
        for probe in probes:
            for inclusive in (True, False):
                end = probe if inclusive else probe - timedelta(microseconds=1)
                walked = slots_between(timing, anchor - 2 * DAY, end)
                expected = walked[-1] if walked else None
                assert previous_slot(timing, probe, inclusive=inclusive) == expected, (extra, probe)


def test_interval_previous_slot_with_active_windows_still_walks() -> None:
    timing = build_timing(
        kind="interval",
        rule=timedelta(hours=1),
        anchor=datetime(2026, 1, 5, tzinfo=UTC),
        window="MON-FRI 09:00-17:00",
    )
    saturday_noon = datetime(2026, 1, 10, 12, tzinfo=UTC)
    assert previous_slot(timing, saturday_noon) == datetime(2026, 1, 9, 16, tzinfo=UTC)


# --- a row the database refuses ---------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_refused_row_parks_its_schedule_and_the_rest_of_the_batch_goes_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A schedule whose occurrence violates a constraint (here a business window made to end
    before it starts) is paused with the error, not advanced; the others in its batch are
    materialized. Before, the whole batch failed on every tick."""
    from scheduler_app.dispatch import materialize

    clock = FakeClock(START)
    good, bad = hourly(clock, name="good"), hourly(clock, name="bad")
    window_start = materialize._window_start

    def broken(schedule: Schedule, *args: object) -> datetime:
        start = window_start(schedule, *args)  # type: ignore[arg-type]
        return start + DAY if schedule.pk == bad.pk else start

    monkeypatch.setattr(materialize, "_window_start", broken)
    with caplog.at_level(logging.WARNING, logger="scheduler_app.materialize"):
        result = materialize_batch(FIRST, batch_size=10)
    assert (result.claimed, result.created) == (2, 1)
    assert [r.scheduled_for for r in rows(good)] == [FIRST]
    assert reload(good).next_run_at == FIRST + HOUR
    assert rows(bad) == []
    parked = reload(bad)
    assert (parked.status, parked.next_run_at) == ("paused", FIRST)  # its slot is still due
    assert "occ_window_ordered" in parked.last_error
    assert "materialize.batch_refused" in [getattr(r, "action", "") for r in caplog.records]


def test_new_row_builds_what_keyword_construction_builds() -> None:
    """The positional fast path of a burst: every field equal to ``Model(**values)``'s."""
    from scheduler_app.db.rows import new_row
    from scheduler_app.models import ScheduleVersion

    values = {
        "id": uuid.uuid4(),
        "schedule_id": uuid.uuid4(),
        "schedule_version_id": uuid.uuid4(),
        "trigger": "scheduled",
        "scheduled_for": FIRST,
        "window_start": FIRST,
        "window_end": FIRST,
        "timezone": "Europe/Riga",
        "idempotency_key": "k",
        "task": "demo.ping",
        "kwargs": {"n": 1},
        "not_before": FIRST,
        "created_at": FIRST,
    }
    for model, given in [
        (Occurrence, values),
        (ScheduleVersion, {"id": uuid.uuid4(), "schedule_id": uuid.uuid4(), "version": 3}),
    ]:
        fast, slow = new_row(model, **given), model(**given)
        for field in model._meta.concrete_fields:
            assert getattr(fast, field.attname) == getattr(slow, field.attname), field.name
        assert fast._state.adding and fast._state.db is None


@pytest.mark.django_db
def test_new_row_and_loaded_still_send_init_signals_to_a_receiver() -> None:
    """A project that connects ``pre_init``/``post_init`` (for any model) gets them from the
    hot path's rows too: ``new_row`` and ``loaded`` build those the ordinary way."""
    from django.db.models import signals

    from scheduler_app.db.rows import loaded, new_row
    from scheduler_app.models import ScheduleVersion

    seen: list[str] = []

    def receiver(sender: Any, **_: Any) -> None:
        seen.append(sender.__name__)

    made = schedule(FakeClock(FIRST), kind="cron", rule="0 * * * *")
    new_row(ScheduleVersion, id=uuid.uuid4(), schedule_id=made.pk, version=2)
    assert seen == []
    signals.post_init.connect(receiver, sender=ScheduleVersion)
    try:
        new_row(ScheduleVersion, id=uuid.uuid4(), schedule_id=made.pk, version=2)
        loaded(Schedule.objects.filter(pk=made.pk))  # no receiver for Schedule: the fast read
        assert seen == ["ScheduleVersion"]
        loaded(ScheduleVersion.objects.filter(schedule=made))
        assert seen == ["ScheduleVersion", "ScheduleVersion"]
    finally:
        signals.post_init.disconnect(receiver, sender=ScheduleVersion)


# --- the insert's JSON document (PostgreSQL) ---------------------------------------------------


def _rows_with(payloads: list[Any]) -> list[Occurrence]:
    from scheduler_app.db.rows import new_row
    from scheduler_app.definition.schedule import idempotency_key, occurrence_id

    made = schedule(FakeClock(FIRST), kind="cron", rule="0 * * * *")
    version = made.versions.get()
    found = []
    for index, kwargs in enumerate(payloads):
        slot = FIRST + timedelta(hours=index)
        key = idempotency_key(made.pk, slot)
        found.append(
            new_row(
                Occurrence,
                id=occurrence_id(key),
                schedule_id=made.pk,
                schedule_version_id=version.pk,
                scheduled_for=slot,
                window_start=slot,
                window_end=slot,
                not_before=slot,
                timezone="UTC",
                idempotency_key=key,
                task=made.task,
                kwargs=kwargs,
                args=[],
                created_at=FIRST,
            )
        )
    return found


@pytest.mark.postgres
@pytest.mark.django_db
def test_payloads_equal_in_python_but_not_in_json_are_each_stored_as_given() -> None:
    """``1 == 1.0 == True`` in Python: one parameter for all three rows would store the first
    one's payload for the others."""
    shared = {"nested": {"list": [1, "two", None, {"é": "ü\\n\"'"}]}, "big": 2**62}
    for payloads in ([{"n": 1}, {"n": 1.0}, {"n": True}], [{"n": 2}, shared, shared, {}]):
        made = _rows_with(payloads)
        assert len(insert_occurrences(made)) == len(payloads)
        found = Occurrence.objects.filter(id__in=[r.id for r in made])
        stored = {row.id: row.kwargs for row in found}
        for row, payload in zip(made, payloads, strict=True):
            assert stored[row.id] == payload
            assert type(stored[row.id].get("n")) is type(payload.get("n"))


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_payload_shared_by_every_row_is_stored_whole_in_each() -> None:
    shared = {"report": "daily", "n": [1, 2.5]}
    made = _rows_with([shared, shared, shared])
    assert len(insert_occurrences(made)) == 3
    stored = Occurrence.objects.filter(id__in=[r.id for r in made])
    assert [row.kwargs for row in stored] == [shared, shared, shared]


@pytest.mark.postgres
@pytest.mark.django_db
@pytest.mark.parametrize("value", [uuid.uuid4(), FIRST, {1, 2}, object()])
def test_a_payload_value_json_cannot_hold_is_refused_not_turned_into_text(value: Any) -> None:
    """The ids and instants of a row are sent as their text; a payload's values never are
    (a UUID or an instant inside a payload is refused, as encoding the payload alone did)."""
    made = _rows_with([{"n": 1}, {"bad": value}])
    with pytest.raises(TypeError), transaction.atomic():
        insert_occurrences(made)
    assert not Occurrence.objects.filter(id__in=[r.id for r in made]).exists()


@pytest.mark.postgres
@pytest.mark.django_db
@pytest.mark.parametrize(
    ("sql_type", "values", "stored"),
    [
        ("text", ["b", Letter.A], ["b", "a"]),
        ("integer", [2, Number.ONE], ["2", "1"]),
        ("text", ["x", Loud("y")], ["x", "y"]),
        ("uuid", [uuid.UUID(int=1), None], [str(uuid.UUID(int=1)), None]),
    ],
)
def test_a_column_value_json_writes_as_itself_is_sent_as_its_value(
    sql_type: str, values: list[Any], stored: list[Any]
) -> None:
    """A ``str``, ``int`` or ``float`` subclass (an enum mixin) goes into the document as its
    value, as JSON writes it; only other types (a UUID, an instant) as their ``str()``."""
    from django.db import connection

    from scheduler_app.dispatch.bulk import _unnest

    unnested = _unnest(
        [("id", "uuid", [uuid.uuid4(), uuid.uuid4()]), ("c", sql_type, values)], key="id"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT ({unnested.values[1]})::text FROM {unnested.source}", unnested.params
        )
        assert [row[0] for row in cursor.fetchall()] == stored
