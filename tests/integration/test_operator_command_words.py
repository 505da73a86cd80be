"""What the everyday operator commands say about who and what (issue 35): ``list_schedules``
names an unnamed schedule as the admin does instead of ``-``; ``run_schedule`` records who asked
instead of the admin's "Requested by: -"."""

from __future__ import annotations

import getpass
import json
from io import StringIO

import pytest
from django.core.management import call_command

from scheduler_app import services
from scheduler_app.admin.display import display_name
from scheduler_app.models import Occurrence
from tests.integration.support import TASK

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_an_unnamed_schedule_is_listed_by_its_task_and_rule() -> None:
    unnamed = services.create_schedule(task=TASK, kind="cron", rule="30 8 * * 1")
    keyed = services.create_schedule(task=TASK, kind="interval", rule="3600", key="nightly.sync")
    lines = run("list_schedules").splitlines()
    [line] = [text for text in lines if text.startswith(str(unnamed.pk))]
    name_column = line[len(str(unnamed.pk)) :].strip()
    assert not name_column.startswith("- ")
    assert name_column.startswith(display_name(unnamed))
    assert display_name(unnamed).startswith(f"{TASK}: ")
    [line] = [text for text in lines if text.startswith(str(keyed.pk))]
    assert line[len(str(keyed.pk)) :].strip().startswith("nightly.sync ")
    rows = {row["id"]: row for row in json.loads(run("list_schedules", "--json"))}
    assert rows[str(unnamed.pk)]["name"] == ""  # the stored name, unchanged
    assert rows[str(unnamed.pk)]["display_name"] == display_name(unnamed)


def test_run_schedule_records_who_asked() -> None:
    target = services.create_schedule(task=TASK, kind="interval", rule="3600", name="sync")
    document = json.loads(run("run_schedule", "sync", "--by", "alice", "--json"))
    occurrence = Occurrence.objects.get(pk=document["occurrence_id"])
    assert occurrence.requested_by == document["requested_by"] == "alice"
    assert occurrence.schedule_id == target.pk


def test_run_schedule_without_by_records_the_operating_system_user() -> None:
    services.create_schedule(task=TASK, kind="interval", rule="3600", name="sync")
    run("run_schedule", "sync", "--reason", "a test")
    occurrence = Occurrence.objects.get()
    assert occurrence.requested_by == f"{getpass.getuser()} (manage.py)"
    assert occurrence.note == "a test"
