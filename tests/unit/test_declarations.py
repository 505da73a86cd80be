"""``@scheduled``: every mistake is caught when the decorator runs, with the field named."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from celery import Celery, shared_task

from scheduler_app.authoring.declarations import (
    Declaration,
    ScheduleRegistry,
    isolated_registry,
    registry,
    scheduled,
    task_name_of,
)
from scheduler_app.authoring.options import Declared
from scheduler_app.declarations import (
    CancelPrevious,
    CatchUp,
    Deadline,
    FireOnce,
    Overlap,
    Retry,
    Skip,
    Window,
    declare_event,
)
from scheduler_app.errors import ScheduleValidationError

app = Celery("declarations-test", set_as_current=False)


@app.task(name="tests.report")
def report() -> None: ...


@pytest.fixture(autouse=True)
def declared() -> Iterator[ScheduleRegistry]:
    with isolated_registry() as fresh:
        yield fresh


def declare(**options: Any) -> Declaration:
    scheduled(**options)(report)
    [declaration] = registry().declarations()
    return declaration


# -- validation at decoration time ------------------------------------------------------------

BAD: list[tuple[dict[str, Any], str, str]] = [
    ({}, "rule", "exactly one of cron=, rrule=, every=, at="),
    ({"cron": "0 8 * * *", "every": "1h"}, "rule", "2 rules (cron, every)"),
    ({"cron": "61 * * * *"}, "cron.minute", "out of range"),
    ({"cron": "0 8 * * FUNDAY"}, "cron.day_of_week", ""),
    ({"rrule": "FREQ=SOMETIMES"}, "rrule.FREQ", ""),
    ({"every": "soon"}, "every", "is not a duration"),
    ({"every": 0}, "every", "at least 1 second"),
    ({"at": "tomorrow"}, "at", "expected a datetime"),
    ({"cron": "0 8 * * *", "timezone": "Europe/Pariss"}, "timezone", ""),
    ({"cron": "0 8 * * *", "misfire": "fire_twice"}, "misfire", "fire_once"),
    ({"cron": "0 8 * * *", "overlap": "queue"}, "overlap", "buffer_one"),
    ({"cron": "0 8 * * *", "nonexistent": "later"}, "nonexistent", "next_valid"),
    ({"cron": "0 8 * * *", "ambiguous": "twice"}, "ambiguous", "both"),
    ({"cron": "0 8 * * *", "on_pause": "drop"}, "on_pause", "keep"),
    ({"cron": "0 8 * * *", "mode": "dry"}, "mode", "shadow"),
    ({"cron": "0 8 * * *", "max_lateness": "a while"}, "max_lateness", "is not a duration"),
    ({"cron": "0 8 * * *", "deadline": 0}, "deadline", "at least 1 second"),
    ({"cron": "0 8 * * *", "jitter": -5}, "jitter", "at least 1 second"),
    ({"cron": "0 8 * * *", "catch_up_limit": 0}, "catch_up_limit", ">= 1"),
    ({"cron": "0 8 * * *", "max_attempts": True}, "max_attempts", ">= 1"),
    ({"cron": "0 8 * * *", "expect_success_every": "never"}, "expect_success_every", ""),
    ({"cron": "0 8 * * *", "interval_mode": "fixed_delay"}, "interval_mode", "every="),
    ({"every": "1h", "interval_mode": "sometimes"}, "interval_mode", "fixed_delay"),
    ({"cron": "0 8 * * *", "anchor": datetime(2026, 1, 1, tzinfo=UTC)}, "anchor", "rrule="),
    ({"every": "1h", "anchor": datetime(2026, 1, 1)}, "anchor", ""),
    ({"cron": "0 8 * * *", "starts_at": datetime(2026, 1, 1)}, "starts_at", ""),
    (
        {
            "cron": "0 8 * * *",
            "starts_at": datetime(2026, 2, 1, tzinfo=UTC),
            "ends_at": datetime(2026, 1, 1, tzinfo=UTC),
        },
        "ends_at",
        "before starts_at",
    ),
    ({"cron": "0 8 * * *", "max_count": 3}, "max_count", "needs starts_at"),
    ({"cron": "0 8 * * *", "kwargs": {"when": datetime(2026, 1, 1)}}, "kwargs", "JSON"),
    ({"cron": "0 8 * * *", "kwargs": ["a"]}, "kwargs", "dict"),
    ({"cron": "0 8 * * *", "key": " spaced "}, "key", "surrounding spaces"),
    ({"cron": "0 8 * * *", "key": "k" * 151}, "key", "at most 150"),
    ({"cron": "0 8 * * *", "objective": "o" * 101}, "objective", "at most 100"),
    (
        {"cron": "0 8 * * *", "objective": "o" * 101},
        "objective",
        "is 101 characters long; at most 100",
    ),
    (
        {"cron": "0 8 * * *", "payload_ref": "r" * 501},
        "payload_ref",
        "is 501 characters long; at most 500",
    ),
    (
        {"cron": "0 8 * * *", "job_type": "j" * 201},
        "job_type",
        "is 201 characters long; at most 200",
    ),
]


@pytest.mark.parametrize(("options", "field", "text"), BAD, ids=[b[1] for b in BAD])
def test_a_bad_option_raises_when_the_decorator_is_called(
    options: dict[str, Any], field: str, text: str
) -> None:
    with pytest.raises(ScheduleValidationError) as caught:
        scheduled(**options)
    assert caught.value.field == field
    assert text in caught.value.message
    assert caught.value.message  # readable, not empty
    assert len(registry()) == 0


def test_the_bare_form_says_a_rule_is_needed() -> None:
    with pytest.raises(ScheduleValidationError, match="needs a rule") as caught:
        scheduled(report)  # what `@scheduled` without () does
    assert (caught.value.field, caught.value.code) == ("rule", "missing_rule")


def test_a_positional_rule_says_to_pass_it_by_keyword() -> None:
    with pytest.raises(ScheduleValidationError, match=r"cron='0 8 \* \* \*'"):
        scheduled("0 8 * * *")


def test_below_the_task_decorator_is_refused_with_the_right_order() -> None:
    def plain() -> None: ...

    with pytest.raises(ScheduleValidationError, match=r"above @app\.task") as caught:
        scheduled(cron="0 8 * * *")(plain)
    assert caught.value.field == "task"


# -- the registry -----------------------------------------------------------------------------


def test_stacked_declarations_are_told_apart_by_objective(declared: ScheduleRegistry) -> None:
    @scheduled(cron="0 8 * * MON-FRI", timezone="Europe/Paris", objective="daily")
    @scheduled(cron="0 9 * * MON", timezone="Europe/Paris", objective="weekly")
    @app.task(name="tests.briefing")
    def briefing() -> None: ...

    assert [d.key for d in declared] == ["tests.briefing:daily", "tests.briefing:weekly"]
    daily, weekly = declared.for_task("tests.briefing")
    assert (daily.options.kind, daily.options.rule, daily.options.timezone) == (
        "cron",
        "0 8 * * MON-FRI",
        "Europe/Paris",
    )
    assert weekly.options.objective == "weekly"
    assert re.fullmatch(rf"{__name__}:\d+", daily.source)
    assert briefing.name == "tests.briefing"  # the task itself is returned unchanged


def test_key_defaults_to_task_and_objective_and_can_be_given() -> None:
    assert declare(every="1h").key == "tests.report:default"
    with isolated_registry():
        assert declare(every="1h", key="billing.hourly").key == "billing.hourly"


def test_a_duplicate_key_raises_naming_both_places() -> None:
    scheduled(cron="0 8 * * *")(report)
    with pytest.raises(ScheduleValidationError, match="declared twice") as caught:
        scheduled(cron="0 9 * * *")(report)
    assert (caught.value.field, caught.value.code) == ("key", "duplicate_key")
    assert __name__ in caught.value.message
    with pytest.raises(ScheduleValidationError, match="declared twice"):
        scheduled(every="1h", key="tests.report:default")(report)


def test_the_same_declaration_twice_is_not_a_duplicate() -> None:
    """A module imported twice (e.g. under two names) declares the same thing again."""
    for _ in range(2):
        scheduled(cron="0 8 * * *", objective="x")(report)
    assert len(registry()) == 1


def test_options_are_stored_in_canonical_form() -> None:
    paris = datetime(2026, 1, 1, 9, 0, 0, 123456).astimezone()  # any aware datetime
    options = declare(
        every=timedelta(minutes=15),
        anchor=paris,
        misfire="FIRE_ONCE",
        max_lateness="2m",
        catch_up_window=timedelta(hours=1),
        jitter=0,
        deadline="PT1H",
        retry_delay=30,
        expect_success_every="26h",
        kwargs={"b": 1, "a": [1, 2]},
    ).options
    assert (options.kind, options.rule) == ("interval", "900")
    assert options.anchor == paris.replace(microsecond=0)
    assert options.misfire_policy == "fire_once"
    assert (options.max_lateness, options.catch_up_window, options.jitter) == (120, 3600, 0)
    assert (options.deadline, options.retry_delay, options.expected_every) == (3600, 30, 93600)
    assert options.kwargs_json == '{"a":[1,2],"b":1}'
    assert options.overlap_policy is None  # not declared: the store's default applies


def test_equal_rules_written_differently_give_equal_declarations() -> None:
    with isolated_registry():
        first = declare(every="15m")
    with isolated_registry():
        second = declare(every=900)
    assert first == second
    at = datetime(2026, 6, 1, 8, tzinfo=UTC)
    with isolated_registry():
        utc = declare(at=at)
    with isolated_registry():
        local = declare(at=at.astimezone())
    assert utc.options.rule == local.options.rule == "2026-06-01T08:00:00+00:00"


def test_every_rule_kind_is_accepted() -> None:
    anchor = datetime(2026, 1, 5, 9, tzinfo=UTC)
    scheduled(cron="@daily", objective="cron")(report)
    scheduled(rrule="FREQ=WEEKLY;BYDAY=MO;BYHOUR=9;BYMINUTE=0", anchor=anchor, objective="r")(
        report
    )
    scheduled(rrule="FREQ=DAILY;BYHOUR=7;BYMINUTE=0", objective="r-no-anchor")(report)
    scheduled(every="1h", interval_mode="fixed_delay", objective="every")(report)
    scheduled(at=datetime(2026, 3, 29, 2, 30), timezone="Europe/Paris", objective="at")(report)
    kinds = {d.options.objective: d.options.kind for d in registry()}
    assert kinds == {
        "cron": "cron",
        "r": "rrule",
        "r-no-anchor": "rrule",
        "every": "interval",
        "at": "once",
    }


def test_isolated_registries_do_not_leak(declared: ScheduleRegistry) -> None:
    with isolated_registry() as inner:
        scheduled(cron="0 8 * * *")(report)
        assert len(inner) == 1
    assert len(declared) == 0
    assert registry() is declared


# -- task names -----------------------------------------------------------------------------


def test_task_names_are_read_without_building_lazy_tasks() -> None:
    lazy_app = Celery("lazy-test", set_as_current=False)

    @lazy_app.task(name="lazy.named")
    def named() -> None: ...

    @lazy_app.task
    def unnamed() -> None: ...

    @shared_task(name="shared.named")
    def shared() -> None: ...

    assert task_name_of(named) == "lazy.named"
    assert task_name_of(unnamed) == f"{__name__}.unnamed"
    assert task_name_of(shared) == "shared.named"
    assert not getattr(lazy_app, "finalized")  # noqa: B009 (not in the stubs)
    assert task_name_of(report) == "tests.report"


def test_an_active_window_is_declared_and_validated_at_import() -> None:
    from scheduler_app.authoring.declarations import isolated_registry, scheduled

    with isolated_registry() as declared:

        @scheduled(cron="0 * * * *", timezone="Europe/Paris", window="MON-FRI 09:00-18:00")
        @shared_task(name="tests.windowed")
        def windowed() -> None: ...

        [declaration] = declared.declarations()
        assert declaration.options.active_window == "MON-FRI 09:00-18:00"
        with pytest.raises(ScheduleValidationError) as error:
            scheduled(cron="0 * * * *", window="weekdays")
        assert error.value.field == "window"


def test_a_misspelled_option_is_refused_with_the_closest_one() -> None:
    with pytest.raises(ScheduleValidationError) as caught:
        scheduled(crom="0 9 * * *")  # type: ignore[call-overload]  # mypy refuses it too
    assert (caught.value.field, caught.value.code) == ("crom", "unknown_option")
    assert "did you mean cron=?" in caught.value.message
    with pytest.raises(ScheduleValidationError, match="has no option 'colour'"):
        scheduled(cron="0 9 * * *", colour="red")  # type: ignore[call-overload]


def test_the_keywords_are_written_once() -> None:
    """One list (``Declared``) for the signature, the checks and the docs' table."""
    assert set(inspect.signature(scheduled).parameters) == {"task", "options"}
    assert len(Declared.__annotations__) == 39


