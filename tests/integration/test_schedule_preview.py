"""``manage.py schedule_preview``: its exact JSON form, its table, and one-line errors (exit 2).

Every test passes ``--after`` (a literal instant) except the one that checks the default.
"""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from scheduler_app import services

REPO_ROOT = Path(__file__).resolve().parents[2]
RIGA_SPRING = ["--tz", "Europe/Riga", "--after", "2026-03-28T00:00:00Z"]
RIGA_AUTUMN = ["--tz", "Europe/Riga", "--after", "2026-10-24T00:00:00Z"]


def preview(*args: str) -> str:
    out = StringIO()
    call_command("schedule_preview", *args, stdout=out)
    return out.getvalue()


def preview_json(*args: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(preview(*args, "--json"))
    return result


def run_manage(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "schedule_preview", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def slot(utc: str, local: str, note: str | None = None) -> dict[str, str | None]:
    return {"utc": utc, "local": local, "note": note}


RIGA_SPRING_JSON = {
    "description": "At 03:30, Europe/Riga",
    "timezone": "Europe/Riga",
    "slots": [
        slot("2026-03-28T01:30:00Z", "2026-03-28T03:30:00+02:00"),
        slot(
            "2026-03-29T01:00:00Z",
            "2026-03-29T04:00:00+03:00",
            "03:30 does not exist (DST gap): moved to 04:00, when the clock jumps",
        ),
        slot("2026-03-30T00:30:00Z", "2026-03-30T03:30:00+03:00"),
    ],
}


# --- JSON form ---------------------------------------------------------------------------


def test_json_spring_forward_auto_is_next_valid_for_a_fixed_hour_cron() -> None:
    assert preview_json("--cron", "30 3 * * *", *RIGA_SPRING, "--count", "3") == RIGA_SPRING_JSON


def test_json_spring_forward_shift_and_skip() -> None:
    shifted = preview_json(
        "--cron", "30 3 * * *", *RIGA_SPRING, "--count", "2", "--nonexistent", "shift"
    )
    assert shifted["slots"][1] == slot(
        "2026-03-29T01:30:00Z",
        "2026-03-29T04:30:00+03:00",
        "03:30 does not exist (DST gap): shifted to 04:30",
    )
    skipped = preview_json(
        "--cron", "30 3 * * *", *RIGA_SPRING, "--count", "2", "--nonexistent", "skip"
    )
    assert [s["utc"] for s in skipped["slots"]] == ["2026-03-28T01:30:00Z", "2026-03-30T00:30:00Z"]


def test_json_fall_back_both_gives_two_instants() -> None:
    result = preview_json(
        "--cron", "30 3 * * *", *RIGA_AUTUMN, "--count", "3", "--ambiguous", "both"
    )
    assert result["slots"] == [
        slot("2026-10-24T00:30:00Z", "2026-10-24T03:30:00+03:00"),
        slot(
            "2026-10-25T00:30:00Z", "2026-10-25T03:30:00+03:00", "03:30 happens twice: first of two"
        ),
        slot(
            "2026-10-25T01:30:00Z",
            "2026-10-25T03:30:00+02:00",
            "03:30 happens twice: second of two",
        ),
    ]


def test_json_fall_back_auto_fires_once_for_a_fixed_hour_cron() -> None:
    result = preview_json("--cron", "30 3 * * *", *RIGA_AUTUMN, "--count", "3")
    assert [s["utc"] for s in result["slots"]] == [
        "2026-10-24T00:30:00Z",
        "2026-10-25T00:30:00Z",
        "2026-10-26T01:30:00Z",
    ]
    assert result["slots"][1]["note"] == "03:30 happens twice: first of two; the repeat is skipped"


def test_json_fall_back_last() -> None:
    result = preview_json(
        "--cron", "30 3 * * *", *RIGA_AUTUMN, "--count", "2", "--ambiguous", "last"
    )
    assert result["slots"][1] == slot(
        "2026-10-25T01:30:00Z",
        "2026-10-25T03:30:00+02:00",
        "03:30 happens twice: second of two; the first is skipped",
    )


def test_json_every_n_minutes_cron_keeps_real_spacing_through_the_gap() -> None:
    result = preview_json(
        "--cron",
        "*/30 * * * *",
        "--tz",
        "Europe/Riga",
        "--after",
        "2026-03-29T00:30:00Z",
        "--count",
        "3",
    )
    assert [s["local"] for s in result["slots"]] == [
        "2026-03-29T04:00:00+03:00",
        "2026-03-29T04:30:00+03:00",
        "2026-03-29T05:00:00+03:00",
    ]
    assert all(s["note"] is None for s in result["slots"])


def test_json_half_hour_dst_of_lord_howe() -> None:
    result = preview_json(
        "--cron",
        "15 2 * * *",
        "--tz",
        "Australia/Lord_Howe",
        "--after",
        "2026-10-03T00:00:00Z",
        "--count",
        "1",
    )
    assert result["slots"] == [
        slot(
            "2026-10-03T15:30:00Z",
            "2026-10-04T02:30:00+11:00",
            "02:15 does not exist (DST gap): moved to 02:30, when the clock jumps",
        )
    ]


def test_json_a_skipped_day_names_both_dates_in_the_note() -> None:
    # Pacific/Apia jumped from 2011-12-29 24:00 (-10) to 2011-12-31 00:00 (+14).
    args = ["--cron", "0 9 * * *", "--tz", "Pacific/Apia", "--after", "2011-12-30T00:00:00Z"]
    result = preview_json(*args, "--count", "1", "--nonexistent", "shift")
    assert result["slots"] == [
        slot(
            "2011-12-30T19:00:00Z",
            "2011-12-31T09:00:00+14:00",
            "2011-12-30 09:00 does not exist (DST gap): shifted to 2011-12-31 09:00",
        )
    ]


def test_json_every_is_a_fixed_rate_grid_from_the_anchor() -> None:
    result = preview_json(
        "--every", "90s", "--anchor", "2026-03-29T00:00:00Z", "--after", "2026-03-29T00:01:00Z",
        "--tz", "Europe/Riga", "--count", "2",
    )  # fmt: skip
    assert result == {
        "description": "Every 1m30s (fixed rate, from 2026-03-29 00:00:00 UTC), Europe/Riga",
        "timezone": "Europe/Riga",
        "slots": [
            slot("2026-03-29T00:01:30Z", "2026-03-29T02:01:30+02:00"),
            slot("2026-03-29T00:03:00Z", "2026-03-29T02:03:00+02:00"),
        ],
    }


def test_json_every_without_anchor_counts_from_after() -> None:
    result = preview_json("--every", "6h", "--after", "2026-03-29T00:00:00Z", "--count", "2")
    assert [s["utc"] for s in result["slots"]] == ["2026-03-29T06:00:00Z", "2026-03-29T12:00:00Z"]


def test_json_at_with_offset_is_an_instant() -> None:
    result = preview_json("--at", "2026-03-29T03:30:00+03:00", *RIGA_SPRING)
    assert result["slots"] == [slot("2026-03-29T00:30:00Z", "2026-03-29T02:30:00+02:00")]


def test_json_at_without_offset_is_local_wall_time_in_tz() -> None:
    result = preview_json("--at", "2026-03-29T03:30", *RIGA_SPRING)
    assert result["slots"] == [
        slot(
            "2026-03-29T01:30:00Z",
            "2026-03-29T04:30:00+03:00",
            "03:30 does not exist (DST gap): shifted to 04:30",
        )
    ]


def test_json_at_in_the_past_has_no_slots() -> None:
    result = preview_json("--at", "2026-01-01T00:00:00Z", *RIGA_SPRING)
    assert result["slots"] == []


def test_json_rrule_with_anchor_across_new_york_spring_forward() -> None:
    result = preview_json(
        "--rrule", "FREQ=WEEKLY;BYDAY=MO,WE;BYHOUR=9;BYMINUTE=0", "--anchor", "2026-01-05T09:00",
        "--tz", "America/New_York", "--after", "2026-03-01T00:00:00Z", "--count", "3",
    )  # fmt: skip
    assert [s["local"] for s in result["slots"]] == [
        "2026-03-02T09:00:00-05:00",
        "2026-03-04T09:00:00-05:00",
        "2026-03-09T09:00:00-04:00",
    ]
    assert result["description"] == "Every Monday and Wednesday at 09:00, America/New_York"


def test_json_rrule_without_anchor_starts_at_after() -> None:
    result = preview_json(
        "--rrule", "FREQ=DAILY", "--after", "2026-03-28T00:00:00Z", "--count", "2"
    )
    assert [s["utc"] for s in result["slots"]] == ["2026-03-29T00:00:00Z", "2026-03-30T00:00:00Z"]


# --- --from: a chosen local start -------------------------------------------------------


def test_from_starts_at_a_local_date_across_next_springs_dst_change() -> None:
    result = preview_json(
        "--rrule", "FREQ=WEEKLY;BYDAY=SU;BYHOUR=3;BYMINUTE=30", "--tz", "Europe/Riga",
        "--anchor", "2026-01-04T03:30", "--from", "2027-03-21T03:30", "--count", "2",
    )  # fmt: skip
    assert result["slots"] == [
        slot("2027-03-21T01:30:00Z", "2027-03-21T03:30:00+02:00"),  # a slot at --from is kept
        slot(
            "2027-03-28T01:30:00Z",
            "2027-03-28T04:30:00+03:00",
            "03:30 does not exist (DST gap): shifted to 04:30",
        ),
    ]


def test_from_is_the_default_anchor_and_may_carry_an_offset() -> None:
    result = preview_json("--every", "1h", "--from", "2020-01-01T10:00:00Z", "--count", "2")
    assert [s["utc"] for s in result["slots"]] == ["2020-01-01T10:00:00Z", "2020-01-01T11:00:00Z"]


def test_from_in_the_table_heading() -> None:
    text = preview("--cron", "0 9 * * *", "--tz", "Europe/Riga", "--from", "2027-01-01")
    assert text.splitlines()[1].startswith("Slots from 2026-12-31T22:00:00Z;")


@pytest.mark.django_db
def test_from_previews_a_stored_schedule_from_that_date() -> None:
    schedule = services.create_schedule(
        task="demo.ping", kind="cron", rule="0 9 * * MON", timezone="America/New_York"
    )
    result = preview_json("--schedule", str(schedule.pk), "--from", "2027-03-08", "--count", "2")
    assert [s["local"] for s in result["slots"]] == [
        "2027-03-08T09:00:00-05:00",
        "2027-03-15T09:00:00-04:00",  # after New York's spring-forward (March 14)
    ]


# --- table form --------------------------------------------------------------------------


def test_table_has_description_columns_and_notes() -> None:
    text = preview("--cron", "30 3 * * *", *RIGA_SPRING, "--count", "3")
    lines = text.splitlines()
    assert lines[0] == "At 03:30, Europe/Riga"
    assert "DST: nonexistent=next_valid, ambiguous=first" in lines[1]
    assert lines[3].split() == ["Local", "(Europe/Riga)", "UTC", "Note"]
    assert lines[5].startswith(
        "Sun 2026-03-29 04:00:00 +03:00  2026-03-29T01:00:00Z  03:30 does not exist"
    )
    assert len(lines) == 7


def test_table_shows_both_copies_of_a_repeated_time() -> None:
    text = preview("--cron", "30 3 * * *", *RIGA_AUTUMN, "--count", "3", "--ambiguous", "both")
    assert "03:30:00 +03:00  2026-10-25T00:30:00Z  03:30 happens twice: first of two" in text
    assert "03:30:00 +02:00  2026-10-25T01:30:00Z  03:30 happens twice: second of two" in text


def test_table_says_when_there_are_no_slots() -> None:
    text = preview("--at", "2026-01-01T00:00:00Z", *RIGA_SPRING)
    assert "No slots" in text


def test_default_after_is_now() -> None:
    result = preview_json("--every", "1h", "--count", "1")
    assert len(result["slots"]) == 1


# --- subprocess: the real command line ---------------------------------------------------


def test_command_line_json_is_exactly_one_object() -> None:
    done = run_manage("--cron", "30 3 * * *", *RIGA_SPRING, "--count", "3", "--json")
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout) == RIGA_SPRING_JSON


def test_command_line_table() -> None:
    done = run_manage("--cron", "30 3 * * *", *RIGA_AUTUMN, "--count", "3", "--ambiguous", "both")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("At 03:30, Europe/Riga\n")
    assert "second of two" in done.stdout


# --- bad input: exit 2, one line on stderr, nothing on stdout -----------------------------

AFTER = ["--after", "2026-03-28T00:00:00Z"]
BAD_INPUTS = {
    "cron out of range": (["--cron", "61 * * * *", *AFTER], "--cron (minute)"),
    "cron field count": (["--cron", "* * *", *AFTER], "expected 5 fields"),
    "unknown zone": (["--cron", "0 9 * * *", "--tz", "Mars/Base", *AFTER], "--tz"),
    "naive after": (["--cron", "0 9 * * *", "--after", "2026-03-28T00:00:00"], "no offset"),
    "bad after": (["--cron", "0 9 * * *", "--after", "yesterday"], "--after"),
    "no rule": (AFTER, "one of the arguments --cron --rrule --every --at"),
    "two rules": (["--cron", "0 9 * * *", "--every", "15m", *AFTER], "not allowed with"),
    "count zero": (["--cron", "0 9 * * *", "--count", "0", *AFTER], "--count"),
    "count too big": (["--cron", "0 9 * * *", "--count", "10001", *AFTER], "--count"),
    "count not a number": (["--cron", "0 9 * * *", "--count", "ten", *AFTER], "--count"),
    "unknown nonexistent": (
        ["--cron", "0 9 * * *", "--nonexistent", "maybe", *AFTER],
        "invalid choice",
    ),
    "unknown ambiguous": (
        ["--cron", "0 9 * * *", "--ambiguous", "twice", *AFTER],
        "invalid choice",
    ),
    "rrule without FREQ": (["--rrule", "BYHOUR=9", *AFTER], "--rrule (FREQ)"),
    "every zero": (["--every", "0s", *AFTER], "--every"),
    "every not a duration": (["--every", "15x", *AFTER], "--every"),
    "naive every anchor": (["--every", "15m", "--anchor", "2026-03-28T00:00", *AFTER], "--anchor"),
    "anchor with cron": (
        ["--cron", "0 9 * * *", "--anchor", "2026-03-28T00:00Z", *AFTER],
        "--anchor",
    ),
    "bad at": (["--at", "tomorrow", *AFTER], "--at"),
    "unknown option": (["--cron", "0 9 * * *", "--bogus", "1", *AFTER], "unrecognized arguments"),
    "from and after": (["--cron", "0 9 * * *", "--from", "2027-01-01", *AFTER], "keep one"),
    "bad from": (["--cron", "0 9 * * *", "--from", "next week"], "--from"),
    "from out of range": (["--cron", "0 9 * * *", "--from", "9999-12-31"], "--from"),
    "date out of range": (
        ["--cron", "0 9 * * *", "--after", "0001-01-01T00:00:00+01:00"],
        "out of range",
    ),
}


@pytest.mark.parametrize(("args", "expected"), BAD_INPUTS.values(), ids=BAD_INPUTS.keys())
def test_bad_input_on_the_command_line(args: list[str], expected: str) -> None:
    done = run_manage(*args)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.endswith("\n")
    assert expected in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(("args", "expected"), BAD_INPUTS.values(), ids=BAD_INPUTS.keys())
def test_bad_input_through_call_command(args: list[str], expected: str) -> None:
    out = StringIO()
    with pytest.raises(CommandError) as caught:
        call_command("schedule_preview", *args, stdout=out)
    assert caught.value.returncode == 2
    assert expected in str(caught.value)
    assert "\n" not in str(caught.value)
    assert out.getvalue() == ""


def test_options_passed_as_keywords_are_validated_too() -> None:
    # call_command skips argparse for keyword options; the command checks them itself.
    with pytest.raises(CommandError, match="--count") as caught:
        call_command("schedule_preview", cron="0 9 * * *", count=0, after="2026-03-28T00:00:00Z")
    assert caught.value.returncode == 2
    with pytest.raises(CommandError, match="--nonexistent/--ambiguous"):
        call_command(
            "schedule_preview", cron="0 9 * * *", nonexistent="maybe", after="2026-03-28T00:00:00Z"
        )
