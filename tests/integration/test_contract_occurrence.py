"""occurrence.v1: the record, the state -> status mapping, export_occurrences, the JSON view."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from scheduler_app.clock import FakeClock
from scheduler_app.contract import STATUS_OF_STATE, occurrence_contract
from scheduler_app.models import Occurrence, OccurrenceState, Schedule
from tests.integration.support import MemoryPublisher, schedule, ticker

pytestmark = pytest.mark.django_db
START = datetime(2026, 7, 6, 5, 0, 10, tzinfo=UTC)  # 08:00:10 in Riga (summer, +03:00)


def riga_schedule(clock: FakeClock, **fields: Any) -> Schedule:
    fields.setdefault("kind", "cron")
    fields.setdefault("rule", "0 * * * *")
    return schedule(clock, timezone="Europe/Riga", key="hourly.riga", **fields)


def produced(hours: int = 3) -> tuple[Schedule, list[Occurrence], FakeClock]:
    """An hourly Riga schedule ticked for ``hours`` slots: every occurrence handed off."""
    clock = FakeClock(START)
    target = riga_schedule(clock)
    broker = MemoryPublisher()
    beat = ticker(broker, clock)
    for _ in range(hours):
        clock.advance(timedelta(hours=1))
        beat.tick()
    rows = list(Occurrence.objects.filter(schedule=target).order_by("scheduled_for"))
    return target, rows, clock


def test_every_state_has_a_status() -> None:
    assert set(STATUS_OF_STATE) == set(OccurrenceState.values)
    assert set(STATUS_OF_STATE.values()) == {
        "PENDING",
        "EMITTED",
        "SUCCEEDED",
        "FAILED",
        "EXPIRED",
        "SKIPPED",
        "CANCELLED",
    }


def test_a_handed_off_occurrence_as_occurrence_v1() -> None:
    target, [first, *_], _clock = produced()
    record = occurrence_contract(first)
    assert list(record)[:9] == [
        "contract",
        "occurrence_id",
        "schedule_id",
        "schedule_version",
        "scheduled_for",
        "emitted_at",
        "idempotency_key",
        "target_ref",
        "status",
    ]
    assert record["contract"] == "occurrence.v1"
    assert (record["occurrence_id"], record["schedule_id"]) == (str(first.pk), str(target.pk))
    assert record["schedule_version"] == 1 and record["schedule_key"] == "hourly.riga"
    assert record["scheduled_for"] == "2026-07-06T09:00:00+03:00"  # the zone's offset
    assert record["emitted_at"] == "2026-07-06T09:00:10+03:00"
    assert record["idempotency_key"] == f"{target.pk}:2026-07-06T06:00:00.000000Z"
    assert record["target_ref"] == str(first.pk)  # the Celery task id
    assert (record["status"], record["state"], record["trigger"]) == (
        "EMITTED",
        "dispatched",
        "scheduled",
    )


@pytest.mark.parametrize("state", OccurrenceState.values)
def test_every_state_maps_as_documented(state: str) -> None:
    _target, [first, *_], _clock = produced(1)
    Occurrence.objects.filter(pk=first.pk).update(state=state)
    first.refresh_from_db()
    record = occurrence_contract(first)
    assert (record["status"], record["state"]) == (STATUS_OF_STATE[state], state)
    assert record["target_ref"] == str(first.pk)  # it was handed off once: that stays


def test_a_pending_occurrence_has_no_emission_yet() -> None:
    clock = FakeClock(START)
    target = riga_schedule(clock)
    broker = MemoryPublisher()
    broker.down = True
    clock.advance(timedelta(hours=1))
    ticker(broker, clock).tick()
    [row] = Occurrence.objects.filter(schedule=target)
    record = occurrence_contract(row)
    assert (record["status"], record["emitted_at"], record["target_ref"]) == (
        "PENDING",
        None,
        None,
    )


# -- export_occurrences ------------------------------------------------------------------------


def export(*args: str) -> tuple[list[dict[str, Any]], str]:
    out, err = StringIO(), StringIO()
    call_command("export_occurrences", *args, stdout=out, stderr=err)
    return [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


def test_export_occurrences_as_json_lines_with_filters() -> None:
    target, rows, clock = produced(4)
    other = schedule(clock, kind="cron", rule="30 * * * *", key="other")
    clock.advance(timedelta(hours=1))
    ticker(MemoryPublisher(), clock).tick()
    Occurrence.objects.filter(pk=rows[1].pk).update(state="failed")
    everything, _ = export()
    assert len(everything) == Occurrence.objects.count() > len(rows)
    instants = [datetime.fromisoformat(r["scheduled_for"]) for r in everything]
    assert instants == sorted(instants)
    mine, _ = export("--schedule", "hourly.riga")
    assert {r["schedule_id"] for r in mine} == {str(target.pk)}
    by_id, _ = export("--schedule", str(other.pk))
    assert {r["schedule_key"] for r in by_id} == {"other"}
    window, _ = export(
        "--schedule",
        "hourly.riga",
        "--since",
        "2026-07-06T10:00:00+03:00",
        "--until",
        "2026-07-06T09:00:00Z",  # exclusive: 12:00 in Riga
    )
    assert [r["scheduled_for"] for r in window] == [
        "2026-07-06T10:00:00+03:00",
        "2026-07-06T11:00:00+03:00",
    ]
    failed, _ = export("--state", "FAILED")
    assert [r["occurrence_id"] for r in failed] == [str(rows[1].pk)]
    emitted, _ = export("--state", "emitted", "--state", "failed", "--schedule", "hourly.riga")
    assert len(emitted) == Occurrence.objects.filter(schedule=target).count() == len(rows) + 1


def test_export_occurrences_to_a_file(tmp_path: Path) -> None:
    produced(2)
    target = tmp_path / "occurrences.jsonl"
    out, err = StringIO(), StringIO()
    call_command("export_occurrences", "-o", str(target), "--json", stdout=out, stderr=err)
    assert json.loads(out.getvalue()) == {"exported": 2, "output": str(target)}
    lines = target.read_text().splitlines()
    assert [json.loads(line)["contract"] for line in lines] == ["occurrence.v1"] * 2
    assert list(tmp_path.iterdir()) == [target]  # no temporary file left behind


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("-o", "/nonexistent/dir/x.jsonl"), "the directory /nonexistent/dir does not exist"),
        (("--since", "yesterday"), "--since 'yesterday' is not an ISO 8601 instant"),
        (("--until", "2026-07-06T10:00:00"), "--until '2026-07-06T10:00:00' has no UTC offset"),
        (("--state", "late"), "unknown state 'late'; use one of: pending"),
        (("--schedule", "nope"), "no schedule with id or key 'nope'"),
        (("--since", "2026-07-07T00:00:00Z", "--until", "2026-07-06T00:00:00Z"), "--until must"),
        (("--json",), "--json needs --output"),
    ],
)
def test_export_occurrences_refuses_bad_arguments_with_exit_2(
    args: tuple[str, ...], message: str
) -> None:
    with pytest.raises(CommandError) as caught:
        call_command("export_occurrences", *args, stdout=StringIO(), stderr=StringIO())
    assert caught.value.returncode == 2
    assert message in str(caught.value) and "\n" not in str(caught.value)


# -- the JSON views ----------------------------------------------------------------------------


def staff(name: str, *permissions: str, tenants: tuple[str, ...] = ()) -> Client:
    user = get_user_model().objects.create_user(name, password="pw", is_staff=True)
    for codename in permissions:
        user.user_permissions.add(Permission.objects.get(codename=codename))
    for tenant in tenants:
        user.groups.add(Group.objects.get_or_create(name=f"tenant:{tenant}")[0])
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.urls("tests.integration.contract_urls")
def test_the_json_views_for_staff_with_permission_and_tenant() -> None:
    target, [first, *_], _clock = produced(1)
    Schedule.objects.filter(pk=target.pk).update(tenant="acme")
    occurrence_url = f"/scheduler/occurrences/{first.pk}.json"
    schedule_url = f"/scheduler/schedules/{target.pk}.json"
    allowed = staff("ann", "view_occurrence", "view_schedule", tenants=("acme",))
    response = allowed.get(occurrence_url)
    assert response.status_code == 200 and response.json() == occurrence_contract(first)
    spec = allowed.get(schedule_url + "?style=spec").json()
    assert (spec["schedule_id"], spec["status"]) == ("hourly.riga", "ACTIVE")
    assert allowed.get(schedule_url + "?style=yaml").status_code == 400
    assert (
        staff("bob", "view_occurrence", tenants=("other",)).get(occurrence_url).status_code == 404
    )
    assert staff("cy", tenants=("acme",)).get(occurrence_url).status_code == 404
    assert Client().get(occurrence_url).status_code == 302  # to the admin login
    missing = f"/scheduler/occurrences/{target.pk}.json"
    assert allowed.get(missing).status_code == 404
