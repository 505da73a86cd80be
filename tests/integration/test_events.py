"""The event target along the user's path: a schedule of an event type made through the
services, materialized by a beat that serves only Celery, handed off and delivered by the
delivery process's loop to a local receiver that verifies every signature (Standard
Webhooks) and deduplicates on ``webhook-id`` as docs/events.md tells a receiver to."""

from __future__ import annotations

import io
import json
import socket
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from project.celery import app as celery_app
from scheduler_app import webhooks
from scheduler_app.authoring.sync import sync_schedules
from scheduler_app.checks.observability import check_event_endpoints
from scheduler_app.clock import FakeClock
from scheduler_app.contract import ContractError, export_document, import_text
from scheduler_app.declarations import declare_event, isolated_registry
from scheduler_app.dispatch.reconcile import reconcile
from scheduler_app.errors import ScheduleValidationError, storable_error
from scheduler_app.events import occurrence_finished
from scheduler_app.forecast.counts import forecast
from scheduler_app.handoff.router import TargetRouter
from scheduler_app.models import (
    HandoffTarget,
    KillSwitch,
    Occurrence,
    OccurrenceState,
    Schedule,
)
from scheduler_app.observability.pinned import Answer
from scheduler_app.services.replay import replay_occurrence
from scheduler_app.webhooks import delivery as webhooks_delivery
from scheduler_app.webhooks.delivery import Deliverer
from scheduler_app.webhooks.loop import DeliveryLoop
from scheduler_app.webhooks.outcomes import retry_after
from scheduler_app.worker import claiming
from tests.integration.event_receiver import BODY, OLD_SECRET, SECRET, Receiver, receiving
from tests.integration.observability_support import exporter, provider
from tests.integration.support import START, MemoryPublisher, schedule, ticker

pytestmark = pytest.mark.django_db
__all__ = ["exporter", "provider"]  # fixtures

EVENT = "event:contract.deadline_reached"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with receiving(Receiver()) as running:
        yield running


def endpoints(url: str, **extra: Any) -> dict[str, Any]:
    return {"billing": {"url": url, "secrets": [SECRET], **extra}}


@pytest.fixture
def configured(receiver: Receiver) -> Iterator[Receiver]:
    with override_settings(
        SCHEDULER_EVENT_ENDPOINTS=endpoints(receiver.url),
        SCHEDULER_EVENT_ALLOWED_HOSTS=("127.0.0.1",),
    ):
        yield receiver


def beat(clock: FakeClock) -> Any:
    """A Celery beat: it materializes every schedule and hands off only Celery's rows."""
    return ticker(TargetRouter({HandoffTarget.CELERY: MemoryPublisher()}), clock)  # type: ignore[arg-type]


def event_schedule(clock: FakeClock, **fields: Any) -> Schedule:
    fields.setdefault("kwargs", {"contract_id": 42})
    fields.setdefault("options", {"endpoint": "billing"})
    fields.setdefault("max_attempts", 3)
    fields.setdefault("retry_delay", 30)
    fields.setdefault("task", EVENT)
    return schedule(clock, kind="interval", rule="3600s", **fields)


def due(clock: FakeClock, **fields: Any) -> Occurrence:
    """An event schedule at its first slot, materialized by the beat."""
    target = event_schedule(clock, **fields)
    assert target.next_run_at is not None
    clock.set(target.next_run_at)
    beat(clock).tick()
    return Occurrence.objects.get(schedule=target)


def deliver(loop: DeliveryLoop) -> None:
    """One round, and every request it started ended and written (a running process writes
    them in its next rounds)."""
    loop.step()
    loop.drain()


def stored(row: Occurrence) -> Occurrence:
    return Occurrence.objects.get(pk=row.pk)


