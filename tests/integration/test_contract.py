"""The schedule.v1 contract: export -> import round trip, idempotence, all-or-nothing errors."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from scheduler_app.authoring.importing import Problem
from scheduler_app.clock import FakeClock
from scheduler_app.contract import (
    ContractError,
    export_all,
    import_text,
    plan_import,
    read_documents,
    targets,
)
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.models import Schedule, ScheduleVersion
from scheduler_app.services import cancel_schedule, pause_schedule
from tests.integration.contract_support import snapshot, wipe
from tests.integration.support import START, TASK, schedule

pytestmark = pytest.mark.django_db


def populate(clock: FakeClock) -> None:
    owner = get_user_model().objects.create_user("ops")
    schedule(
        clock,
        key="reports.riga",
        name="Riga report",
        tenant="acme",
        owner=owner,
        kind="cron",
        rule="30 9 * * 1-5",
        timezone="Europe/Riga",
        kwargs={"b": [1, 2], "a": {"z": 1}},
        objective="daily",
        misfire_policy="fire_once",
        overlap_policy="buffer_one",
        deadline=600,
        jitter=30,
        dst_nonexistent="skip",
        mode="shadow",
    )
    schedule(clock, kind="interval", rule="15m", interval_mode="fixed_delay", max_attempts=5)
    schedule(
        clock,
        kind="rrule",
        rule="FREQ=WEEKLY;BYDAY=MO;BYHOUR=9;BYMINUTE=0",
        anchor=datetime(2026, 1, 1, tzinfo=UTC),
        timezone="Europe/Paris",
        starts_at=datetime(2026, 1, 1, tzinfo=UTC),
        max_count=10,
    )
    once = schedule(clock, kind="once", rule="2026-03-29T02:30:00+00:00", on_pause="cancel")
    pause_schedule(once.pk, clock=clock)
    late = schedule(clock, key="retired", kind="cron", rule="0 0 1 * *")
    cancel_schedule(late.pk, clock=clock)


def test_round_trip_on_an_empty_database_gives_identical_schedules() -> None:
    clock = FakeClock(START)
    populate(clock)
    before, exported = snapshot(), export_all()
    wipe()
    result = import_text(exported, clock=clock)
    assert result.applied and result.plan.count("create") == 5
    assert snapshot() == before
    again = json.loads(export_all())["schedules"]
    assert again == json.loads(exported)["schedules"]


def test_export_is_stable_and_documented_shape() -> None:
    populate(FakeClock(START))
    text = export_all()
    assert text == export_all() and text.endswith("}\n")
    body = json.loads(text)
    assert body["contract"] == "schedule.v1"
    [first] = [d for d in body["schedules"] if d["key"] == "reports.riga"]
    assert list(first) == [
        *("contract", "schedule_id", "tenant_id", "owner_ref", "key", "name", "objective"),
        "origin",
        *("target", "timing", "policies", "status", "version", "next_run_at"),
        *("created_at", "updated_at"),
    ]
    assert first["target"] == {
        "type": "task",
        "task": TASK,
        "payload_ref": "",
        "kwargs": {"a": {"z": 1}, "b": [1, 2]},
        "options": {},
        "args": [],
    }
    assert first["timing"]["dst"] == {"nonexistent": "skip", "ambiguous": "auto"}
    assert first["policies"]["misfire"] == "fire_once" and first["policies"]["mode"] == "shadow"
    assert first["owner_ref"] == "ops" and first["created_at"] == "2026-01-05T00:00:10Z"


def test_importing_the_same_file_twice_changes_nothing() -> None:
    clock = FakeClock(START)
    populate(clock)
    exported = export_all()
    wipe()
    import_text(exported, clock=clock)
    before = {s.pk: (s.version, s.updated_at) for s in Schedule.objects.all()}
    clock.advance(timedelta(hours=1))
    result = import_text(exported, clock=clock)
    assert [c.action for c in result.plan.changes] == ["unchanged"] * 5
    assert {s.pk: (s.version, s.updated_at) for s in Schedule.objects.all()} == before
    assert ScheduleVersion.objects.count() == 5


def doc(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "contract": "schedule.v1",
        "key": "k",
        "target": {"type": "task", "task": TASK, "kwargs": {}},
        "timing": {"kind": "cron", "rule": "0 9 * * *", "timezone": "Europe/Riga"},
        "policies": {},
    }
    for name, value in overrides.items():
        section, _, field = name.partition("__")
        if field:
            base[section] = {**base[section], field: value}
        else:
            base[section] = value
    return base


def file_of(*docs: dict[str, Any]) -> str:
    return json.dumps({"contract": "schedule.v1", "schedules": list(docs)})


def test_a_changed_document_updates_fields_and_status_with_one_version() -> None:
    clock = FakeClock(START)
    import_text(file_of(doc(key="a")), clock=clock)
    [created] = Schedule.objects.all()
    changed = doc(key="a", timing__rule="0 10 * * *", status="paused", name="renamed")
    result = import_text(file_of(changed), clock=clock)
    [change] = result.plan.changes
    assert (change.action, set(change.changed)) == ("update", {"rule", "name"})
    stored = Schedule.objects.get()
    assert (stored.pk, stored.version, stored.rule) == (created.pk, 2, "0 10 * * *")
    assert (stored.status, stored.name) == ("paused", "renamed")


def test_policies_accept_durations_and_match_by_key() -> None:
    clock = FakeClock(START)
    text = file_of(doc(key="d", policies={"max_lateness": "5m", "deadline": "1h", "jitter": 0}))
    import_text(text, clock=clock)
    stored = Schedule.objects.get(key="d")
    assert (stored.max_lateness, stored.deadline, stored.jitter) == (300, 3600, 0)
    assert import_text(text, clock=clock).plan.changes[0].action == "unchanged"


INVALID = [
    doc(key="fine"),
    doc(key="two", timing__rule="61 * * * *", policies={"misfire": "sometimes"}),
    {**doc(key="three", timing__timezone="Mars/Olympus"), "colour": "blue"},
    doc(key="four", target={"type": "task", "task": "no.such.task", "kwargs": []}),
    doc(key="five", timing={"kind": "cron"}, policies={"catch_up_limit": 0, "jitter": -1}),
    doc(key="fine"),
]
EXPECTED_PATHS = [
    "schedules[1].policies.misfire",
    "schedules[1].timing.rule",
    "schedules[2].colour",
    "schedules[2].timing.timezone",
    "schedules[3].target.kwargs",
    "schedules[3].target.task",
    "schedules[4].policies.catch_up_limit",
    "schedules[4].policies.jitter",
    "schedules[4].timing.rule",
    "schedules[5].key",
]


def test_invalid_documents_apply_nothing_and_report_every_error_with_its_path() -> None:
    clock = FakeClock(START)
    import_text(file_of(doc(key="existing")), clock=clock)
    before = snapshot()
    with pytest.raises(ContractError) as caught:
        import_text(file_of(*INVALID), clock=clock)
    paths = [str(p).split(": ", 1)[0] for p in caught.value.problems]
    assert paths == EXPECTED_PATHS
    assert "cron.minute" in str(caught.value)
    assert snapshot() == before


def test_unknown_task_is_reported_when_the_structure_is_fine() -> None:
    bad = doc(key="x", target={"type": "task", "task": "no.such.task"})
    with pytest.raises(ContractError) as caught:
        import_text(file_of(doc(key="ok"), bad), clock=FakeClock(START))
    [problem] = caught.value.problems
    assert str(problem).startswith("schedules[1].target.task: unknown task 'no.such.task'")
    assert not Schedule.objects.exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"contract": "schedule.v2", "schedules": []}', "schedule.v1"),
        ('"a string"', "expected a list"),
        ("[42]", "must be a JSON object"),
        ('[{"target": {"task": "demo.ping", "kwargs": {"x": NaN}}}]', "NaN is not a JSON number"),
        ('[{"policies": {"jitter": -Infinity}}]', "-Infinity is not a JSON number"),
    ],
)
def test_malformed_files(text: str, message: str) -> None:
    with pytest.raises(ContractError, match=message):
        import_text(text, clock=FakeClock(START))


@pytest.mark.parametrize(
    ("text", "path", "message"),
    [
        ('{"contract": "schedule.v2", "schedules": []}', "contract", "must be 'schedule.v1'"),
        (
            "[" * 100_000 + "]" * 100_000,
            "",
            "JSON nested too deeply; a document is at most a few levels",
        ),
        ('"a string"', "", 'expected a list or {"contract": "schedule.v1", "schedules": [...]}'),
        ("[NaN]", "", "not valid JSON: NaN is not a JSON number; use a number or null"),
    ],
)
def test_a_problem_of_the_whole_file_is_the_file_s(text: str, path: str, message: str) -> None:
    with pytest.raises(ContractError) as caught:
        read_documents(text)
    assert caught.value.problems == (Problem("file", path, message),)


def test_a_bare_list_of_documents_is_accepted() -> None:
    import_text(json.dumps([doc(key="bare")]), clock=FakeClock(START))
    assert Schedule.objects.filter(key="bare").exists()


def test_a_cancelled_schedule_is_not_reactivated() -> None:
    clock = FakeClock(START)
    import_text(file_of(doc(key="c", status="cancelled")), clock=clock)
    assert Schedule.objects.get(key="c").status == "cancelled"
    with pytest.raises(ContractError, match="cancelled and cannot be changed"):
        import_text(file_of(doc(key="c", status="active")), clock=clock)


# -- the commands ----------------------------------------------------------------------------


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_export_command_to_stdout_and_file(tmp_path: Path) -> None:
    populate(FakeClock(START))
    out, _ = run("export_schedules")
    assert out == export_all()
    target = tmp_path / "schedules.json"
    _, err = run("export_schedules", "--output", str(target))
    assert target.read_text() == out and "exported 5 schedule(s)" in err


def test_import_command_dry_run_prints_the_plan_and_writes_nothing(tmp_path: Path) -> None:
    import_text(file_of(doc(key="same"), doc(key="edit")), clock=FakeClock(START))
    before = snapshot()
    source = tmp_path / "in.json"
    source.write_text(
        file_of(doc(key="same"), doc(key="edit", timing__rule="0 7 * * *"), doc(key="new"))
    )
    out, _ = run("import_schedules", str(source), "--dry-run")
    lines = out.splitlines()
    assert lines[0].startswith("unchanged schedules[0]")
    assert (
        lines[1].startswith("update    schedules[1]") and "'0 9 * * *' -> '0 7 * * *'" in lines[1]
    )
    assert lines[2].startswith("create    schedules[2]")
    assert lines[3] == "1 to create, 1 to update, 1 unchanged (dry run: nothing written)"
    assert snapshot() == before
    out, _ = run("import_schedules", str(source))
    lines = out.splitlines()
    assert lines[-1] == "created 1, updated 1, unchanged 1"
    assert lines[1].startswith("updated   schedules[1]") and lines[2].startswith("created   ")
    assert Schedule.objects.get(key="edit").version == 2


def test_import_command_exits_2_with_every_error_on_stderr(tmp_path: Path) -> None:
    source = tmp_path / "bad.json"
    source.write_text(file_of(*INVALID))
    err = StringIO()
    with pytest.raises(CommandError) as caught:
        call_command("import_schedules", str(source), stdout=StringIO(), stderr=err)
    assert caught.value.returncode == 2
    assert "nothing was imported" in str(caught.value)
    assert [line.split(": ", 1)[0] for line in err.getvalue().splitlines()] == EXPECTED_PATHS
    assert not Schedule.objects.exists()


def test_import_command_exits_2_for_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CommandError) as caught:
        call_command("import_schedules", str(tmp_path / "nope.json"))
    assert caught.value.returncode == 2


def test_the_allowlist_and_job_types_are_asked_once_per_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[str] = []

    def check_target(task: str) -> None:
        asked.append(task)
        if task == "no.such.task":
            raise ScheduleValidationError("task", "unknown task")

    def resolve(job_type: object) -> str:
        asked.append(f"job:{job_type}")
        raise ScheduleValidationError("job_type", f"unknown job type {job_type!r}")

    monkeypatch.setattr(targets, "check_target", check_target)
    monkeypatch.setattr(targets.jobtypes, "resolve", resolve)
    bad_task = {"type": "task", "task": "no.such.task"}
    job = {"type": "JOB", "job_type": "nightly"}
    docs = [doc(key=f"k{n}", target=target) for n, target in enumerate([bad_task, job] * 2)]
    plan = plan_import(file_of(*docs), START)
    assert asked == ["no.such.task", "job:nightly"]
    assert [(p.label, p.path, p.message) for p in plan.problems] == [
        ("schedules[0]", "target.task", "unknown task"),
        ("schedules[1]", "target.job_type", "unknown job type 'nightly'"),
        ("schedules[2]", "target.task", "unknown task"),
        ("schedules[3]", "target.job_type", "unknown job type 'nightly'"),
    ]
