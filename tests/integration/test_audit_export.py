"""``manage.py export_audit``: the audit trail and the kill-switch changes, oldest first, as
JSON Lines or CSV, for one schedule (even a deleted one) or all, since an instant."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from scheduler_app import services
from scheduler_app.clock import FakeClock
from scheduler_app.models import KillSwitchEvent, KillSwitchScope, Schedule

pytestmark = pytest.mark.django_db

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def demo_tasks_allowed(settings: Any) -> None:
    settings.SCHEDULER_ALLOWED_TASKS = ("demo.*",)


@pytest.fixture
def ops() -> User:
    return User.objects.create_superuser("ops", "ops@example.com", "pw")


def audited(ops: User, name: str = "nightly", tenant: str = "") -> Schedule:
    """Created at START, paused a minute later, resumed a minute after that."""
    clock = FakeClock(START)
    schedule = services.create_schedule(
        task="demo.ping", kind="cron", rule="0 3 * * *", name=name, tenant=tenant, clock=clock
    )
    clock.advance(timedelta(minutes=1))
    services.pause_schedule(schedule.pk, user=ops, note="bucket migration", clock=clock)
    clock.advance(timedelta(minutes=1))
    services.resume_schedule(schedule.pk, user=ops, note="bucket is back", clock=clock)
    return schedule


def switch_event(at: datetime, scope: str = KillSwitchScope.GLOBAL, target: str = "") -> None:
    KillSwitchEvent.objects.create(
        scope=scope, target=target, enabled=True, by="root", at=at, reason="incident"
    )


def export(*args: str) -> str:
    out = io.StringIO()
    call_command("export_audit", *args, stdout=out)
    return out.getvalue()


def records(*args: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in export(*args).splitlines()]


def test_jsonl_holds_every_action_and_switch_change_oldest_first(ops: User) -> None:
    schedule = audited(ops)
    switch_event(START + timedelta(seconds=90))
    rows = records()
    assert [row["action"] for row in rows] == ["created", "paused", "kill_switch_on", "resumed"]
    paused = rows[1]
    assert paused == {
        "at": (START + timedelta(minutes=1)).isoformat(),
        "kind": "schedule",
        "schedule_id": str(schedule.pk),
        "action": "paused",
        "by": "ops",
        "reason": "bucket migration",
        "version": 1,
        "scope": None,
        "target": None,
        "details": {},
    }
    assert rows[2]["kind"] == "kill_switch" and rows[2]["scope"] == "global"
    assert rows[0]["by"] == "system"  # created without a user: the system actor


def test_one_schedule_gets_its_entries_and_the_switches_that_covered_it(ops: User) -> None:
    mine = audited(ops, "mine", tenant="acme")
    audited(ops, "theirs", tenant="globex")
    switch_event(START, KillSwitchScope.TENANT, "acme")
    switch_event(START, KillSwitchScope.TENANT, "globex")
    for reference in (str(mine.pk), "mine"):
        rows = records("--schedule", reference)
        assert {row["schedule_id"] for row in rows} == {str(mine.pk), None}
        assert [row["target"] for row in rows if row["kind"] == "kill_switch"] == ["acme"]


def test_a_deleted_schedules_trail_is_still_exported(ops: User) -> None:
    schedule = audited(ops)
    services.delete_schedule(schedule.pk, user=ops)
    assert not Schedule.objects.filter(pk=schedule.pk).exists()
    rows = records("--schedule", str(schedule.pk))
    assert [row["action"] for row in rows][-1] == "deleted"


def test_since_is_inclusive(ops: User) -> None:
    audited(ops)
    since = (START + timedelta(minutes=1)).isoformat()
    assert [row["action"] for row in records("--since", since)] == ["paused", "resumed"]


def test_csv_has_a_header_and_one_row_per_record(ops: User) -> None:
    audited(ops)
    switch_event(START + timedelta(hours=1), KillSwitchScope.TASK, "demo.ping")
    rows = list(csv.DictReader(io.StringIO(export("--format", "csv"))))
    assert [row["action"] for row in rows] == ["created", "paused", "resumed", "kill_switch_on"]
    assert rows[1]["reason"] == "bucket migration" and rows[1]["version"] == "1"
    assert json.loads(rows[2]["details"]) == {"created": 0}
    assert rows[3]["target"] == "demo.ping" and rows[3]["schedule_id"] == ""


def test_an_empty_trail_is_an_empty_export() -> None:
    assert export() == ""
    assert export("--format", "csv").splitlines() == [
        "at,kind,schedule_id,action,by,reason,version,scope,target,details"
    ]


def test_the_export_goes_to_a_file(ops: User, tmp_path: Path) -> None:
    audited(ops)
    target = tmp_path / "audit.jsonl"
    assert export("--output", str(target)) == ""
    assert len(target.read_text().splitlines()) == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--since", "yesterday"), "not an ISO 8601 instant"),
        (("--since", "2026-03-01T00:00:00"), "has no UTC offset"),
        (("--schedule", "00000000-0000-0000-0000-000000000000"), "no schedule and no audit entry"),
        (("--schedule", "no such name"), "no schedule with id, key or name"),
        (("--output", "/no/such/directory/audit.jsonl"), "does not exist"),
    ],
)
def test_bad_arguments_are_one_line_errors(args: tuple[str, ...], message: str) -> None:
    with pytest.raises(CommandError, match=message) as raised:
        export(*args)
    assert raised.value.returncode == 2