def test_an_event_is_delivered_signed_as_a_cloudevent_once(configured: Receiver) -> None:
    clock = FakeClock(START)
    row = due(clock)
    assert row.target == HandoffTarget.EVENT
    assert row.state == OccurrenceState.PENDING  # the Celery beat left it in the outbox
    loop = DeliveryLoop(clock=clock)
    assert loop.step() is True
    loop.drain()
    loop.pool.shutdown()
    assert (stored(row).state, stored(row).attempts) == (OccurrenceState.SUCCEEDED, 1)
    assert configured.bad_signatures == 0
    [request] = configured.requests
    headers, event = request["headers"], request["event"]
    assert headers["content-type"].startswith("application/cloudevents+json")
    assert headers["webhook-id"] == str(row.pk)
    assert event["specversion"] == "1.0"
    assert event["id"] == str(row.pk)
    assert event["type"] == "contract.deadline_reached"
    assert event["source"] == f"/scheduler/schedules/{row.schedule_id}"
    assert datetime.fromisoformat(event["time"]) == row.scheduled_for
    assert event["data"]["payload"] == {"contract_id": 42}
    assert event["data"]["occurrence"]["occurrence_id"] == str(row.pk)
    assert event["data"]["occurrence"]["scheduled_for"] == row.scheduled_for.isoformat().replace(
        "+00:00", "Z"
    )


def test_503_then_200_is_retried_after_retry_after_then_succeeds(configured: Receiver) -> None:
    configured.answers = [(503, {"Retry-After": "120"})]
    clock = FakeClock(START)
    row = due(clock)
    loop = DeliveryLoop(clock=clock)
    deliver(loop)
    waiting = stored(row)
    assert waiting.state == OccurrenceState.RETRYING
    assert "HTTP 503" in waiting.last_error
    assert waiting.not_before >= clock.now() + timedelta(seconds=120)  # not the 30 s backoff
    clock.advance(timedelta(seconds=60))
    deliver(loop)
    assert len(configured.requests) == 1  # not before Retry-After
    clock.set(waiting.not_before)
    deliver(loop)
    loop.pool.shutdown()
    done = stored(row)
    assert done.state == OccurrenceState.SUCCEEDED
    assert done.attempts == 2
    assert [r["headers"]["webhook-id"] for r in configured.requests] == [str(row.pk)] * 2
    assert list(configured.accepted) == [str(row.pk)]


def test_400_fails_at_once_and_a_replay_delivers_it_under_the_same_id(
    configured: Receiver,
) -> None:
    configured.answers = [(400, {})]
    clock = FakeClock(START)
    row = due(clock)
    loop = DeliveryLoop(clock=clock)
    deliver(loop)
    failed = stored(row)
    assert failed.state == OccurrenceState.FAILED
    assert failed.reason == "rejected"
    assert "HTTP 400" in failed.last_error
    assert configured.accepted == {}
    replay_occurrence(row.pk, clock=clock)
    deliver(loop)
    loop.pool.shutdown()
    assert stored(row).state == OccurrenceState.SUCCEEDED
    assert list(configured.accepted) == [str(row.pk)]


def test_attempts_used_up_end_failed(configured: Receiver) -> None:
    configured.answers = [(500, {}), (429, {})]
    clock = FakeClock(START)
    row = due(clock, max_attempts=2)
    loop = DeliveryLoop(clock=clock)
    deliver(loop)
    clock.set(stored(row).not_before)
    deliver(loop)
    loop.pool.shutdown()
    ended = stored(row)
    assert (ended.state, ended.reason) == (OccurrenceState.FAILED, "retries_exhausted")
    assert "HTTP 429" in ended.last_error


