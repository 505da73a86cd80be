"""``beat_schedule`` entries of any content: each is imported or refused with one line naming
it; no exception escapes, one bad entry never stops the others, a refused entry changes nothing
already stored."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from celery import current_app
from celery.schedules import crontab, schedule
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import transaction
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from scheduler_app.authoring.celery_beat_import import from_beat_schedule
from scheduler_app.authoring.celery_beat_migration import (
    MigrationPlan,
    apply_migration,
    plan_migration,
)
from scheduler_app.clock import FakeClock
from scheduler_app.models import Schedule
from scheduler_app.services import create_schedule
from tests.integration.support import START, TASK
from tests.integration.test_import_celery_beat import sunrise

pytestmark = pytest.mark.django_db


class Unprintable:
    """A custom object whose ``repr`` (and everything else) raises."""

    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")

    def __bool__(self) -> bool:
        raise RuntimeError("no truth either")


class RunEvery:
    """Looks like a Celery schedule to duck typing, is not one."""

    run_every = timedelta(minutes=5)


class BadNowfun(crontab):
    """A crontab whose ``nowfun`` raises (a user's zone lookup that fails)."""

    def __init__(self) -> None:
        super().__init__(minute=0, hour=7, nowfun=self._now)

    @staticmethod
    def _now() -> Any:
        raise LookupError("no zone")


HUGE = 10**5000
"""Past Python's int-to-text limit (``str()`` raises ValueError). Kept out of the strategies:
hypothesis itself cannot print it; the parametrized tests below carry it."""
ODD_TEXT = st.sampled_from(["", "\x00", "\ud800", "a\nb", "x" * 300, "queue", "demo.ping"])
NUMBERS = (
    st.integers()
    | st.sampled_from([10**400, -(10**400), 2**63, 10**20, -1, 0, 1, 59, 86_400 * 400])
    | st.floats()  # nan, inf, -0.0, 1e308 included
)
GARBAGE = st.recursive(
    st.none() | st.booleans() | NUMBERS | st.text(max_size=12) | ODD_TEXT,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.lists(inner, max_size=3).map(tuple)
        | st.frozensets(st.integers(), max_size=3).map(set)
        | st.dictionaries(st.text(max_size=6) | st.integers() | st.none(), inner, max_size=3)
        | st.builds(Unprintable)
    ),
    max_leaves=6,
)
SCHEDULES = (
    st.sampled_from(
        [
            crontab(minute=0, hour=8),
            crontab(minute="*/15"),
            schedule(run_every=60),
            schedule(run_every=timedelta(days=3)),
            sunrise(),
            timedelta(minutes=15),
            timedelta(microseconds=1),
            timedelta.max,
            timedelta(days=-1),
            RunEvery(),
            Unprintable(),
            BadNowfun(),
            "every 5 minutes",
            "*/5 * * * *",
        ]
    )
    | NUMBERS
    | GARBAGE
)
OPTION_NAMES = st.sampled_from(
    ["queue", "routing_key", "exchange", "priority", "expires", "countdown", "eta"]
)
OPTIONS = st.dictionaries(OPTION_NAMES | st.text(max_size=5), GARBAGE, max_size=4) | GARBAGE
ENTRY_FIELDS = {
    "task": st.just(TASK) | st.just("no.such.task") | GARBAGE,
    "schedule": SCHEDULES,
    "args": st.none() | st.just(()) | GARBAGE,
    "kwargs": st.none() | st.dictionaries(st.text(max_size=6), GARBAGE, max_size=3) | GARBAGE,
    "options": st.none() | OPTIONS,
}
ENTRIES = st.fixed_dictionaries({"task": st.just(TASK), "schedule": st.just(3600)}).flatmap(
    lambda base: st.fixed_dictionaries(
        {}, optional={name: strategy for name, strategy in ENTRY_FIELDS.items()}
    ).map(lambda extra: {**base, **extra})
)
NAMES = (
    st.text(max_size=10)
    | ODD_TEXT
    | st.integers()
    | st.none()
    | st.just(math.nan)
    | st.tuples(st.integers())
    | st.just("kept")
)
BEAT_SCHEDULES = st.dictionaries(NAMES, ENTRIES | GARBAGE, max_size=5)


