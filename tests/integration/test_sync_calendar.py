"""``@scheduled(solar=..., exclude_holidays=..., args=...)``: validated when the decorator
runs, synced as a code schedule, and unchanged on the next sync."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from project.celery import app as celery_app
from project.demo.tasks import echo
from scheduler_app.authoring.declarations import ScheduleRegistry, isolated_registry, scheduled
from scheduler_app.authoring.sync import sync_schedules
from scheduler_app.clock import FakeClock
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.models import Schedule
from tests.integration.support import START

pytestmark = pytest.mark.django_db


@pytest.fixture
def declared() -> Iterator[ScheduleRegistry]:
    celery_app.loader.import_default_modules()  # before isolating: see isolated_registry()
    with isolated_registry() as fresh:
        yield fresh


def test_solar_holidays_and_args_are_declared_synced_and_stable(
    declared: ScheduleRegistry,
) -> None:
    clock = FakeClock(START)
    scheduled(
        solar="Sunset  56.9496 24.1052",
        timezone="Europe/Riga",
        exclude_holidays="lv",
        args=[1, "eu"],
        kwargs={"mode": "lights"},
        objective="lights",
    )(echo)
    report = sync_schedules(clock=clock, declarations=declared)
    assert [entry.action for entry in report.entries] == ["create"]
    row = Schedule.objects.get(key="demo.echo:lights")
    assert (row.kind, row.rule, row.exclude_holidays) == ("solar", "sunset 56.9496 24.1052", "LV")
    assert (row.args, row.kwargs) == ([1, "eu"], {"mode": "lights"})
    again = sync_schedules(clock=clock, declarations=declared)
    assert [entry.action for entry in again.entries] == ["unchanged"]


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"solar": "sunrise 95 0"}, "solar.latitude"),
        ({"cron": "0 9 * * *", "exclude_holidays": "XX"}, "exclude_holidays"),
        ({"cron": "0 9 * * *", "args": "1,2"}, "args"),
        ({"cron": "0 9 * * *", "args": [object()]}, "args"),
        ({"cron": "0 9 * * *", "solar": "noon 0 0"}, "rule"),
    ],
)
def test_the_decorator_refuses_bad_calendar_options_at_once(
    declared: ScheduleRegistry, options: dict[str, object], field: str
) -> None:
    with pytest.raises(ScheduleValidationError) as caught:
        scheduled(**options)  # type: ignore[arg-type]
    assert caught.value.field == field