@pytest.mark.parametrize("delivered_before_dying", [False, True])
def test_a_killed_delivery_process_is_delivered_again_never_accepted_twice(
    configured: Receiver, delivered_before_dying: bool
) -> None:
    """The process claimed the attempt (and maybe posted it) and was killed before writing
    the outcome: the beat's reconciler puts it back when the lease runs out, the next process
    delivers it under the same ``webhook-id``, and the receiver accepts it once."""
    clock = FakeClock(START)
    row = due(clock)
    dead = DeliveryLoop(clock=clock)
    deliver(dead)
    dead.pool.shutdown()
    # Undo the outcome as if it had never been written: the process died first.
    Occurrence.objects.filter(pk=row.pk).update(
        state=OccurrenceState.DISPATCHED, finished_at=None, attempts=0
    )
    claim = claiming.claim(
        row.pk, owner="events@dead", now=clock.now(), lease=timedelta(seconds=20), task=EVENT
    )
    assert claim.claimed
    if not delivered_before_dying:
        configured.accepted.clear()
    clock.advance(timedelta(seconds=21))
    reconcile(clock.now(), retry_grace=timedelta(seconds=60))  # the beat's: the lease ran out
    assert stored(row).state == OccurrenceState.PENDING
    alive = DeliveryLoop(clock=clock)
    deliver(alive)
    alive.pool.shutdown()
    assert stored(row).state == OccurrenceState.SUCCEEDED
    assert list(configured.accepted) == [str(row.pk)]
    assert configured.duplicates == (1 if delivered_before_dying else 0)
    assert {r["headers"]["webhook-id"] for r in configured.requests} == {str(row.pk)}


def test_two_processes_never_post_one_attempt_twice(configured: Receiver) -> None:
    clock = FakeClock(START)
    row = due(clock)
    first, second = DeliveryLoop(clock=clock), DeliveryLoop(clock=clock)
    first.step()  # its request in flight
    second.step()  # finds the attempt claimed
    first.drain()
    second.drain()
    first.pool.shutdown()
    second.pool.shutdown()
    assert stored(row).state == OccurrenceState.SUCCEEDED
    assert len(configured.requests) == 1


def test_rotated_secrets_are_both_accepted(receiver: Receiver) -> None:
    """Both secrets sign: a receiver still on the old one and one on the new both verify."""
    clock = FakeClock(START)
    settings = {"url": receiver.url, "secrets": [SECRET, OLD_SECRET]}
    with override_settings(
        SCHEDULER_EVENT_ENDPOINTS={"billing": settings},
        SCHEDULER_EVENT_ALLOWED_HOSTS=("127.0.0.1",),
    ):
        receiver.secret = OLD_SECRET
        row = due(clock)
        loop = DeliveryLoop(clock=clock)
        deliver(loop)
        loop.pool.shutdown()
    assert receiver.bad_signatures == 0
    assert list(receiver.accepted) == [str(row.pk)]
    assert len(receiver.requests[0]["headers"]["webhook-signature"].split(" ")) == 2


def test_a_loopback_endpoint_is_refused_unless_its_host_is_allowed(receiver: Receiver) -> None:
    """The SSRF rules of pings: a private, loopback or link-local address is refused at
    delivery unless the host is in SCHEDULER_EVENT_ALLOWED_HOSTS."""
    clock = FakeClock(START)
    with override_settings(SCHEDULER_EVENT_ENDPOINTS=endpoints(receiver.url)):
        row = due(clock)
        loop = DeliveryLoop(clock=clock)
        deliver(loop)
        loop.pool.shutdown()
    refused = stored(row)
    assert (refused.state, refused.reason) == (OccurrenceState.FAILED, "endpoint_refused")
    assert "SCHEDULER_EVENT_ALLOWED_HOSTS" in refused.last_error
    assert "127.0.0.1" not in refused.last_error  # the endpoint by its name only (review 13)
    assert str(receiver.port) not in refused.last_error
    assert receiver.requests == []


def test_allowing_a_receivers_host_for_events_does_not_open_it_to_pings(
    receiver: Receiver,
) -> None:
    """Review 13: events have their own allowed hosts; a schedule's ping_url to that host and
    port is still refused."""
    with (
        override_settings(
            SCHEDULER_EVENT_ENDPOINTS=endpoints(receiver.url),
            SCHEDULER_EVENT_ALLOWED_HOSTS=("127.0.0.1",),
        ),
        pytest.raises(ScheduleValidationError) as refused,
    ):
        schedule(FakeClock(START), kind="cron", rule="0 9 * * *", ping_url=receiver.url)
    assert refused.value.field == "ping_url"


