"""Text and RFC 5545 content lines through the service, the contract and the preview command:
the stored schedule holds the structured rule, never the text; content lines survive a round
trip unchanged."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from scheduler_app.clock import FakeClock
from scheduler_app.contract import export_all, import_text
from scheduler_app.definition.schedule import timing_for
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.models import Schedule
from scheduler_app.timing import slots_between
from tests.integration.contract_support import COMPARED, snapshot, wipe
from tests.integration.support import START, reload, schedule

pytestmark = pytest.mark.django_db
CONTENT_LINES = (
    "DTSTART;TZID=Europe/Riga:20260105T090000\n"
    "RRULE:FREQ=WEEKLY;BYDAY=MO,WE,FR\n"
    "EXDATE;TZID=Europe/Riga:20260107T090000,20260109T090000\n"
    "EXDATE:20260112T070000Z\n"
    "RDATE;TZID=Europe/Riga:20260110T120000"
)


def riga_days(stored: Schedule, count: int = 5) -> list[str]:
    slots = slots_between(timing_for(stored), START, datetime(2027, 1, 1, tzinfo=UTC), count)
    return [f"{s.astimezone(timing_for(stored).zone):%a %d %H:%M}" for s in slots]


# -- create_schedule(text=...) -------------------------------------------------------------------


def test_text_is_stored_as_the_structured_rule() -> None:
    created = schedule(FakeClock(START), text="every weekday at 9:00 in Europe/Riga")
    stored = reload(created)
    assert (stored.kind, stored.rule, stored.timezone) == ("cron", "0 9 * * MON-FRI", "Europe/Riga")
    assert stored.next_run_at == datetime(2026, 1, 5, 7, 0, tzinfo=UTC)  # Monday 09:00 Riga
    assert not hasattr(stored, "text")


def test_text_with_a_window_stores_the_window() -> None:
    created = schedule(FakeClock(START), text="every 30 minutes between 8:00 and 18:00 on weekdays")
    stored = reload(created)
    assert (stored.rule, stored.active_window, stored.window_policy) == (
        "*/30 8-18 * * MON-FRI",
        "MON-FRI 08:00-18:01",
        "skip",
    )
    assert stored.next_run_at == datetime(2026, 1, 5, 8, 0, tzinfo=UTC)


BAD_TEXT: list[tuple[dict[str, Any], str, str]] = [
    ({"text": "every weekday at 9:00 in Europe/Rga"}, "text", "'Europe/Rga'"),
    ({"text": "daily at 9:00", "kind": "cron"}, "kind", "leave out kind"),
    ({"text": "daily at 9:00", "rule": "0 9 * * *"}, "rule", "leave out rule"),
    ({"text": "daily at 9:00 in Europe/Riga", "timezone": "UTC"}, "timezone", "keep one"),
    ({"text": "on 5 September 2020 at 14:00"}, "rule", "no slot at or after now"),
]


@pytest.mark.parametrize(("fields", "field", "words"), BAD_TEXT)
def test_bad_text_stores_nothing(fields: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(ScheduleValidationError) as caught:
        schedule(FakeClock(START), **fields)
    assert caught.value.field == field
    assert words in caught.value.message
    assert Schedule.objects.count() == 0


# -- content lines ---------------------------------------------------------------------------


def test_content_lines_take_the_zone_of_dtstart_and_keep_the_text() -> None:
    created = schedule(FakeClock(START), kind="rrule", rule=CONTENT_LINES)
    stored = reload(created)
    assert (stored.timezone, stored.rule) == ("Europe/Riga", CONTENT_LINES)
    assert riga_days(stored) == [
        "Mon 05 09:00",
        "Sat 10 12:00",  # RDATE
        "Wed 14 09:00",  # Wed 07, Fri 09 and Mon 12 (given in UTC) are EXDATEs
        "Fri 16 09:00",
        "Mon 19 09:00",
    ]


def test_content_lines_survive_export_and_import(settings: Any) -> None:
    clock = FakeClock(START)
    schedule(clock, kind="rrule", rule=CONTENT_LINES, key="lines")
    before = snapshot()
    for style in ("native", "spec"):
        exported = export_all(style=style)  # type: ignore[arg-type]
        wipe()
        import_text(exported, clock=clock)
        after = snapshot()
        for pk, values in before.items():
            for name, old, new in zip(COMPARED, values, after[pk], strict=True):
                assert old == new, f"{style}: {name} came back as {new!r}, was {old!r}"
        assert reload(Schedule.objects.get()).rule == CONTENT_LINES


def test_content_lines_with_another_zone_are_refused() -> None:
    with pytest.raises(ScheduleValidationError) as caught:
        schedule(FakeClock(START), kind="rrule", rule=CONTENT_LINES, timezone="Europe/Paris")
    assert caught.value.field == "rrule.DTSTART"
    assert "Europe/Paris" in caught.value.message


# -- schedule_preview --------------------------------------------------------------------------


def preview(*args: str) -> str:
    out = StringIO()
    call_command("schedule_preview", *args, stdout=out)
    return out.getvalue()


def test_preview_text_json_carries_the_parsed_rule_and_the_slots() -> None:
    data = json.loads(
        preview(
            "--text",
            "every weekday at 9:00 in Europe/Riga",
            "--after",
            "2027-03-26T00:00:00Z",
            "--count",
            "3",
            "--json",
        )
    )
    assert {k: data[k] for k in ("kind", "rule", "timezone", "anchor")} == {
        "kind": "cron",
        "rule": "0 9 * * MON-FRI",
        "timezone": "Europe/Riga",
        "anchor": None,
    }
    assert "window" not in data
    assert [slot["local"] for slot in data["slots"]] == [
        "2027-03-26T09:00:00+02:00",
        "2027-03-29T09:00:00+03:00",  # after the spring change: still 09:00 local
        "2027-03-30T09:00:00+03:00",
    ]


def test_preview_text_with_a_window() -> None:
    data = json.loads(
        preview(
            "--text",
            "every 15 minutes between 8:00 and 18:00",
            "--tz",
            "Europe/Riga",
            "--after",
            "2027-03-26T15:40:00Z",
            "--count",
            "2",
            "--json",
        )
    )
    assert (data["window"], data["window_policy"]) == ("MON-SUN 08:00-18:01", "skip")
    assert [slot["local"] for slot in data["slots"]] == [
        "2027-03-26T17:45:00+02:00",
        "2027-03-26T18:00:00+02:00",  # the closing time is a slot
    ]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--text", "every mondy at 9:00"], "--text: could not read 'mondy'"),
        (["--text", "daily at 9:00 in Europe/Riga", "--tz", "UTC"], "keep one of them"),
        (["--text", "daily at 9:00", "--window", "MON 08:00-09:00"], "--window"),
        (["--text", "daily at 9:00", "--cron", "0 9 * * *"], "not allowed with argument"),
    ],
)
def test_preview_text_errors_are_one_line(args: list[str], words: str) -> None:
    with pytest.raises(CommandError) as caught:
        preview(*args, "--after", "2027-01-01T00:00:00Z")
    assert words in str(caught.value)
    assert "\n" not in str(caught.value)
    assert caught.value.returncode == 2


def test_preview_rrule_content_lines() -> None:
    text = preview("--rrule", CONTENT_LINES, "--after", "2026-01-04T00:00:00Z", "--count", "3")
    assert "plus 1 date, except 3 dates, Europe/Riga" in text
    assert "Sat 2026-01-10 12:00:00 +02:00" in text
    assert "Wed 2026-01-07" not in text


def test_preview_text_table_shows_the_stored_rule_and_window() -> None:
    text = preview(
        "--text",
        "every 15 minutes between 8:00 and 18:00 on weekdays in Europe/Riga",
        "--after",
        "2027-03-26T15:30:00Z",
        "--count",
        "3",
    )
    lines = text.splitlines()
    assert (
        lines[1]
        == "Rule: cron '*/15 8-18 * * MON-FRI', window 'MON-FRI 08:00-18:01' (skip outside)"
    )
    assert "Mon 2027-03-29 08:00:00 +03:00" in text