@contextmanager
def rolled_back() -> Iterator[None]:
    with transaction.atomic():
        yield
        transaction.set_rollback(True)


def migrate(entries: Any, clock: FakeClock) -> MigrationPlan:
    migration = plan_migration(from_beat_schedule(entries, "UTC"), clock.now())
    return apply_migration(migration, clock=clock)


def snapshot(row: Schedule) -> tuple[Any, ...]:
    row.refresh_from_db()
    return (row.version, row.kind, row.rule, row.task, row.kwargs, row.options, row.status)


def assert_every_entry_reported(entries: Any, migration: MigrationPlan) -> None:
    assert len(migration.mappings) == len(entries)
    labels = [mapping.label for mapping in migration.mappings]
    assert len(set(labels)) == len(labels), labels
    for mapping in migration.mappings:
        refusal = migration.refused.get(mapping.label)
        change = migration.change_for(mapping.label)
        assert (refusal is None) != (change is None), mapping
        if refusal is not None:
            assert refusal and refusal.isprintable() and len(refusal) < 600, refusal[:300]
        assert mapping.label.startswith("celery-beat:")


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(entries=BEAT_SCHEDULES)
@example(entries={"a": {"task": TASK, "schedule": math.nan}})  # was ValueError
@example(entries={"a": {"task": TASK, "schedule": math.inf}})  # was OverflowError
@example(entries={"a": {"task": TASK, "schedule": 10**400}})  # was OverflowError
@example(entries={"a": {"task": TASK, "schedule": 3600, "args": 5}})  # was TypeError
@example(entries={"a": {"task": TASK, "schedule": 3600, "kwargs": [1, 2]}})  # was TypeError
@example(entries={"a": {"task": TASK, "schedule": 3600, "options": ["queue"]}})  # TypeError
@example(entries={"a": {"task": TASK, "schedule": 3600, "options": {"expires": math.nan}}})
@example(entries={1: {"task": TASK, "schedule": 3600}, "b": {"task": TASK, "schedule": 60}})
@example(entries={"1": {"task": TASK, "schedule": 60}, 1: {"task": TASK, "schedule": 60}})
@example(entries={"a": {"task": TASK, "schedule": timedelta.max}})
@example(entries={"a": {"task": TASK, "schedule": BadNowfun()}})
@example(entries={"x" * 300: {"task": TASK, "schedule": 60}})
@example(entries={"kept": {"task": TASK, "schedule": 60, "kwargs": {"t": (1, (2,))}}})
def test_hostile_beat_schedules_are_imported_or_refused_entry_by_entry(entries: Any) -> None:
    clock = FakeClock(START)
    with rolled_back():
        kept = migrate({"kept": {"task": TASK, "schedule": 7200}}, clock)
        assert not kept.refused
        stored = Schedule.objects.get(key="celery-beat:kept")
        before = snapshot(stored)
        migration = migrate(entries, clock)
        assert_every_entry_reported(entries, migration)
        if "celery-beat:kept" in migration.refused:
            assert snapshot(stored) == before  # a refused entry changes nothing stored
        imported = {m.label for m in migration.mappings if m.label not in migration.refused}
        for label in imported:  # each accepted entry is stored (or was already)
            assert Schedule.objects.filter(key=label).exists(), label
        event(f"imported: {bool(imported)}, refused: {bool(migration.refused)}")


def test_one_bad_entry_among_good_ones_refuses_only_itself() -> None:
    clock = FakeClock(START)
    entries = {
        "good": {"task": TASK, "schedule": 60},
        "nan": {"task": TASK, "schedule": math.nan},
        "also-good": {"task": TASK, "schedule": crontab(minute=5)},
    }
    migration = migrate(entries, clock)
    assert set(migration.refused) == {"celery-beat:nan"}
    assert "celery-beat:nan" not in migration.refused["celery-beat:nan"]  # the label says it
    assert "nan" in migration.refused["celery-beat:nan"]
    assert set(Schedule.objects.values_list("key", flat=True)) == {
        "celery-beat:good",
        "celery-beat:also-good",
    }