def test_a_connection_refused_is_retried() -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, not listening
    url = f"http://127.0.0.1:{closed.getsockname()[1]}/hooks"
    clock = FakeClock(START)
    with override_settings(
        SCHEDULER_EVENT_ENDPOINTS=endpoints(url), SCHEDULER_EVENT_ALLOWED_HOSTS=("127.0.0.1",)
    ):
        row = due(clock)
        loop = DeliveryLoop(clock=clock)
        deliver(loop)
        loop.pool.shutdown()
    closed.close()
    waiting = stored(row)
    assert waiting.state == OccurrenceState.RETRYING
    assert "ConnectionRefusedError" in waiting.last_error


def test_an_endpoint_of_another_tenant_stored_past_the_services_is_refused(
    configured: Receiver,
) -> None:
    """Enforced at delivery too: a row edited in the database to use an endpoint its
    tenant may not use fails, nothing is sent."""
    clock = FakeClock(START)
    with override_settings(
        SCHEDULER_EVENT_ENDPOINTS={
            **endpoints(configured.url, tenants=["acme"]),
            "ours": {"url": configured.url, "secrets": [OLD_SECRET], "tenants": ["globex"]},
        }
    ):
        row = due(clock, tenant="globex", options={"endpoint": "ours"})
        Schedule.objects.filter(pk=row.schedule_id).update(options={"endpoint": "billing"})
        loop = DeliveryLoop(clock=clock)
        deliver(loop)
        loop.pool.shutdown()
    refused = stored(row)
    assert (refused.state, refused.reason) == (OccurrenceState.FAILED, "endpoint_refused")
    assert "not one tenant 'globex' may use" in refused.last_error
    assert configured.requests == []


def test_a_kill_switch_skips_the_event(configured: Receiver) -> None:
    clock = FakeClock(START)
    row = due(clock)
    KillSwitch.objects.create(scope="task", target=EVENT, reason="incident", changed_at=START)
    loop = DeliveryLoop(clock=clock)
    deliver(loop)
    loop.pool.shutdown()
    assert configured.requests == []
    skipped = stored(row)
    assert (skipped.state, skipped.reason) == (OccurrenceState.SKIPPED, "kill_switch")


def test_an_endpoint_takes_at_most_its_concurrency_per_round(configured: Receiver) -> None:
    clock = FakeClock(START)
    with override_settings(SCHEDULER_EVENT_ENDPOINTS=endpoints(configured.url, concurrency=2)):
        made = [event_schedule(clock, name=f"e{n}", kwargs={"n": n}) for n in range(5)]
        clock.set(max(target.next_run_at for target in made if target.next_run_at))
        beat(clock).tick()
        assert Occurrence.objects.count() == 5
        loop = DeliveryLoop(clock=clock)
        deliver(loop)
        assert len(configured.requests) == 2
        deliver(loop)
        deliver(loop)
        loop.pool.shutdown()
    assert len(configured.accepted) == 5


@pytest.mark.parametrize(
    ("fields", "field", "says"),
    [
        ({"task": "event:bad type!"}, "task", "is not an event type"),
        ({"options": {"endpoint": "nowhere"}}, "options.endpoint", "unknown endpoint 'nowhere'"),
        ({"args": [1]}, "args", "move these values into kwargs"),
        ({"tenant": "globex"}, "options.endpoint", "not one tenant 'globex' may use"),
        (
            {"task": "event:invoice.paid"},
            "options.endpoint",
            "does not accept events of type 'invoice.paid'",
        ),
    ],
)
def test_the_services_refuse_what_cannot_be_delivered(
    fields: dict[str, Any], field: str, says: str
) -> None:
    clock = FakeClock(START)
    configured = endpoints(
        "https://hooks.example.com/in", tenants=["", "acme"], types=["contract.*"]
    )
    with (
        override_settings(SCHEDULER_EVENT_ENDPOINTS=configured),
        pytest.raises(ScheduleValidationError) as refused,
    ):
        event_schedule(clock, **fields)
    assert refused.value.field == field
    assert says in refused.value.message
    assert not Schedule.objects.exists()


