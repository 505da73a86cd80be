"""schedule.v1 in the specification's own form: the example document, both styles, ids,
owners, JOB targets, enumerations in any case, read-only fields."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from scheduler_app.clock import FakeClock
from scheduler_app.contract import ContractError, export_all, import_text
from scheduler_app.models import Schedule, ScheduleVersion

pytestmark = pytest.mark.django_db
EXAMPLE = Path(__file__).parent / "contract_fixtures" / "spec_example.json"
NOW = datetime(2026, 8, 20, 12, 0, tzinfo=UTC)


@pytest.fixture
def world(settings: Any) -> FakeClock:
    """The example's world: user alice, job type source.sync served by demo.ping."""
    settings.SCHEDULER_JOB_TYPES = {"source.sync": "demo.ping"}
    get_user_model().objects.create_user("alice")
    return FakeClock(NOW)


def example(**changes: Any) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(EXAMPLE.read_text())
    document.update(changes)
    return document


def problems_of(text: str, clock: FakeClock) -> list[str]:
    with pytest.raises(ContractError) as caught:
        import_text(text, clock=clock)
    return [str(problem) for problem in caught.value.problems]


def test_the_specification_example_imports_as_written(world: FakeClock) -> None:
    result = import_text(EXAMPLE.read_text(), clock=world)
    assert result.applied and result.plan.count("create") == 1
    stored = Schedule.objects.get()
    assert (stored.key, stored.tenant, stored.owner.get_username()) == (
        "SCH-2041",
        "tenant_A",
        "alice",
    )
    assert (stored.task, stored.job_type, stored.payload_ref) == (
        "demo.ping",
        "source.sync",
        "state://sync-source-42",
    )
    assert (stored.kind, stored.rule, stored.timezone) == (
        "rrule",
        "FREQ=DAILY;BYHOUR=9;BYMINUTE=0",
        "Europe/Riga",
    )
    assert (stored.misfire_policy, stored.max_lateness, stored.status) == ("skip", 900, "active")
    # Read-only fields are ignored: the database computes them.
    assert stored.version == 1
    assert stored.next_run_at == datetime(2026, 8, 21, 6, 0, tzinfo=UTC)  # 09:00 in Riga
    assert stored.created_at == NOW


def test_reimporting_the_example_updates_the_same_schedule(world: FakeClock) -> None:
    import_text(EXAMPLE.read_text(), clock=world)
    world.advance(timedelta(hours=1))
    again = import_text(EXAMPLE.read_text(), clock=world)
    assert [c.action for c in again.plan.changes] == ["unchanged"]
    edited = example(max_lateness_s=600)
    changed = import_text(json.dumps(edited), clock=world)
    [change] = changed.plan.changes
    assert (change.action, set(change.changed)) == ("update", {"max_lateness"})
    stored = Schedule.objects.get()
    assert (stored.key, stored.max_lateness, stored.version) == ("SCH-2041", 600, 2)


@pytest.mark.parametrize("style", ["spec", "native"])
def test_the_example_round_trips_in_both_styles(world: FakeClock, style: str) -> None:
    import_text(EXAMPLE.read_text(), clock=world)
    exported = export_all(style=style)  # type: ignore[arg-type]
    before = Schedule.objects.values().get()
    assert [c.action for c in import_text(exported, clock=world).plan.changes] == ["unchanged"]
    ScheduleVersion.objects.all().delete()
    Schedule.objects.all().delete()
    import_text(exported, clock=world)
    after = Schedule.objects.values().get()
    assert after == before
    assert export_all(style=style) == exported  # type: ignore[arg-type]


def test_the_spec_style_export_is_the_example_plus_extensions(world: FakeClock) -> None:
    import_text(EXAMPLE.read_text(), clock=world)
    [document] = json.loads(export_all(style="spec"))["schedules"]
    original = example()
    for name in ("contract", "schedule_id", "tenant_id", "owner_ref", "misfire", "status"):
        assert document[name] == original[name], name
    assert document["max_lateness_s"] == 900
    assert document["target"] == {
        **original["target"],
        "kwargs": {},
        "options": {},
        "args": [],
    }
    assert {k: document["timing"][k] for k in original["timing"]} == original["timing"]
    assert document["version"] == 1  # ours, not the example's 3
    assert document["next_run_at"] == "2026-08-21T09:00:00+03:00"  # the zone's offset
    assert list(document)[:13] == list(original)  # the specification's order first


def test_the_native_export_of_the_example(world: FakeClock) -> None:
    import_text(EXAMPLE.read_text(), clock=world)
    [document] = json.loads(export_all())["schedules"]
    assert document["schedule_id"] == str(Schedule.objects.get().pk)
    assert (document["key"], document["owner_ref"], document["status"]) == (
        "SCH-2041",
        "alice",
        "active",
    )
    assert document["target"]["type"] == "job" and document["timing"]["kind"] == "rrule"
    assert document["policies"]["misfire"] == "skip"
    assert document["next_run_at"] == "2026-08-21T06:00:00Z"