def test_an_entry_the_services_refuse_at_write_time_is_rolled_back_alone() -> None:
    """A key taken between the plan and the write: that entry is refused, the rest written."""
    clock = FakeClock(START)
    entries = {"a": {"task": TASK, "schedule": 60}, "b": {"task": TASK, "schedule": 120}}
    migration = plan_migration(from_beat_schedule(entries, "UTC"), clock.now())
    create_schedule(clock=clock, task=TASK, kind="interval", rule="300", key="celery-beat:a")
    done = apply_migration(migration, clock=clock)
    assert set(done.refused) == {"celery-beat:a"}
    assert "celery-beat:a" in done.refused["celery-beat:a"]
    assert done.plan.count("create") == 1
    assert Schedule.objects.get(key="celery-beat:a").rule == "300"
    assert Schedule.objects.get(key="celery-beat:b").rule == "120"


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ({"task": TASK, "schedule": math.nan}, "interval of nan"),
        ({"task": TASK, "schedule": math.inf}, "interval of inf"),
        ({"task": TASK, "schedule": 10**400}, "longest interval"),
        ({"task": TASK, "schedule": timedelta.max}, "longest interval"),
        ({"task": TASK, "schedule": -5}, "whole number of seconds >= 1"),
        ({"task": TASK, "schedule": None}, "unsupported schedule type NoneType"),
        ({"task": TASK, "schedule": "*/5 * * * *"}, "unsupported schedule type str"),
        ({"task": TASK, "schedule": RunEvery()}, "unsupported schedule type RunEvery"),
        ({"task": TASK, "schedule": BadNowfun()}, "nowfun raised LookupError"),
        ({"task": TASK, "schedule": 60, "args": 5}, "args must be a list or tuple"),
        ({"task": TASK, "schedule": 60, "kwargs": [1]}, "kwargs must be a dict"),
        ({"task": TASK, "schedule": 60, "kwargs": {1: "a"}}, "keys must be text"),
        ({"task": TASK, "schedule": 60, "kwargs": {"s": {1, 2}}}, "holds a set"),
        ({"task": TASK, "schedule": 60, "kwargs": {"n": math.nan}}, "not valid JSON"),
        ({"task": TASK, "schedule": 60, "kwargs": {"n": 2**64}}, "64-bit integer"),
        ({"task": TASK, "schedule": 60, "kwargs": {"n": HUGE}}, "64-bit integer"),
        ({"task": TASK, "schedule": HUGE}, "longest interval"),
        ({"task": TASK, "schedule": 60, "options": {"expires": HUGE}}, "longest deadline"),
        ({"task": TASK, "schedule": 60, "options": ["queue"]}, "options must be a dict"),
        ({"task": TASK, "schedule": 60, "options": {"expires": math.inf}}, "expires=inf"),
        ({"task": 7, "schedule": 60}, "'task' must be a task name"),
        ({"schedule": 60}, "needs 'task' and 'schedule'"),
        ({"task": TASK, "schedule": 60, "kwargs": Unprintable()}, "kwargs must be a dict"),
        (Unprintable(), "an entry needs"),
    ],
)
def test_each_hostile_field_is_refused_with_a_reason(entry: Any, reason: str) -> None:
    migration = migrate({"job": entry}, FakeClock(START))
    assert reason in migration.refused["celery-beat:job"]
    assert not Schedule.objects.exists()


def test_a_mistyped_routing_option_is_a_note_and_the_entry_is_imported() -> None:
    migration = migrate({"job": {"task": TASK, "schedule": 60, "options": {"queue": HUGE}}},
                        FakeClock(START))  # fmt: skip
    assert not migration.refused
    (mapping,) = migration.mappings
    assert mapping.notes[0].startswith("not carried over: queue=<int object>")
    assert Schedule.objects.get().options == {}


def test_names_that_are_not_text_are_refused_and_reported_apart() -> None:
    entries = {1: {"task": TASK, "schedule": 60}, "1": {"task": TASK, "schedule": 60}}
    migration = migrate(entries, FakeClock(START))
    assert len(migration.mappings) == 2
    (label,) = migration.refused
    assert "entry names must be text" in migration.refused[label]
    assert list(Schedule.objects.values_list("key", flat=True)) == ["celery-beat:1"]