def test_the_only_endpoint_a_tenant_may_use_is_its_default() -> None:
    clock = FakeClock(START)
    with override_settings(
        SCHEDULER_EVENT_ENDPOINTS={
            **endpoints("https://hooks.example.com/in", tenants=["acme"]),
            "other": {"url": "https://other.example.com/", "secrets": [OLD_SECRET]},
        }
    ):
        made = event_schedule(clock, tenant="globex", options={})
        assert made.target == HandoffTarget.EVENT
        with pytest.raises(ScheduleValidationError, match="needs an endpoint"):
            event_schedule(clock, tenant="acme", options={}, name="two usable")


def test_a_deliverer_without_due_rows_does_nothing() -> None:
    clock = FakeClock(datetime(2026, 1, 5, tzinfo=UTC))
    report = Deliverer(pool=None, clock=clock).round()  # type: ignore[arg-type]
    assert report.delivered == 0


def test_declare_event_is_synced_into_an_event_schedule_and_edits_follow_the_code(
    configured: Receiver,
) -> None:
    celery_app.loader.import_default_modules()  # before isolating: see isolated_registry()
    clock = FakeClock(START)
    with isolated_registry() as declared:
        made = declare_event(
            "contract.deadline_reached",
            endpoint="billing",
            cron="0 9 * * *",
            timezone="Europe/Riga",
            kwargs={"contract_id": 42},
        )
        assert made.key == "event:contract.deadline_reached:default"
        sync_schedules(clock=clock, declarations=declared)
        row = Schedule.objects.get(key=made.key)
        assert (row.task, row.target) == (EVENT, HandoffTarget.EVENT)
        assert row.options == {"endpoint": "billing"}
        assert row.kwargs == {"contract_id": 42}
        assert sync_schedules(clock=clock, declarations=declared).count("unchanged") == 1


def test_declare_event_refuses_at_the_call_what_is_wrong() -> None:
    with isolated_registry():
        with pytest.raises(ScheduleValidationError) as bad_type:
            declare_event("contract deadline", cron="0 9 * * *")
        assert bad_type.value.field == "event_type"
        with pytest.raises(ScheduleValidationError) as bad_rule:
            declare_event("contract.deadline_reached", cron="0 25 * * *")
        assert bad_rule.value.field.startswith("cron")


def test_declare_event_with_an_unknown_endpoint_is_reported_by_the_sync(
    configured: Receiver,
) -> None:
    celery_app.loader.import_default_modules()
    with isolated_registry() as declared:
        declare_event("contract.deadline_reached", endpoint="nowhere", cron="0 9 * * *")
        report = sync_schedules(clock=FakeClock(START), declarations=declared)
    [error] = report.errors
    assert "unknown endpoint 'nowhere'" in error.detail
    assert not Schedule.objects.exists()


def contract_document(**target: Any) -> dict[str, Any]:
    return {
        "contract": "schedule.v1",
        "schedule_id": "contract-deadlines",
        "target": {
            "type": "event",
            "event_type": "contract.deadline_reached",
            "endpoint": "billing",
            "kwargs": {"contract_id": 42},
            **target,
        },
        "timing": {"kind": "CRON", "rule": "0 9 * * *", "timezone": "Europe/Riga"},
    }