# -- policy values: ``misfire=CatchUp(window="24h", limit=12)`` declares what the flat keywords
# declare, each value is checked by the flat keyword's own check, an error names what the
# person wrote (``misfire.window``), and a value given both ways is refused.


def stored(**options: Any) -> dict[str, Any]:
    with isolated_registry() as fresh:
        scheduled(cron="0 6 * * *", timezone="Europe/Riga", **options)(report)
        [declaration] = fresh.declarations()
    return declaration.options.schedule_fields()


SAME: list[tuple[dict[str, Any], dict[str, Any]]] = [
    (
        {"misfire": CatchUp(window="24h", limit=12)},
        {"misfire": "catch_up", "catch_up_window": "24h", "catch_up_limit": 12},
    ),
    ({"misfire": CatchUp()}, {"misfire": "catch_up"}),
    ({"misfire": Skip(max_lateness="5m")}, {"misfire": "skip", "max_lateness": 300}),
    ({"misfire": FireOnce()}, {"misfire": "fire_once"}),
    (
        {"overlap": CancelPrevious(grace="2m")},
        {"overlap": "cancel_previous", "cancel_grace": 120},
    ),
    ({"overlap": Overlap(policy="buffer_all")}, {"overlap": "buffer_all"}),
    ({"deadline": Deadline(after="1h")}, {"deadline": 3600}),
    ({"retry": Retry(max_attempts=5, delay="30s")}, {"max_attempts": 5, "retry_delay": 30}),
    ({"retry": Retry(delay=0)}, {"retry_delay": 0}),
    (
        {"window": Window(hours="Mon-Fri 09:00-17:00", policy="skip")},
        {"window": "Mon-Fri 09:00-17:00", "window_policy": "skip"},
    ),
    # the two spellings side by side, each option its own way
    (
        {"misfire": CatchUp(limit=3), "max_attempts": 2, "overlap": "skip"},
        {
            "misfire": "catch_up",
            "catch_up_limit": 3,
            "retry": Retry(max_attempts=2),
            "overlap": "skip",
        },
    ),
]