def test_a_name_too_long_for_the_key_is_refused_with_the_limit() -> None:
    migration = migrate({"x" * 300: {"task": TASK, "schedule": 60}}, FakeClock(START))
    (reason,) = migration.refused.values()
    assert "300 characters" in reason and "at most 188" in reason


def test_tuples_in_kwargs_are_kept_as_lists_and_a_rerun_is_unchanged() -> None:
    clock = FakeClock(START)
    entries = {"t": {"task": TASK, "schedule": 60, "kwargs": {"ids": (1, (2, 3))}}}
    migrate(entries, clock)
    assert Schedule.objects.get().kwargs == {"ids": [1, [2, 3]]}
    again = migrate(entries, clock)
    assert again.plan.count("unchanged") == 1


def test_a_refused_update_leaves_the_stored_schedule_as_it_was() -> None:
    clock = FakeClock(START)
    migrate({"job": {"task": TASK, "schedule": 60, "kwargs": {"a": 1}}}, clock)
    stored = Schedule.objects.get()
    before = snapshot(stored)
    hostile = {"job": {"task": TASK, "schedule": 120, "kwargs": {"a": math.nan}}}
    migration = migrate(hostile, clock)
    assert "not valid JSON" in migration.refused["celery-beat:job"]
    assert snapshot(stored) == before


# -- the command: printable one-line reports, exit 1, never a traceback -------------------------


def run_command(entries: Any, monkeypatch: pytest.MonkeyPatch, *args: str) -> str:
    monkeypatch.setitem(current_app.conf, "beat_schedule", entries)
    out, err = StringIO(), StringIO()
    try:
        call_command("import_celery_beat", *args, stdout=out, stderr=err)
    except CommandError as exc:
        assert exc.returncode == 1, exc
    return out.getvalue()


def test_the_command_prints_hostile_names_and_reasons_on_one_line_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entries = {
        "a\nb": {"task": TASK, "schedule": math.nan},
        "\ud800": {"task": TASK, "schedule": 60},
        None: {"task": TASK, "schedule": 60},
        "fine": {"task": TASK, "schedule": 60},
    }
    out = run_command(entries, monkeypatch)
    out.encode("utf-8")  # no lone surrogate reaches the terminal
    assert "celery-beat:a\\nb\n" in out
    assert "celery-beat:\\ud800\n" in out
    assert out.count("NOT IMPORTED") == 3
    assert out.endswith("created 1, updated 0, unchanged 0, not imported 3\n")


def test_the_command_refuses_a_beat_schedule_that_is_not_a_dict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(current_app.conf, "beat_schedule", [("a", {})])
    with pytest.raises(CommandError, match="beat_schedule must be a dict"):
        call_command("import_celery_beat", stdout=StringIO(), stderr=StringIO())


class ExplodingEntry(dict[str, Any]):
    """An entry whose own code raises when it is read."""

    def get(self, key: str, default: Any = None) -> Any:
        raise RuntimeError("boom")


def test_an_entry_whose_own_code_raises_is_refused_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level("WARNING", logger="scheduler_app.celery_beat_import"):
        [mapping] = from_beat_schedule({"job": ExplodingEntry(task=TASK)}, "UTC")
    assert mapping.refusal == "could not be read (RuntimeError: 'boom'); fix the entry"
    [record] = caplog.records
    assert (record.msg, record.args) == ("beat_schedule entry refused: %s", (mapping.refusal,))
    assert (record.action, record.source) == ("schedule.import.refused", "celery-beat:job")


def test_an_entry_refused_at_write_time_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock(START)
    migration = plan_migration(
        from_beat_schedule({"a": {"task": TASK, "schedule": 60}}, "UTC"), clock.now()
    )
    create_schedule(clock=clock, task=TASK, kind="interval", rule="300", key="celery-beat:a")
    with caplog.at_level("WARNING", logger="scheduler_app.celery_beat_import"):
        done = apply_migration(migration, clock=clock)
    [record] = [r for r in caplog.records if r.name == "scheduler_app.celery_beat_import"]
    assert (record.msg, record.args) == (
        "import entry refused: %s",
        (done.refused["celery-beat:a"],),
    )
    assert (record.action, record.source) == ("schedule.import.refused", "celery-beat:a")