@pytest.mark.parametrize(
    ("misfire", "kind", "status", "stored"),
    [
        ("SKIP", "RECURRENCE", "PAUSED", ("skip", "rrule", "paused")),
        ("fire_once", "rrule", "paused", ("fire_once", "rrule", "paused")),
        ("Catch_Up", "Recurrence", "Active", ("catch_up", "rrule", "active")),
    ],
)
def test_enumerations_in_either_case(
    world: FakeClock, misfire: str, kind: str, status: str, stored: tuple[str, ...]
) -> None:
    timing = {**example()["timing"], "kind": kind, "dst": {"ambiguous": "LAST"}}
    document = example(misfire=misfire, status=status, timing=timing)
    document["policies"] = {"overlap": "BUFFER_ONE", "mode": "Shadow"}
    import_text(json.dumps([document]), clock=world)
    row = Schedule.objects.get()
    assert (row.misfire_policy, row.kind, row.status) == stored
    assert (row.dst_ambiguous, row.overlap_policy, row.mode) == ("last", "buffer_one", "shadow")


@pytest.mark.parametrize(
    ("kind", "rule"),
    [("CRON", "0 9 * * 1-5"), ("INTERVAL", "PT15M"), ("ONCE", "2026-09-01T09:00:00+03:00")],
)
def test_every_spec_timing_kind(world: FakeClock, kind: str, rule: str) -> None:
    document = example(timing={"kind": kind, "rule": rule, "timezone": "Europe/Riga"})
    import_text(json.dumps(document), clock=world)
    assert Schedule.objects.get().kind == kind.lower()
    [exported] = json.loads(export_all(style="spec"))["schedules"]
    assert exported["timing"]["kind"] == kind


def test_owner_ref_as_a_bare_username_and_refused_schemes(world: FakeClock) -> None:
    import_text(json.dumps(example(owner_ref="alice")), clock=world)
    assert Schedule.objects.get().owner.get_username() == "alice"
    found = problems_of(json.dumps(example(owner_ref="group://ops")), world)
    assert found == [
        "schedules[0].owner_ref: 'group://ops': only user:// references exist; e.g. 'user://alice'"
    ]
    found = problems_of(json.dumps(example(owner_ref="user://bob")), world)
    assert found == [
        "schedules[0].owner_ref: no user 'bob'; create the user first or drop owner_ref"
    ]


def test_schedule_id_key_and_uuid_must_agree(world: FakeClock) -> None:
    found = problems_of(json.dumps(example(key="other")), world)
    assert found == [
        "schedules[0].key: 'other' disagrees with schedule_id 'SCH-2041', which is the key"
    ]
    uuid_id = "3f0c9a57-2a55-4b7e-9a0e-4c7f3f1f2b10"
    document = example(schedule_id=uuid_id, uuid="6af80117-533f-5d12-95ea-a43c37f8dd6f")
    assert problems_of(json.dumps(document), world) == [
        f"schedules[0].uuid: disagrees with schedule_id '{uuid_id}'; drop one of them"
    ]
    import_text(json.dumps(example(schedule_id=uuid_id)), clock=world)
    stored = Schedule.objects.get()
    assert (str(stored.pk), stored.key) == (uuid_id, None)


def test_a_key_that_looks_like_a_uuid_stays_a_key_in_the_spec_style(world: FakeClock) -> None:
    key = "6af80117-533f-5d12-95ea-a43c37f8dd6f"
    import_text(json.dumps(example(schedule_id=None, key=key)), clock=world)
    stored = Schedule.objects.get()
    [document] = json.loads(export_all(style="spec"))["schedules"]
    assert (document["schedule_id"], document["key"]) == (str(stored.pk), key)
    assert [c.action for c in import_text(export_all("spec"), clock=world).plan.changes] == [
        "unchanged"
    ]


def test_read_only_fields_are_checked_for_shape(world: FakeClock) -> None:
    document = example(version=0, next_run_at="tomorrow", created_at="2026-08-01T10:00:00")
    assert problems_of(json.dumps(document), world) == [
        "schedules[0].created_at: '2026-08-01T10:00:00' has no UTC offset; add one, e.g. Z or "
        "+02:00",
        "schedules[0].next_run_at: 'tomorrow' is not an ISO 8601 instant, e.g. "
        "2026-03-29T02:30:00Z",
        "schedules[0].version: must be a whole number >= 1 or null, got 0",
    ]


def test_optimistic_concurrency_when_asked(world: FakeClock) -> None:
    import_text(EXAMPLE.read_text(), clock=world)
    [document] = json.loads(export_all(style="spec"))["schedules"]
    assert document["version"] == 1
    import_text(json.dumps(example(max_lateness_s=600)), clock=world)  # someone edits: v2
    edited = {**document, "max_lateness_s": 300}
    with pytest.raises(ContractError) as caught:
        import_text(json.dumps(edited), clock=world, check_versions=True)
    [problem] = caught.value.problems
    assert problem.path == "version" and "at version 2, the document was exported at version 1" in (
        problem.message
    )
    assert Schedule.objects.get().max_lateness == 600
    import_text(json.dumps(edited), clock=world)  # without the check: last writer wins
    assert Schedule.objects.get().max_lateness == 300


