"""Issue 24 part B through the service layer, the beat and the worker: ``exclude_holidays``,
solar schedules and positional ``args`` (stored, versioned, snapshotted, run, trusted)."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from io import StringIO
from typing import Any
from zoneinfo import ZoneInfo

import holidays
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from project.demo.tasks import echo
from scheduler_app.clock import FakeClock
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.handoff.protocol import HEADER, context_headers
from scheduler_app.models import Occurrence, OccurrenceState, ScheduleVersion
from scheduler_app.safety.handoff import NOT_ITS_VERSION, why_not_runnable
from scheduler_app.services import create_schedule, update_schedule
from tests.integration.support import MemoryPublisher, schedule, ticker

pytestmark = pytest.mark.django_db
DEC_20 = datetime(2027, 12, 20, 12, tzinfo=UTC)


def preview(*args: str) -> str:
    out = StringIO()
    call_command("schedule_preview", *args, stdout=out)
    return out.getvalue()


def tick_until(clock: FakeClock, until: datetime, publisher: MemoryPublisher) -> None:
    beat = ticker(publisher, clock)
    while clock.now() < until:
        clock.advance(timedelta(hours=6))
        beat.tick()


# --- exclude_holidays ---------------------------------------------------------------------


def test_the_beat_leaves_out_public_holidays_in_the_schedules_zone() -> None:
    clock = FakeClock(DEC_20)
    row = schedule(
        clock, kind="cron", rule="0 9 * * MON-FRI", timezone="Europe/Riga", exclude_holidays="lv"
    )
    assert row.exclude_holidays == "LV"  # stored in one canonical form
    tick_until(clock, datetime(2028, 1, 4, 12, tzinfo=UTC), MemoryPublisher())
    days = sorted(
        slot.astimezone(ZoneInfo("Europe/Riga")).date()
        for slot in Occurrence.objects.filter(schedule=row).values_list("scheduled_for", flat=True)
    )
    official = holidays.country_holidays("LV", years=[2027, 2028])
    weekdays = [date(2027, 12, 21) + timedelta(days=n) for n in range(15)]
    expected = [day for day in weekdays if day.weekday() < 5 and day not in official]
    assert days == expected
    assert date(2027, 12, 24) not in days and date(2027, 12, 23) in days


def test_the_version_records_the_holidays_data_so_an_update_shows() -> None:
    clock = FakeClock(DEC_20)
    row = schedule(clock, kind="cron", rule="0 9 * * *", timezone="Europe/Riga")
    first = ScheduleVersion.objects.get(schedule=row, version=1).definition
    assert first["exclude_holidays"] == "" and "holidays_data" not in first
    row = update_schedule(row.id, expected_version=1, clock=clock, exclude_holidays="US-NY")
    second = ScheduleVersion.objects.get(schedule=row, version=2).definition
    assert second["exclude_holidays"] == "US-NY"
    assert second["holidays_data"] == holidays.__version__


@pytest.mark.parametrize(
    ("code", "words"),
    [("XX", "unknown country 'XX'"), ("US-ZZ", "unknown subdivision 'ZZ'"), (7, "a code")],
)
def test_unknown_holiday_codes_are_refused_at_the_service(code: object, words: str) -> None:
    with pytest.raises(ScheduleValidationError) as caught:
        schedule(FakeClock(DEC_20), kind="cron", rule="0 9 * * *", exclude_holidays=code)
    assert caught.value.field == "exclude_holidays"
    assert words in caught.value.message


def test_preview_names_the_holidays_it_skips() -> None:
    text = preview(
        "--cron", "0 9 * * MON-FRI", "--tz", "Europe/Riga", "--exclude-holidays", "LV",
        "--from", "2027-12-22", "--count", "3",
    )  # fmt: skip
    assert "skips Fri 2027-12-24: Christmas Eve (LV)" in text
    assert "Mon 2027-12-27 09:00:00 +02:00" in text
    data = json.loads(
        preview(
            "--cron",
            "0 9 * * *",
            "--tz",
            "America/New_York",
            "--exclude-holidays",
            "US-NY",
            "--from",
            "2027-02-11",
            "--count",
            "2",
            "--json",
        )
    )
    assert [slot["local"][:10] for slot in data["slots"]] == ["2027-02-11", "2027-02-13"]
    assert data["skipped"] == ["skips Fri 2027-02-12: Lincoln's Birthday (US-NY)"]
    with pytest.raises(CommandError, match="--exclude-holidays: unknown country 'ZZ'"):
        preview("--cron", "0 9 * * *", "--exclude-holidays", "ZZ")


# --- solar ---------------------------------------------------------------------------------


def test_a_solar_schedule_is_stored_and_runs_at_each_sunrise() -> None:
    clock = FakeClock(datetime(2026, 11, 24, tzinfo=UTC))
    row = schedule(clock, kind="solar", rule="  SUNRISE 69.6496   18.956 ", timezone="Europe/Oslo")
    assert row.rule == "sunrise 69.6496 18.956"
    assert row.next_run_at == datetime(2026, 11, 24, 9, 34, 39, tzinfo=UTC)
    tick_until(clock, datetime(2026, 11, 30, tzinfo=UTC), MemoryPublisher())
    slots = list(Occurrence.objects.filter(schedule=row).values_list("scheduled_for", flat=True))
    assert [slot.date() for slot in sorted(slots)] == [date(2026, 11, d) for d in (24, 25, 26)]
    row.refresh_from_db()
    assert row.next_run_at is not None and row.next_run_at.date() == date(2027, 1, 16)


def test_bad_solar_rules_are_refused_at_the_service() -> None:
    with pytest.raises(ScheduleValidationError) as caught:
        schedule(FakeClock(DEC_20), kind="solar", rule="sunrise 91 0")
    assert caught.value.field == "solar.latitude"


def test_preview_of_a_solar_rule_notes_the_polar_night() -> None:
    data = json.loads(
        preview(
            "--solar",
            "sunrise",
            "--latitude",
            "69.6496",
            "--longitude",
            "18.956",
            "--tz",
            "Europe/Oslo",
            "--from",
            "2026-11-25",
            "--count",
            "3",
            "--json",
        )
    )
    assert [slot["local"][:10] for slot in data["slots"]] == [
        "2026-11-25",
        "2026-11-26",
        "2027-01-16",
    ]
    assert data["skipped"] == [
        "2026-11-27 to 2027-01-15: no sunrise (polar night: the sun stays below the horizon)"
    ]
    assert data["description"] == "At sunrise at 69.6496, 18.956, Europe/Oslo"
    with pytest.raises(CommandError, match="needs --longitude"):
        preview("--solar", "sunset", "--latitude", "56.9")


# --- positional args -----------------------------------------------------------------------


def due_echo(**fields: Any) -> Occurrence:
    clock = FakeClock(DEC_20)
    row = schedule(clock, task="demo.echo", kind="interval", rule="60s", **fields)
    assert row.next_run_at is not None
    clock.set(row.next_run_at)
    ticker(MemoryPublisher(), clock).tick()
    return Occurrence.objects.select_related("schedule_version", "schedule").get(schedule=row)


def test_args_are_stored_versioned_snapshotted_and_run() -> None:
    occurrence = due_echo(args=[7, "eu", {"deep": [1]}], kwargs={"mode": "full"})
    assert occurrence.args == [7, "eu", {"deep": [1]}]  # written by the beat's bulk insert
    assert occurrence.schedule_version.definition["args"] == [7, "eu", {"deep": [1]}]
    result = echo.apply(
        args=occurrence.args,
        kwargs=occurrence.kwargs,
        task_id=str(occurrence.id),
        headers={HEADER: context_headers(occurrence)},
    )
    assert result.get() == {"args": [7, "eu", {"deep": [1]}], "kwargs": {"mode": "full"}}
    occurrence.refresh_from_db()
    assert occurrence.state == OccurrenceState.SUCCEEDED


def test_a_forged_message_with_other_args_runs_the_stored_ones(
    caplog: pytest.LogCaptureFixture,
) -> None:
    occurrence = due_echo(args=[1], kwargs={})
    forged = echo.apply(
        args=["rm -rf /", 2],
        kwargs={"admin": True},
        task_id=str(occurrence.id),
        headers={HEADER: context_headers(occurrence)},
    )
    assert forged.get() == {"args": [1], "kwargs": {}}
    assert any(
        r.action == "occurrence.payload_mismatch" for r in caplog.records if hasattr(r, "action")
    )


def test_a_row_whose_args_were_changed_past_the_services_is_not_its_versions() -> None:
    occurrence = due_echo(args=[1])
    Occurrence.objects.filter(pk=occurrence.pk).update(args=[999])
    occurrence.refresh_from_db()
    assert why_not_runnable(occurrence) == NOT_ITS_VERSION


@pytest.mark.parametrize(
    ("args", "field", "words"),
    [
        ("1,2", "args", "must be a JSON list"),
        ({"a": 1}, "args", "must be a JSON list"),
        ([float("nan")], "args", "not valid JSON"),
        ([2**70], "args", "64-bit integer"),
    ],
)
def test_bad_args_are_refused(args: object, field: str, words: str) -> None:
    with pytest.raises(ScheduleValidationError) as caught:
        schedule(FakeClock(DEC_20), task="demo.echo", kind="cron", rule="0 9 * * *", args=args)
    assert caught.value.field == field
    assert words in caught.value.message


def test_args_and_kwargs_count_together_against_the_payload_limit(settings: Any) -> None:
    settings.SCHEDULER_MAX_PAYLOAD_BYTES = 100
    half = "x" * 45
    schedule(FakeClock(DEC_20), task="demo.echo", kind="cron", rule="0 9 * * *", args=[half])
    with pytest.raises(ScheduleValidationError) as caught:
        schedule(
            FakeClock(DEC_20),
            task="demo.echo",
            kind="cron",
            rule="0 9 * * *",
            args=[half],
            kwargs={"k": half},
        )
    assert caught.value.code == "payload_too_large"
    assert "kwargs and args" in caught.value.message


def test_editing_args_makes_a_new_version_and_new_occurrences_carry_them() -> None:
    clock = FakeClock(DEC_20)
    row = create_schedule(clock=clock, task="demo.echo", kind="interval", rule="60s", args=[1])
    clock.advance(30)
    # The slot of 12:00 is due: the edit materializes it under version 1, with its args.
    row = update_schedule(row.id, expected_version=1, clock=clock, args=[2, 3])
    assert row.version == 2 and row.args == [2, 3]
    assert row.next_run_at is not None
    clock.set(row.next_run_at)
    ticker(MemoryPublisher(), clock).tick()
    rows = Occurrence.objects.filter(schedule=row).order_by("scheduled_for")
    assert list(rows.values_list("schedule_version__version", "args")) == [(1, [1]), (2, [2, 3])]
