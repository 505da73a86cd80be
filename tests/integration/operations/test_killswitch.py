"""Kill switches: global, per tenant, per task; skipped: kill_switch, nothing published; audited."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from scheduler_app.clock import FakeClock
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.models import KillSwitch, KillSwitchEvent, OccurrenceState
from scheduler_app.safety.killswitch import set_kill_switch
from tests.integration.support import START, MemoryPublisher, rows, schedule, ticker

pytestmark = pytest.mark.django_db


def two_tenants(clock: FakeClock) -> tuple:
    acme = schedule(clock, tenant="acme", kind="interval", rule="60s")
    globex = schedule(clock, tenant="globex", kind="interval", rule="60s", task="demo.hourly_sync")
    return acme, globex


@pytest.mark.parametrize(
    ("scope", "target", "stopped"),
    [
        ("global", "", {"acme", "globex"}),
        ("tenant", "acme", {"acme"}),
        ("task", "demo.hourly_sync", {"globex"}),
    ],
)
def test_a_switch_skips_due_occurrences_in_its_scope_and_publishes_the_rest(
    scope: str, target: str, stopped: set
) -> None:
    clock = FakeClock(START)
    acme, globex = two_tenants(clock)
    set_kill_switch(scope, target, enabled=True, by="alice", reason="incident 42", now=START)
    broker = MemoryPublisher()
    ticker(broker, clock).tick()
    for tenant, target_schedule in (("acme", acme), ("globex", globex)):
        [row] = rows(target_schedule)
        if tenant in stopped:
            assert (row.state, row.reason) == (OccurrenceState.SKIPPED, "kill_switch")
            assert row.finished_at == START and row.dispatched_at is None
        else:
            assert row.state == OccurrenceState.DISPATCHED
    assert {row.schedule.tenant for row in broker.sent} == {"acme", "globex"} - stopped


def test_turning_it_off_lets_the_next_slots_through_and_every_change_is_audited() -> None:
    clock = FakeClock(START)
    acme, _ = two_tenants(clock)
    set_kill_switch("global", enabled=True, by="alice", reason="payments broken", now=START)
    ticker(MemoryPublisher(), clock).tick()
    clock.advance(60)
    set_kill_switch("global", enabled=False, by="bob", reason="fixed", now=clock.now())
    broker = MemoryPublisher()
    ticker(broker, clock).tick()
    assert [row.state for row in rows(acme)] == [
        OccurrenceState.SKIPPED,
        OccurrenceState.DISPATCHED,
    ]
    assert len(broker.sent) == 2
    audit = list(KillSwitchEvent.objects.order_by("at").values_list("by", "enabled", "reason"))
    assert audit == [("alice", True, "payments broken"), ("bob", False, "fixed")]
    switch = KillSwitch.objects.get()
    assert (switch.enabled, switch.changed_by, switch.changed_at) == (False, "bob", clock.now())


def test_who_and_why_are_required_and_the_scope_is_checked() -> None:
    with pytest.raises(ScheduleValidationError, match="say why"):
        set_kill_switch("global", enabled=True, by="alice", reason=" ", now=START)
    with pytest.raises(ScheduleValidationError, match="say who"):
        set_kill_switch("global", enabled=True, by="", reason="x", now=START)
    with pytest.raises(ScheduleValidationError, match="name the tenant"):
        set_kill_switch("tenant", "", enabled=True, by="a", reason="x", now=START)
    with pytest.raises(ScheduleValidationError, match="unknown scope 'planet'"):
        set_kill_switch("planet", "x", enabled=True, by="a", reason="x", now=START)
    assert not KillSwitchEvent.objects.exists()


def test_the_command_turns_switches_on_and_off_and_lists_them() -> None:
    out = StringIO()
    call_command(
        "kill_switch", "on", "--tenant", "acme", "--by", "alice", "--reason", "r1", stdout=out
    )
    assert out.getvalue().strip() == "kill switch tenant 'acme' is ON (by alice: r1)"
    call_command("kill_switch", "list", stdout=out)
    assert "tenant 'acme': ON since" in out.getvalue()
    assert "alice turned tenant 'acme' on: r1" in out.getvalue()
    with pytest.raises(CommandError, match="--reason: say why"):
        call_command("kill_switch", "off", "--tenant", "acme", "--by", "bob")
    assert KillSwitch.objects.get().enabled


def test_a_retry_waiting_in_the_outbox_is_stopped_too() -> None:
    clock = FakeClock(START)
    acme, _ = two_tenants(clock)
    ticker(MemoryPublisher(), clock).tick()
    [row] = rows(acme)
    row.__class__.objects.filter(pk=row.pk).update(
        state=OccurrenceState.RETRYING, dispatched_at=None, not_before=START + timedelta(seconds=5)
    )
    set_kill_switch("tenant", "acme", enabled=True, by="alice", reason="r", now=START)
    broker = MemoryPublisher()
    ticker(broker, clock).tick()
    [row] = rows(acme)
    assert (row.state, row.reason) == (OccurrenceState.SKIPPED, "kill_switch")


def test_a_worker_can_ask_whether_a_switch_now_covers_a_delivery() -> None:
    from scheduler_app.safety.killswitch import stops

    clock = FakeClock(START)
    acme, globex = two_tenants(clock)
    ticker(MemoryPublisher(), clock).tick()
    [acme_row], [globex_row] = rows(acme), rows(globex)
    assert not stops(acme_row)
    set_kill_switch("tenant", "acme", enabled=True, by="alice", reason="r", now=START)
    assert stops(acme_row) and not stops(globex_row)


def test_a_delivery_already_in_the_broker_is_skipped_by_the_worker_when_a_switch_is_on() -> None:
    from project.demo.tasks import ping
    from tests.integration.worker_support import due_one, fetch, run

    clock = FakeClock(START)
    occurrence = due_one(clock)  # published before anybody turned the switch on
    assert occurrence.state == OccurrenceState.DISPATCHED
    set_kill_switch("task", occurrence.task, enabled=True, by="bob", reason="stop", now=START)
    run(ping, occurrence, clock)
    stopped = fetch(occurrence)
    assert (stopped.state, stopped.reason) == (OccurrenceState.SKIPPED, "kill_switch")

    set_kill_switch("task", occurrence.task, enabled=False, by="bob", reason="fixed", now=START)
    again = due_one(clock, tenant="after")
    run(ping, again, clock)
    assert fetch(again).state == OccurrenceState.SUCCEEDED