@pytest.mark.parametrize(("typed", "flat"), SAME)
def test_a_policy_value_declares_what_its_flat_keywords_declare(
    typed: dict[str, Any], flat: dict[str, Any]
) -> None:
    assert stored(**typed) == stored(**flat)


def test_the_example_of_the_docs_is_stored_in_the_flat_fields() -> None:
    fields = stored(misfire=CatchUp(window="24h", limit=12), retry=Retry(max_attempts=5))
    assert (fields["misfire_policy"], fields["catch_up_window"]) == ("catch_up", 86_400)
    assert (fields["catch_up_limit"], fields["max_attempts"]) == (12, 5)


@dataclass(frozen=True, kw_only=True)
class Rerouting(CatchUp):
    """A subclass that would store its window as a ping URL: refused, as any subclass is."""

    flat = {"window": "ping_url"}


BAD: list[tuple[dict[str, Any], str, str]] = [
    ({"misfire": CatchUp(window="soon")}, "misfire.window", "is not a duration"),
    ({"misfire": CatchUp(limit=0)}, "misfire.limit", "whole number >= 1"),
    ({"misfire": Skip(max_lateness="-5m")}, "misfire.max_lateness", ""),
    ({"retry": Retry(delay="x")}, "retry.delay", "is not a duration"),
    ({"retry": Retry(max_attempts=0)}, "retry.max_attempts", "whole number >= 1"),
    ({"overlap": CancelPrevious(grace="a while")}, "overlap.grace", "is not a duration"),
    ({"overlap": Overlap(policy="sometimes")}, "overlap.policy", "allow"),
    ({"deadline": Deadline(after="later")}, "deadline.after", "is not a duration"),
    ({"deadline": Skip()}, "deadline", "takes Deadline(...)"),
    ({"window": Window(hours="Mon-Fri 25:00-26:00")}, "window.hours", "time of day"),
    ({"window": Window(hours="Mon-Fri 09:00-17:00", policy="later")}, "window.policy", ""),
    (
        {"misfire": CatchUp(window="1h"), "catch_up_window": "2h"},
        "catch_up_window",
        "given twice, as catch_up_window= and as misfire.window",
    ),
    (
        {"retry": Retry(max_attempts=4), "max_attempts": 4},
        "max_attempts",
        "given twice",
    ),
    ({"misfire": Retry()}, "misfire", "takes Skip(...), FireOnce(...), CatchUp(...)"),
    ({"overlap": CatchUp()}, "overlap", "takes CancelPrevious(...)"),
    ({"retry": 3}, "retry", "retry= takes Retry(...)"),
    ({"max_attempts": Retry()}, "max_attempts", "is given to retry="),
    ({"retyr": Retry()}, "retyr", "is given to retry=, not to retyr="),
    ({"retyr": 3}, "retyr", "did you mean retry=?"),
    ({"misfire": CatchUp}, "misfire", "write CatchUp(...) with its settings, not the class"),
    ({"retry": Retry}, "retry", "write Retry(...)"),
    ({"misfire": Rerouting(window="1h")}, "misfire", "not Rerouting(...)"),
]


@pytest.mark.parametrize(("options", "field", "message"), BAD)
def test_a_wrong_policy_value_is_refused_naming_what_was_written(
    options: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(ScheduleValidationError) as caught:
        scheduled(cron="0 6 * * *", **options)(report)
    assert caught.value.field == field
    assert message in str(caught.value)
    assert str(caught.value).startswith(f"{field}: ")
    assert registry().declarations() == ()


def test_an_event_declaration_takes_policy_values_too() -> None:
    declaration = declare_event(
        "books.closed", endpoint="ledger", cron="0 6 * * *", retry=Retry(max_attempts=7)
    )
    assert declaration.options.max_attempts == 7
    with pytest.raises(ScheduleValidationError) as caught:
        declare_event("books.closed", cron="0 6 * * *", misfire=CatchUp(limit=-1))
    assert caught.value.field == "misfire.limit"


def test_policy_values_are_frozen_and_compare_by_value() -> None:
    assert CatchUp(window="24h", limit=12) == CatchUp(window="24h", limit=12)
    with pytest.raises(AttributeError):
        CatchUp().limit = 3  # type: ignore[misc]