def test_a_schedule_v1_event_target_imports_and_exports_the_same(configured: Receiver) -> None:
    result = import_text(json.dumps(contract_document()))
    assert not result.plan.problems
    stored = Schedule.objects.get(key="contract-deadlines")
    assert (stored.task, stored.target) == (EVENT, HandoffTarget.EVENT)
    assert stored.options == {"endpoint": "billing"}
    exported = export_document(stored)["target"]
    assert {k: exported[k] for k in ("type", "event_type", "endpoint", "kwargs")} == {
        "type": "event",
        "event_type": "contract.deadline_reached",
        "endpoint": "billing",
        "kwargs": {"contract_id": 42},
    }
    assert "options" not in exported and "task" not in exported
    assert export_document(stored, style="spec")["target"]["type"] == "EVENT"
    again = import_text(json.dumps(export_document(stored)))
    assert [change.action for change in again.plan.changes] == ["unchanged"]


@pytest.mark.parametrize(
    ("target", "path", "says"),
    [
        ({"event_type": "bad type"}, "target.event_type", "is not an event type"),
        ({"task": "demo.ping"}, "target.task", "takes event_type and endpoint instead"),
        ({"endpoint": "nowhere"}, "target.endpoint", "unknown endpoint 'nowhere'"),
    ],
)
def test_a_schedule_v1_event_target_is_refused_where_it_is_wrong(
    configured: Receiver, target: dict[str, Any], path: str, says: str
) -> None:
    with pytest.raises(ContractError) as refused:
        import_text(json.dumps(contract_document(**target)))
    problems = {problem.path: problem.message for problem in refused.value.problems}
    assert path in problems, problems
    assert says in problems[path]
    assert not Schedule.objects.exists()


def test_with_beat_the_delivery_process_materializes_and_delivers_alone(
    configured: Receiver,
) -> None:
    """``run_event_deliveries --beat``: no Celery beat, no run_scheduler."""
    clock = FakeClock(START)
    target = event_schedule(clock)
    assert target.next_run_at is not None
    clock.set(target.next_run_at)
    loop = DeliveryLoop(clock=clock, beat=True)
    loop.run(max_rounds=1)
    [row] = Occurrence.objects.filter(schedule=target)
    assert row.state == OccurrenceState.SUCCEEDED
    assert list(configured.accepted) == [str(row.pk)]


def test_the_command_without_the_extra_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(webhooks, "AVAILABLE", False)
    with pytest.raises(CommandError, match=r"\[events\]"):
        call_command("run_event_deliveries", "--max-rounds", "1")


def test_the_command_refuses_a_misconfigured_endpoint() -> None:
    broken = {"billing": {"url": "https://hooks.example.com/", "secrets": ["not-a-secret"]}}
    with (
        override_settings(SCHEDULER_EVENT_ENDPOINTS=broken),
        pytest.raises(CommandError, match=r"SCHEDULER_EVENT_ENDPOINTS\['billing'\]"),
    ):
        call_command("run_event_deliveries", "--max-rounds", "1")


def test_the_command_runs_rounds_and_says_what_it_did(configured: Receiver) -> None:
    out = io.StringIO()
    call_command("run_event_deliveries", "--max-rounds", "1", "--beat", stdout=out)
    assert "run_event_deliveries started" in out.getvalue()
    assert "stopped after 1 round(s)" in out.getvalue()


def test_a_misconfigured_endpoint_is_a_system_check_error() -> None:
    broken = {"billing": {"url": "ftp://hooks.example.com/", "secrets": [SECRET]}}
    with override_settings(SCHEDULER_EVENT_ENDPOINTS=broken):
        [error] = check_event_endpoints()
    assert error.id == "scheduler_app.E030"
    assert "SCHEDULER_EVENT_ENDPOINTS['billing'] url" in error.msg
    with override_settings(SCHEDULER_EVENT_ENDPOINTS=endpoints("https://hooks.example.com/")):
        assert check_event_endpoints() == []


def test_a_finished_event_is_announced_as_every_occurrence_is(
    configured: Receiver, django_capture_on_commit_callbacks: Any
) -> None:
    """The signal the metrics, the failure handling and the monitor listen to."""
    finished: list[tuple[str, str]] = []

    def listen(sender: Any, occurrence: Occurrence, state: str, **kwargs: Any) -> None:
        finished.append((str(occurrence.pk), state))

    occurrence_finished.connect(listen)
    try:
        clock = FakeClock(START)
        row = due(clock)
        loop = DeliveryLoop(clock=clock)
        with django_capture_on_commit_callbacks(execute=True):
            deliver(loop)
        loop.pool.shutdown()
    finally:
        occurrence_finished.disconnect(listen)
    assert finished == [(str(row.pk), OccurrenceState.SUCCEEDED)]


