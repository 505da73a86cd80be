"""``manage.py backfill`` and the new ``schedule_preview`` flags (bounds, window, --schedule)."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from scheduler_app import services
from scheduler_app.clock import FakeClock
from scheduler_app.models import Occurrence, Trigger

pytestmark = pytest.mark.django_db
REPO_ROOT = Path(__file__).resolve().parents[3]


def run(name: str, *args: str) -> str:
    out = StringIO()
    call_command(name, *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def daily(**fields: object) -> object:
    return services.create_schedule(
        task="demo.ping",
        kind="cron",
        rule="0 6 * * *",
        timezone="Europe/Riga",
        key="nightly",
        clock=FakeClock(datetime(2026, 1, 1, tzinfo=UTC)),
        **fields,
    )


def test_backfill_dry_run_then_for_real() -> None:
    daily()
    range_ = ("--start", "2026-01-01T00:00", "--end", "2026-01-10T23:00")
    plan = run("backfill", "nightly", *range_, "--dry-run")
    assert "10 slot(s) in range, 0 already have an occurrence, 10 new" in plan
    assert "first 2026-01-01 06:00:00+02:00" in plan
    assert not Occurrence.objects.exists()
    assert "created 10 occurrence(s)" in run("backfill", "nightly", *range_)
    assert Occurrence.objects.filter(trigger=Trigger.BACKFILL).count() == 10
    assert "created 0 occurrence(s)" in run("backfill", "nightly", *range_)


def test_backfill_above_max_needs_yes() -> None:
    daily()
    range_ = ("--start", "2026-01-01T00:00", "--end", "2026-01-10T23:00", "--max", "3")
    with pytest.raises(CommandError, match="more than --max 3; narrow the range or add --yes"):
        run("backfill", "nightly", *range_)
    assert not Occurrence.objects.exists()
    assert "created 10" in run("backfill", "nightly", *range_, "--yes")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (
            ["nobody", "--start", "2026-01-01", "--end", "2026-01-02"],
            "no schedule with id, key or name",
        ),
        (["nightly", "--start", "soon", "--end", "2026-01-02"], "--start"),
        (["nightly", "--start", "2026-01-02", "--end", "2026-01-01"], "after end"),
        (["nightly", "--start", "2026-01-01", "--end", "2999-01-01"], "future"),
    ],
)
def test_backfill_bad_arguments_are_one_line_errors(args: list[str], words: str) -> None:
    daily()
    with pytest.raises(CommandError, match=words) as error:
        run("backfill", *args)
    assert error.value.returncode == 2 and "\n" not in str(error.value)


def test_backfill_without_end_exits_2_on_one_line() -> None:
    result = subprocess.run(
        [sys.executable, "manage.py", "backfill", "x", "--start", "2026-01-01"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "--end" in result.stderr


def preview(*args: str) -> dict[str, object]:
    result: dict[str, object] = json.loads(run("schedule_preview", *args, "--json"))
    return result


def utcs(answer: dict[str, object]) -> list[str]:
    return [slot["utc"] for slot in answer["slots"]]  # type: ignore[attr-defined, index]


def test_preview_bounds_and_count() -> None:
    answer = preview(
        "--cron=0 9 * * *",
        "--starts-at=2026-03-03T00:00:00Z",
        "--ends-at=2026-03-06T00:00:00Z",
        "--after=2026-03-01T00:00:00Z",
    )
    assert utcs(answer) == [f"2026-03-0{d}T09:00:00Z" for d in (3, 4, 5)]
    counted = preview(
        "--cron=0 9 * * *",
        "--starts-at=2026-03-01T00:00:00Z",
        "--max-count=2",
        "--after=2026-03-01T10:00:00Z",
    )
    assert utcs(counted) == ["2026-03-02T09:00:00Z"]  # the first of the two is before --after


def test_preview_active_window_defers_and_skips() -> None:
    common = ("--every=6h", "--anchor=2026-03-02T00:00:00Z", "--after=2026-03-01T23:00:00Z")
    window = "--window=MON-FRI 08:00-18:00"
    deferred = preview(*common, window, "--count=3")
    skipped = preview(*common, window, "--window-policy=skip", "--count=3")
    assert utcs(deferred)[0] == "2026-03-02T08:00:00Z"
    assert utcs(skipped)[0] == "2026-03-02T12:00:00Z"


def test_preview_max_count_needs_starts_at() -> None:
    with pytest.raises(CommandError, match="--max-count: counts slots from --starts-at"):
        run("schedule_preview", "--cron=0 9 * * *", "--max-count=2")


def test_preview_of_a_stored_schedule_is_the_beats() -> None:
    schedule = services.create_schedule(
        task="demo.ping",
        kind="cron",
        rule="0 * * * *",
        active_window="MON-FRI 09:00-11:00",
        window_policy="skip",
        timezone="UTC",
        clock=FakeClock(datetime(2026, 3, 2, 0, 30, tzinfo=UTC)),  # a Monday
    )
    answer = preview(f"--schedule={schedule.pk}", "--count=4")
    assert utcs(answer) == [
        "2026-03-02T09:00:00Z",
        "2026-03-02T10:00:00Z",
        "2026-03-03T09:00:00Z",
        "2026-03-03T10:00:00Z",
    ]  # the window ends at 11:00: the 11:00 slot is outside it


def test_preview_of_a_stored_schedule_refuses_other_rule_flags() -> None:
    schedule = daily()
    with pytest.raises(CommandError, match="cannot be combined"):
        run("schedule_preview", f"--schedule={schedule.pk}", "--cron=0 9 * * *")  # type: ignore[attr-defined]
    with pytest.raises(CommandError, match="no schedule with id"):
        run("schedule_preview", "--schedule=00000000-0000-0000-0000-000000000000")


def test_run_schedule_command() -> None:
    daily()
    out = run("run_schedule", "nightly", "--reason", "by hand")
    occurrence = Occurrence.objects.get()
    assert (occurrence.trigger, occurrence.note) == (Trigger.MANUAL, "by hand")
    assert f"queued as occurrence {occurrence.pk}" in out
    with pytest.raises(CommandError, match="no schedule with id, key or name 'nope'"):
        run("run_schedule", "nope")
