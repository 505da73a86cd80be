"""``@scheduled(text=...)``: English text read at decoration time into the structured rule."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from celery import Celery

from scheduler_app.authoring.declarations import (
    Declaration,
    ScheduleRegistry,
    isolated_registry,
    registry,
    scheduled,
)
from scheduler_app.errors import ScheduleValidationError

app = Celery("declarations-text-test", set_as_current=False)


@app.task(name="tests.text_report")
def report() -> None: ...


@pytest.fixture(autouse=True)
def declared() -> Iterator[ScheduleRegistry]:
    with isolated_registry() as fresh:
        yield fresh


def declare(**options: Any) -> Declaration:
    scheduled(**options)(report)
    [declaration] = registry().declarations()
    return declaration


def test_text_becomes_the_structured_rule() -> None:
    options = declare(text="every weekday at 9:00 in Europe/Riga").options
    assert (options.kind, options.rule, options.timezone) == (
        "cron",
        "0 9 * * MON-FRI",
        "Europe/Riga",
    )


def test_text_with_a_window_and_an_anchor() -> None:
    options = declare(text="every 15 minutes between 8:00 and 18:00 on weekdays").options
    assert (options.rule, options.active_window, options.window_policy) == (
        "*/15 8-18 * * MON-FRI",
        "MON-FRI 08:00-18:01",  # 18:00 runs: a stored window leaves out its closing minute
        "skip",
    )
    with isolated_registry():
        rrule = declare(text="every 2 weeks on monday at 9:00 starting 4 January 2027").options
    assert rrule.kind == "rrule"
    assert rrule.anchor == datetime(2027, 1, 4, tzinfo=UTC)


def test_text_takes_the_timezone_parameter_when_it_names_none() -> None:
    options = declare(text="daily at 7:30", timezone="Asia/Tokyo").options
    assert (options.rule, options.timezone) == ("30 7 * * *", "Asia/Tokyo")


@pytest.mark.parametrize(
    ("options", "field", "words"),
    [
        ({"text": "every mondy at 9:00"}, "text", "'mondy'"),
        ({"text": "daily at 9:00", "cron": "0 9 * * *"}, "cron", "leave out cron="),
        ({"text": "daily at 9:00", "anchor": datetime(2027, 1, 1, tzinfo=UTC)}, "anchor", "text="),
        ({"text": "daily at 9:00 in Europe/Riga", "timezone": "UTC"}, "timezone", "Europe/Riga"),
        (
            {"text": "every 15 minutes between 8:10 and 9:50", "window": "MON 08:00-09:00"},
            "window",
            "",
        ),
        (
            {"text": "every 15 minutes between 8:10 and 9:50", "window_policy": "defer"},
            "window_policy",
            "",
        ),
    ],
)
def test_bad_text_raises_at_decoration_time(
    options: dict[str, Any], field: str, words: str
) -> None:
    with pytest.raises(ScheduleValidationError) as caught:
        scheduled(**options)
    assert caught.value.field == field
    assert words in caught.value.message
    assert len(registry()) == 0


def test_rrule_content_lines_take_the_zone_of_dtstart() -> None:
    rule = "DTSTART;TZID=Europe/Riga:20270104T090000\nRRULE:FREQ=WEEKLY;BYDAY=MO"
    options = declare(rrule=rule).options
    assert (options.kind, options.timezone, options.rule) == ("rrule", "Europe/Riga", rule)