def test_a_traced_delivery_carries_the_occurrences_trace(
    configured: Receiver, exporter: InMemorySpanExporter
) -> None:
    """With an OpenTelemetry SDK: the request's ``traceparent`` is in the occurrence's trace
    (trace id = its UUID), under the delivery's ``scheduler.deliver`` span."""
    clock = FakeClock(START)
    row = due(clock)
    loop = DeliveryLoop(clock=clock)
    deliver(loop)
    loop.pool.shutdown()
    [request] = configured.requests
    _, trace_id, span_id, _ = request["headers"]["traceparent"].split("-")
    assert trace_id == row.pk.hex
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert spans["scheduler.deliver"].context.span_id == int(span_id, 16)
    run = spans["scheduler.run"]
    assert run.attributes["scheduler.outcome"] == OccurrenceState.SUCCEEDED
    assert run.attributes["scheduler.task"] == EVENT


class Holding(Receiver):
    """A receiver whose answers wait until ``release`` is set (a slow endpoint)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def receive(
        self,
        headers: dict[str, str],
        body: bytes,
        answer: tuple[int, dict[str, str]] | None = None,
    ) -> tuple[int, dict[str, str]]:
        self.release.wait(10)
        return super().receive(headers, body, answer)


def test_a_slow_endpoint_holds_its_own_slots_not_the_others(receiver: Receiver) -> None:
    """One tenant's endpoint that takes its time: the other tenant's events are delivered and
    written meanwhile, round after round."""
    clock = FakeClock(START)
    with receiving(Holding()) as slow:
        assert isinstance(slow, Holding)
        configured = {
            "slow": {"url": slow.url, "secrets": [SECRET], "tenants": ["acme"]},
            "fast": {"url": receiver.url, "secrets": [SECRET], "tenants": ["globex"]},
        }
        with override_settings(
            SCHEDULER_EVENT_ENDPOINTS=configured, SCHEDULER_EVENT_ALLOWED_HOSTS=("127.0.0.1",)
        ):
            waiting = due(clock, tenant="acme", options={"endpoint": "slow"})
            quick = due(clock, tenant="globex", options={"endpoint": "fast"}, name="quick")
            loop = DeliveryLoop(clock=clock)
            loop.step()
            for _ in range(50):  # rounds while the slow request is in flight
                loop.step(wait=0.1)
                if stored(quick).state == OccurrenceState.SUCCEEDED:
                    break
            assert stored(quick).state == OccurrenceState.SUCCEEDED
            assert stored(waiting).state == OccurrenceState.RUNNING
            slow.release.set()
            loop.drain()
            loop.pool.shutdown()
    assert stored(waiting).state == OccurrenceState.SUCCEEDED


def test_the_load_ahead_counts_events_in_their_own_lane(configured: Receiver) -> None:
    clock = FakeClock(START)
    schedule(clock, task=EVENT, kind="cron", rule="0 * * * *", options={"endpoint": "billing"})
    schedule(clock, kind="cron", rule="30 * * * *")
    ahead = forecast(Schedule.objects.all(), START, days=1)
    assert ahead.lanes[("", HandoffTarget.EVENT)] == 24
    assert ahead.lanes[("", HandoffTarget.CELERY)] == 24


def test_an_answer_with_a_nul_byte_is_written_and_the_others_too(receiver: Receiver) -> None:
    """Review 13 (High on PostgreSQL): an error page with NUL bytes used to make the outcome's
    write raise, losing the round's other outcomes."""
    clock = FakeClock(START)
    with receiving(Receiver()) as broken:
        broken.answers = [(502, {BODY: "gateway\x00\x1f error"})]
        configured = {
            "broken": {"url": broken.url, "secrets": [SECRET], "tenants": ["acme"]},
            "fine": {"url": receiver.url, "secrets": [SECRET], "tenants": ["globex"]},
        }
        with override_settings(
            SCHEDULER_EVENT_ENDPOINTS=configured, SCHEDULER_EVENT_ALLOWED_HOSTS=("127.0.0.1",)
        ):
            bad = due(clock, tenant="acme", options={"endpoint": "broken"})
            good = due(clock, tenant="globex", options={"endpoint": "fine"}, name="good")
            deliver(DeliveryLoop(clock=clock))
    assert stored(good).state == OccurrenceState.SUCCEEDED
    waiting = stored(bad)
    assert waiting.state == OccurrenceState.RETRYING
    assert waiting.last_error.endswith("answered HTTP 502: gateway error")