def test_top_level_and_nested_policies_must_agree(world: FakeClock) -> None:
    same = example(policies={"misfire": "skip", "max_lateness": "15m"})
    import_text(json.dumps(same), clock=world)
    clash = example(policies={"misfire": "catch_up"})
    assert problems_of(json.dumps(clash), world) == [
        "schedules[0].misfire: given twice, as misfire and policies.misfire, with different values"
    ]


def test_spec_policy_errors_point_at_the_top_level_field(world: FakeClock) -> None:
    found = problems_of(json.dumps(example(misfire="LATER", max_lateness_s=-5)), world)
    assert sorted(found) == [
        "schedules[0].max_lateness_s: must be a whole number of seconds >= 0 or a duration like "
        "'15m', got -5",
        "schedules[0].misfire: unknown value 'later'; use one of: skip, fire_once, catch_up",
    ]


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (
            {"type": "JOB", "job_type": "source.synk"},
            "schedules[0].target.job_type: unknown job type 'source.synk' (known: source.sync);",
        ),
        (
            {"type": "JOB", "job_type": "source.sync", "task": "demo.ping"},
            "schedules[0].target.task: a JOB target names a job_type, not a task; drop 'task'",
        ),
        (
            {"type": "task", "task": "demo.ping", "job_type": "source.sync"},
            "schedules[0].target.job_type: belongs to JOB targets; use type 'JOB' without 'task'",
        ),
        (
            {"type": "webhook", "url": "https://example.com"},
            "schedules[0].target.type: unknown target type 'webhook'; use 'task', 'JOB' or 'event'",
        ),
        (
            {"type": "JOB", "job_type": "source.sync", "payload_ref": "x" * 501},
            "schedules[0].target.payload_ref: must be a printable string of at most 500",
        ),
        (
            {"type": "JOB", "job_type": "source.sync", "options": {"queue": 5, "colour": "red"}},
            "schedules[0].target.options.colour: unknown routing option; use queue, routing_key",
        ),
        (
            {"type": "JOB", "job_type": "source.sync", "options": {"queue": 5}},
            "schedules[0].target.options.queue: must be a string, got 5",
        ),
        (
            {"type": "JOB", "job_type": "source.sync", "options": {"priority": True}},
            "schedules[0].target.options.priority: must be a whole number, got True",
        ),
        (
            {"type": "JOB", "job_type": "source.sync", "options": {"priority": 300}},
            "schedules[0].target.options.priority: must be 0-255, got 300",
        ),
    ],
)
def test_bad_targets_are_reported_with_their_path(
    world: FakeClock, target: dict[str, Any], expected: str
) -> None:
    found = problems_of(json.dumps(example(target=target)), world)
    assert any(problem.startswith(expected) for problem in found), found
    assert not Schedule.objects.exists()


def test_a_job_type_whose_task_the_allowlist_refuses(world: FakeClock, settings: Any) -> None:
    settings.SCHEDULER_JOB_TYPES = {"source.sync": "celery.backend_cleanup"}
    [problem] = problems_of(EXAMPLE.read_text(), world)
    assert problem.startswith(
        "schedules[0].target.job_type: task 'celery.backend_cleanup': "
        "'celery.backend_cleanup' is one of Celery's internal tasks"
    )


def test_routing_options_and_a_task_target_with_a_payload_ref(world: FakeClock) -> None:
    target = {
        "type": "TASK",
        "task": "demo.ping",
        "payload_ref": "s3://bucket/key",
        "options": {"queue": "io", "priority": 3},
    }
    import_text(json.dumps(example(target=target)), clock=world)
    stored = Schedule.objects.get()
    assert (stored.task, stored.job_type, stored.payload_ref, stored.options) == (
        "demo.ping",
        "",
        "s3://bucket/key",
        {"queue": "io", "priority": 3},
    )


def test_the_task_of_an_imported_job_reads_its_payload_ref_from_the_context(
    world: FakeClock, settings: Any
) -> None:
    """The scheduler stores the reference; the task gets it from its occurrence context."""
    from project.demo.tasks import record_context
    from tests.integration.support import MemoryPublisher, ticker
    from tests.integration.worker_support import fetch, run

    settings.SCHEDULER_JOB_TYPES = {"source.sync": "demo.record_context"}
    import_text(EXAMPLE.read_text(), clock=world)
    stored = Schedule.objects.get()
    world.set(stored.next_run_at)
    broker = MemoryPublisher()
    ticker(broker, world).tick()
    [occurrence] = broker.sent
    alice = get_user_model().objects.get(username="alice")  # runs are checked against the owner
    alice.user_permissions.add(Permission.objects.get(codename="run_schedule"))
    seen = run(record_context, fetch(occurrence), world).get()
    assert seen["payload_ref"] == "state://sync-source-42"
    assert seen["rule"] == "FREQ=DAILY;BYHOUR=9;BYMINUTE=0"
    assert seen["scheduled_for"].startswith("2026-08-21 06:00:00")
