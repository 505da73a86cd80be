"""The everyday operator commands: list_schedules, pause_schedule, resume_schedule (catch-up
preview, --yes), run_schedule; --json; one line and exit 2 for bad arguments."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from scheduler_app import services
from scheduler_app.models import Occurrence, Schedule
from tests.integration.support import TASK

pytestmark = pytest.mark.django_db
REPO = Path(__file__).resolve().parents[2]


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def fails(*args: str) -> CommandError:
    with pytest.raises(CommandError) as failed:
        call_command(*args, stdout=StringIO(), stderr=StringIO())
    return failed.value


def hourly(name: str, anchor: datetime | None = None) -> Schedule:
    return services.create_schedule(task=TASK, kind="interval", rule="1h", name=name, anchor=anchor)


def test_list_schedules_shows_status_next_run_and_last_run() -> None:
    first, second = hourly("alpha"), hourly("beta")
    services.pause_schedule(second.pk, note="maintenance")
    table = run("list_schedules").splitlines()
    assert table[0].split() == ["id", "name", "task", "rule", "status", "next", "run", "(UTC)"] + [
        "last",
        "run",
    ]
    assert table[1].startswith(str(first.pk)) and "interval 3600s (UTC)" in table[1]
    assert " active " in table[1] and " paused " in table[2]
    rows = json.loads(run("list_schedules", "--json", "--status", "paused"))
    assert [(r["name"], r["status"], r["pause_note"]) for r in rows] == [
        ("beta", "paused", "maintenance")
    ]
    assert "kwargs" not in rows[0]  # never the payload
    assert run("list_schedules", "--task", "no.such.task") == "no schedules\n"


def test_pause_by_name_stores_the_note_and_is_idempotent() -> None:
    schedule = hourly("nightly-export")
    out = run("pause_schedule", "nightly-export", "--note", "disk full", "--by", "ops")
    assert out == f"paused nightly-export ({schedule.pk})\n"
    stored = Schedule.objects.get(pk=schedule.pk)
    assert (stored.status, stored.pause_note, stored.paused_by) == ("paused", "disk full", "ops")
    again = json.loads(run("pause_schedule", str(schedule.pk), "--json"))
    assert (again["status"], again["changed"]) == ("paused", False)


def test_unknown_or_ambiguous_references_are_one_line_errors() -> None:
    missing = fails("pause_schedule", "nope")
    assert missing.returncode == 2 and "list_schedules" in str(missing)
    hourly("twin"), hourly("twin")
    twins = fails("resume_schedule", "twin")
    assert twins.returncode == 2 and "several schedules" in str(twins)


def paused_with_missed_slots(name: str) -> tuple[Schedule, int]:
    """A schedule paused 2.5 hours ago: two hourly slots were missed, a third is due now."""
    now = datetime.now(UTC)
    schedule = hourly(name, anchor=now - timedelta(days=1))
    services.pause_schedule(schedule.pk)
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=now - timedelta(hours=2, minutes=30))
    preview = services.preview_resume(Schedule.objects.get(pk=schedule.pk))
    return schedule, preview.count


def test_resume_shows_the_catch_up_and_needs_yes() -> None:
    schedule, missed = paused_with_missed_slots("report")
    assert missed == 3
    out, err = StringIO(), StringIO()
    with pytest.raises(CommandError) as refused:
        call_command("resume_schedule", "report", stdout=out, stderr=err)
    assert refused.value.returncode == 1 and "--yes" in str(refused.value)
    # as they will be recorded: the newest slot is now (within max_lateness), so on time
    assert "resuming creates 3 occurrence(s) (2 catch-up, 1 on time) now" in out.getvalue()
    assert Schedule.objects.get(pk=schedule.pk).status == "paused"  # nothing changed
    assert not Occurrence.objects.filter(schedule=schedule).exists()

    done = json.loads(run("resume_schedule", "report", "--yes", "--json", "--note", "fixed"))
    assert done["status"] == "active" and done["catch_up"]["count"] == 3
    assert len(done["catch_up"]["slots"]) == 3
    assert Occurrence.objects.filter(schedule=schedule).count() == 3
    assert (done["catch_up"]["catch_up"], done["catch_up"]["on_time"]) == (2, 1)
    triggers = sorted(
        Occurrence.objects.filter(schedule=schedule).values_list("trigger", flat=True)
    )
    assert triggers == ["catch_up", "catch_up", "scheduled"]


def test_resume_of_an_active_schedule_changes_nothing() -> None:
    hourly("live")
    assert run("resume_schedule", "live").endswith("is already active; nothing changed\n")


def test_run_schedule_queues_a_manual_occurrence() -> None:
    schedule = hourly("adhoc")
    document = json.loads(run("run_schedule", "adhoc", "--reason", "customer asked", "--json"))
    occurrence = Occurrence.objects.get(pk=document["occurrence_id"])
    assert (occurrence.schedule_id, occurrence.trigger, occurrence.state) == (
        schedule.pk,
        "manual",
        "pending",
    )
    assert occurrence.note == "customer asked"
    text = run("run_schedule", str(schedule.pk), "--ignore-overlap")
    assert text.startswith("run of adhoc") and "queued as occurrence" in text


def test_run_schedule_of_a_cancelled_schedule_is_refused() -> None:
    schedule = hourly("gone")
    services.cancel_schedule(schedule.pk)
    refused = fails("run_schedule", "gone")
    assert refused.returncode == 1 and "cancelled" in str(refused)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["list_schedules", "--limit", "0"], "--limit must be 1 or more"),
        (["list_schedules", "--status", "sleeping"], "invalid choice: 'sleeping'"),
        (["pause_schedule"], "the following arguments are required: schedule"),
        (["run_schedule", "x", "--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(args: list[str], expected: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PROJECT_VAR_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2
    # (Only system-check warnings may come before it, e.g. W001 for SQLite on Django 4.2.)
    errors = [line for line in done.stderr.splitlines() if "Error" in line or "Traceback" in line]
    assert len(errors) == 1 and errors[0].startswith("CommandError: ") and expected in errors[0]