def test_a_stored_error_has_no_nul_nor_lone_surrogate_and_a_bounded_length() -> None:
    assert storable_error("boom\x00here\ud800") == "boom\ufffdhere?"
    assert len(storable_error("x" * 5000)) == 4000


def test_a_superscript_retry_after_is_not_a_number_of_seconds() -> None:
    answer = Answer(503, {"retry-after": "\u00b2"})
    assert retry_after(answer, START) is None
    assert retry_after(Answer(503, {"retry-after": "120"}), START) == START + timedelta(seconds=120)


def test_the_event_says_its_tenant(configured: Receiver) -> None:
    clock = FakeClock(START)
    with override_settings(SCHEDULER_EVENT_ENDPOINTS=endpoints(configured.url, tenants=["acme"])):
        due(clock, tenant="acme")
        deliver(DeliveryLoop(clock=clock))
    [request] = configured.requests
    assert request["event"]["tenant"] == "acme"


def test_a_backlog_of_events_is_never_ended_never_started(configured: Receiver) -> None:
    """Review 13: a row handed off (dispatched) for longer than SCHEDULER_DISPATCH_TIMEOUT is
    not a lost broker message when it is an event: the reconciler leaves it to its delivery."""
    clock = FakeClock(START)
    row = due(clock)
    from_outbox = DeliveryLoop(clock=clock)
    Occurrence.objects.filter(pk=row.pk).update(
        state=OccurrenceState.DISPATCHED, dispatched_at=START, publish_count=5
    )
    clock.advance(timedelta(hours=5))
    reconcile(clock.now(), retry_grace=timedelta(seconds=60))
    assert stored(row).state == OccurrenceState.DISPATCHED
    deliver(from_outbox)
    assert stored(row).state == OccurrenceState.SUCCEEDED


def test_deliveries_do_not_take_the_tenants_share_of_name_resolutions(
    configured: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bench found it: a tenant's deliveries took the pings' share of name resolutions
    (two at once per tenant, the third refused at once as a timeout), so most of a burst of
    one tenant was retried. An endpoint's host is the settings': no share of a tenant's."""
    asked: list[object] = []
    real = webhooks_delivery.exchange

    def spy(url: str, **kwargs: Any) -> Any:
        asked.append(kwargs.get("tenant", "missing"))
        return real(url, **kwargs)

    monkeypatch.setattr(webhooks_delivery, "exchange", spy)
    clock = FakeClock(START)
    with override_settings(SCHEDULER_EVENT_ENDPOINTS=endpoints(configured.url, concurrency=8)):
        made = [event_schedule(clock, name=f"e{n}", kwargs={"n": n}) for n in range(8)]
        clock.set(max(target.next_run_at for target in made if target.next_run_at))
        beat(clock).tick()
        loop = DeliveryLoop(clock=clock)
        deliver(loop)
        loop.pool.shutdown()
    states = Counter(Occurrence.objects.values_list("state", flat=True))
    assert states == {OccurrenceState.SUCCEEDED: 8}
    assert asked == [None] * 8
