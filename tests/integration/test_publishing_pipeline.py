"""The Redis pipeline path writes what ``send_task`` writes, and loses nothing when Redis fails.

Every message is published twice to the same Redis db, once through the pipeline and once
through ``send_task``, and the two envelopes are compared field by field. Only two values may
differ, and they are checked separately:

- ``properties.delivery_tag``: kombu draws a fresh uuid for every publish;
- ``properties.expiration``: milliseconds from the publish instant to ``expires`` (Redis ignores
  it; the two publishes happen a few milliseconds apart).
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis
from celery import Celery
from celery.signals import before_task_publish
from kombu import Exchange
from kombu.transport.redis import Channel as RedisChannel

from scheduler_app import publishing
from scheduler_app.clock import FakeClock
from scheduler_app.handoff.protocol import PartialPublish
from scheduler_app.models import Occurrence, OccurrenceState, Schedule, ScheduleVersion
from scheduler_app.publishing import CeleryPublisher
from scheduler_app.publishing import redis as publishing_redis
from tests.integration.publishing_support import add_task_with_own_options, declare_bound_queue
from tests.integration.support import START, schedule, ticker

MINUTE = timedelta(minutes=1)
IGNORED = ("delivery_tag", "expiration")


@pytest.fixture
def prefix() -> str:
    return f"pipeline-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def client(redis_url: str, prefix: str) -> Iterator[redis.Redis]:
    connection = redis.Redis.from_url(redis_url)
    yield connection
    for key in connection.scan_iter(match=f"*{prefix}*"):
        connection.delete(key)
    connection.close()


@pytest.fixture
def app(redis_url: str, prefix: str) -> Iterator[Celery]:
    """Default queue, a ``task_routes`` queue, a priority route, a named direct exchange, and a
    locally registered task with options of its own."""
    exchange = Exchange(f"{prefix}-exchange", type="direct")
    app = Celery("pipeline-test", broker=redis_url, set_as_current=False)
    app.conf.task_default_queue = f"{prefix}-default"
    app.conf.task_routes = {
        "tests.routed": {"queue": f"{prefix}-routed"},
        "tests.urgent": {"queue": f"{prefix}-urgent", "priority": 6},
        "tests.exchanged": {"exchange": exchange.name, "routing_key": "bound"},
    }

    add_task_with_own_options(app, prefix)
    declare_bound_queue(app, prefix, exchange)
    yield app
    app.close()


@pytest.fixture
def traced() -> Iterator[None]:
    """A ``before_task_publish`` receiver that adds a header, as tracing libraries do."""

    def add_header(headers: dict[str, Any], **_: Any) -> None:
        headers["traceparent"] = "00-abc-def-01"

    before_task_publish.connect(add_header, weak=False)
    yield
    before_task_publish.disconnect(add_header)


def occurrence(
    task: str,
    kwargs: dict[str, Any],
    *,
    eta: bool,
    expires: bool,
    options: dict[str, Any] | None = None,
    args: list[Any] | None = None,
) -> Occurrence:
    """An unsaved occurrence: publishing reads it, never writes it."""
    scheduled = datetime(2026, 3, 29, 0, 30, tzinfo=UTC)
    version = ScheduleVersion(version=3, definition={"objective": "freshness"})
    return Occurrence(
        id=uuid.uuid4(),
        schedule=Schedule(id=uuid.uuid4(), options=options or {}),
        schedule_version=version,
        trigger="scheduled",
        scheduled_for=scheduled,
        window_start=scheduled,
        window_end=scheduled + MINUTE,
        timezone="Europe/Riga",
        idempotency_key=f"key-{uuid.uuid4().hex}",
        task=task,
        args=args or [],
        kwargs=kwargs,
        not_before=datetime.now(UTC) + timedelta(hours=1) if eta else scheduled,
        deadline_at=datetime.now(UTC) + timedelta(hours=1) if expires else None,
        created_at=scheduled,
    )


def cases() -> list[Occurrence]:
    return [
        occurrence("demo.ping", {"n": 1}, eta=False, expires=True),
        occurrence("demo.ping", {}, eta=True, expires=False),
        occurrence("demo.ping", {"n": 2}, eta=True, expires=True),
        occurrence(
            "tests.routed",
            {"city": "Rīga", "clock": "⏰", "nested": {"ü": [1, 2.5, None, True]}},
            eta=False,
            expires=True,
        ),
        occurrence("tests.urgent", {"n": 3}, eta=False, expires=True),
        occurrence("tests.exchanged", {"n": 4}, eta=True, expires=True),
        occurrence("tests.limited", {"n": 5}, eta=False, expires=False),
        occurrence("demo.echo", {"n": 6}, eta=False, expires=True, args=[1, "eu", [2]]),
        occurrence("demo.echo", {"n": 7}, eta=False, expires=True, args=["second"]),
    ]


def drain(client: redis.Redis, prefix: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every message on our lists, by task id: (list key, decoded envelope)."""
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for raw_key in sorted(client.scan_iter(match=f"{prefix}*")):
        if client.type(raw_key) != b"list":
            continue
        key = raw_key.decode()
        for payload in client.lrange(raw_key, 0, -1):
            envelope = json.loads(payload)
            found[envelope["headers"]["id"]] = (key, envelope)
        client.delete(raw_key)
    return found


def comparable(envelope: dict[str, Any]) -> dict[str, Any]:
    properties = {k: v for k, v in envelope["properties"].items() if k not in IGNORED}
    return {**envelope, "properties": properties}


@pytest.mark.redis
def test_the_pipeline_writes_the_envelopes_send_task_writes(
    app: Celery, client: redis.Redis, prefix: str, traced: None
) -> None:
    batch = cases()
    ids = [str(row.id) for row in batch]
    assert CeleryPublisher(app).uses_pipeline
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(app, "send_task", None)  # the pipeline path must not fall back
        assert CeleryPublisher(app).publish(batch) == batch
    piped = drain(client, prefix)
    assert CeleryPublisher(app, pipeline=False).publish(batch) == batch
    sent = drain(client, prefix)

    assert sorted(piped) == sorted(sent) == sorted(ids)
    for task_id in ids:
        (piped_key, piped_envelope), (sent_key, sent_envelope) = piped[task_id], sent[task_id]
        assert piped_key == sent_key
        assert comparable(piped_envelope) == comparable(sent_envelope)
        tag = piped_envelope["properties"]["delivery_tag"]
        assert tag != sent_envelope["properties"]["delivery_tag"]
        piped_ms = piped_envelope["properties"].get("expiration")
        sent_ms = sent_envelope["properties"].get("expiration")
        assert (piped_ms is None) == (sent_ms is None)
        if piped_ms is not None:
            assert abs(int(piped_ms) - int(sent_ms)) < 5_000

    # And they are the messages we mean: spot checks of what the comparison covered.
    by_task = {row.task: piped[str(row.id)] for row in batch}
    key, envelope = by_task["tests.routed"]
    assert key == f"{prefix}-routed"
    args, kwargs, _ = json.loads(base64.b64decode(envelope["body"]))
    assert (args, kwargs) == ([], batch[3].kwargs)
    headers = envelope["headers"]
    assert headers["task"] == "tests.routed"
    assert headers["expires"] is not None
    assert headers["scheduler"]["idempotency_key"] == batch[3].idempotency_key
    assert headers["traceparent"] == "00-abc-def-01"
    assert piped[ids[1]][1]["headers"]["eta"] == batch[1].not_before.isoformat()
    assert piped[ids[0]][0] == f"{prefix}-default"
    assert by_task["tests.urgent"][0] == f"{prefix}-urgent\x06\x166"
    assert by_task["tests.exchanged"][0] == f"{prefix}-bound"
    echoed = [piped[str(row.id)][1] for row in batch if row.task == "demo.echo"]
    bodies = [json.loads(base64.b64decode(envelope["body"]))[:2] for envelope in echoed]
    assert bodies == [[[1, "eu", [2]], {"n": 6}], [["second"], {"n": 7}]]
    assert echoed[0]["headers"]["argsrepr"] == "[1, 'eu', [2]]"
    limited = by_task["tests.limited"]
    assert limited[0] == f"{prefix}-limited"
    assert limited[1]["headers"]["timelimit"] == [30, 20]


@pytest.mark.redis
def test_a_schedules_routing_options_win_over_task_routes_on_both_paths(
    app: Celery, client: redis.Redis, prefix: str
) -> None:
    chosen = {"queue": f"{prefix}-chosen", "priority": 3}
    for pipeline in (True, False):
        batch = [
            occurrence("tests.routed", {}, eta=False, expires=True, options=chosen),
            occurrence("demo.ping", {}, eta=False, expires=True, options={"queue": None}),
        ]
        assert CeleryPublisher(app, pipeline=pipeline).publish(batch) == batch
        queued = drain(client, prefix)
        assert queued[str(batch[0].id)][0] == f"{prefix}-chosen\x06\x163", pipeline
        assert queued[str(batch[0].id)][1]["properties"]["priority"] == 3
        assert queued[str(batch[1].id)][0] == f"{prefix}-default", pipeline


@pytest.mark.redis
def test_the_pipeline_keeps_the_order_of_a_batch(
    app: Celery, client: redis.Redis, prefix: str
) -> None:
    batch = [occurrence("demo.ping", {"n": n}, eta=False, expires=True) for n in range(25)]
    assert CeleryPublisher(app).publish(batch) == batch
    # kombu LPUSHes and workers BRPOP: the oldest message is at the right end.
    payloads = client.lrange(f"{prefix}-default", 0, -1)
    assert [json.loads(p)["headers"]["id"] for p in reversed(payloads)] == [
        str(row.id) for row in batch
    ]


@pytest.mark.redis
def test_each_queue_keeps_the_order_of_its_messages_when_queues_interleave(
    app: Celery, client: redis.Redis, prefix: str
) -> None:
    """Payloads go to each list in one LPUSH of many values: a batch that alternates between
    two queues leaves each list as message-by-message LPUSHes would."""
    chosen = {"queue": f"{prefix}-chosen"}
    batch = [
        occurrence("demo.ping", {"n": n}, eta=False, expires=True, options=chosen if n % 2 else {})
        for n in range(10)
    ]
    assert CeleryPublisher(app).publish(batch) == batch
    for name, rows in ((f"{prefix}-default", batch[0::2]), (f"{prefix}-chosen", batch[1::2])):
        payloads = client.lrange(name, 0, -1)
        assert [json.loads(p)["headers"]["id"] for p in reversed(payloads)] == [
            str(row.id) for row in rows
        ], name
        assert client.rpop(name) is not None  # the oldest at the right end, as BRPOP takes it


@pytest.mark.redis
def test_kombu_still_has_the_private_channel_details_the_pipeline_uses(app: Celery) -> None:
    """If this fails, kombu changed a detail ``_redis_commands`` relies on: compare the new
    ``kombu/transport/redis.py`` and ``kombu/transport/virtual/base.py`` and adapt it."""
    with app.connection_for_write() as connection:
        channel = connection.default_channel
        assert isinstance(channel, RedisChannel)
        for name in ("_inplace_augment_message", "_lookup", "_get_message_priority", "_q_for_pri"):
            assert callable(getattr(channel, name, None)), name
        assert isinstance(channel._expires, dict)
        assert channel._q_for_pri("q", 6) == "q\x06\x166"


# --- failures: nothing is marked published that Redis did not take --------------------------


def due_rows(count: int, clock: FakeClock) -> None:
    for n in range(count):
        schedule(clock, kind="cron", rule="* * * * *", kwargs={"n": n}, name=f"pipe-{n}")
    clock.set(START + MINUTE)


class BrokenPipeline:
    """Makes the nth ``execute`` of a non-transactional Redis pipeline (the publishing ones;
    kombu binds queues in transactional ones) fail as a lost connection does."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, fail_on: int) -> None:
        self.calls = 0
        self.fail_on = fail_on
        original = redis.client.Pipeline.execute

        def execute(pipe: redis.client.Pipeline, *args: Any, **kwargs: Any) -> Any:
            self.calls += not pipe.transaction
            if self.calls == self.fail_on and not pipe.transaction:
                pipe.reset()
                raise redis.ConnectionError("Connection closed by server.")
            return original(pipe, *args, **kwargs)

        monkeypatch.setattr(redis.client.Pipeline, "execute", execute)


@pytest.mark.redis
@pytest.mark.django_db
def test_a_failed_pipeline_leaves_the_whole_batch_in_the_outbox(
    app: Celery, client: redis.Redis, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock(START)
    due_rows(4, clock)
    BrokenPipeline(monkeypatch, fail_on=1)
    result = ticker(CeleryPublisher(app), clock).tick()  # type: ignore[arg-type]
    assert (result.created, result.published, result.broker_failed) == (4, 0, True)
    assert set(Occurrence.objects.values_list("state", "publish_lease_until")) == {
        (OccurrenceState.PENDING, None)
    }

    monkeypatch.undo()
    clock.advance(1)
    assert ticker(CeleryPublisher(app), clock).tick().published == 4  # type: ignore[arg-type]
    queued = drain(client, prefix)
    assert sorted(queued) == sorted(
        str(pk) for pk in Occurrence.objects.values_list("pk", flat=True)
    )
    assert set(Occurrence.objects.values_list("state", flat=True)) == {OccurrenceState.DISPATCHED}


@pytest.mark.redis
@pytest.mark.django_db
def test_a_failure_mid_batch_marks_only_the_chunks_redis_took(
    app: Celery, client: redis.Redis, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock(START)
    due_rows(5, clock)
    monkeypatch.setattr(publishing_redis, "PIPELINE_CHUNK", 2)
    BrokenPipeline(monkeypatch, fail_on=2)  # the first chunk is written, the second is not
    result = ticker(CeleryPublisher(app), clock).tick()  # type: ignore[arg-type]
    assert (result.published, result.broker_failed) == (2, True)
    queued = drain(client, prefix)
    dispatched = Occurrence.objects.filter(state=OccurrenceState.DISPATCHED)
    assert sorted(queued) == sorted(str(pk) for pk in dispatched.values_list("pk", flat=True))
    assert Occurrence.objects.filter(state=OccurrenceState.PENDING).count() == 3


@pytest.mark.redis
def test_the_pipeline_error_says_which_were_published(app: Celery, client: redis.Redis) -> None:
    batch = [occurrence("demo.ping", {"n": n}, eta=False, expires=True) for n in range(3)]
    with pytest.MonkeyPatch.context() as patch:
        BrokenPipeline(patch, fail_on=1)
        with pytest.raises(PartialPublish) as failure:
            CeleryPublisher(app).publish(batch)
    assert failure.value.published == []
    assert "ConnectionError" in failure.value.cause


def test_an_unreachable_redis_publishes_nothing() -> None:
    app = Celery("pipeline-down", broker="redis://127.0.0.1:9/12", set_as_current=False)
    app.conf.broker_transport_options = {"max_retries": 0}
    app.conf.broker_connection_timeout = 0.5
    publisher = CeleryPublisher(app)
    assert publisher.uses_pipeline
    with pytest.raises(PartialPublish) as failure:
        publisher.publish([occurrence("demo.ping", {}, eta=False, expires=False)])
    assert failure.value.published == []
    app.close()


# --- the path follows the broker -----------------------------------------------------------


@pytest.mark.parametrize("broker", ["memory://", "filesystem://"])
def test_other_brokers_publish_message_by_message(
    broker: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    app = Celery("pipeline-fallback", broker=broker, set_as_current=False)
    if broker == "filesystem://":
        app.conf.broker_transport_options = {
            "data_folder_in": str(tmp_path),
            "data_folder_out": str(tmp_path),
            "control_folder": str(tmp_path / "control"),  # not ./control in the repository
        }
    sent: list[str] = []
    send_task = app.send_task

    def spy(name: str, **options: Any) -> Any:
        sent.append(options["task_id"])
        return send_task(name, **options)

    monkeypatch.setattr(app, "send_task", spy)
    monkeypatch.setattr(publishing, "RedisPipelinePublisher", None)  # must not be reached
    batch = [occurrence("demo.ping", {"n": n}, eta=False, expires=True) for n in range(3)]
    publisher = CeleryPublisher(app)
    assert not publisher.uses_pipeline
    assert publisher.publish(batch) == batch
    assert sent == [str(row.id) for row in batch]
    app.close()


def test_a_stand_in_for_the_celery_app_gets_send_task() -> None:
    class StandIn:
        pass

    assert not CeleryPublisher(StandIn()).uses_pipeline  # type: ignore[arg-type]


@pytest.mark.redis
def test_a_fanout_exchange_or_an_expiring_queue_is_left_to_send_task(
    app: Celery, prefix: str
) -> None:
    with app.connection_for_write() as connection:
        channel = connection.default_channel
        channel.exchange_declare(f"{prefix}-fanout", type="fanout")
        with pytest.raises(publishing.Unsupported):
            publishing_redis.destinations_of(channel, f"{prefix}-fanout", "")
        channel.queue_declare(f"{prefix}-expiring", arguments={"x-expires": 60_000})
        with pytest.raises(publishing.Unsupported):
            publishing_redis.destinations_of(channel, "", f"{prefix}-expiring")
        assert publishing_redis.destinations_of(channel, "", f"{prefix}-default") == [
            f"{prefix}-default"
        ]


@pytest.mark.redis
def test_an_unsupported_route_sends_the_whole_batch_with_send_task(
    app: Celery, client: redis.Redis, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unsupported(*_: Any) -> list[str]:
        raise publishing.Unsupported("fanout exchange")

    monkeypatch.setattr(publishing_redis, "destinations_of", unsupported)
    sent: list[str] = []
    send_task = app.send_task

    def spy(name: str, **options: Any) -> Any:
        sent.append(options["task_id"])
        return send_task(name, **options)

    monkeypatch.setattr(app, "send_task", spy)
    batch = [occurrence("demo.ping", {"n": n}, eta=False, expires=False) for n in range(3)]
    assert CeleryPublisher(app).publish(batch) == batch
    assert sent == [str(row.id) for row in batch]
    assert sorted(drain(client, prefix)) == sorted(sent)  # each once: nothing was piped first


def test_eta_only_when_the_occurrence_may_not_start_yet_by_the_publishers_clock() -> None:
    now = datetime(2026, 3, 29, 1, 0, tzinfo=UTC)
    row = occurrence("scheduler.noop", {}, eta=False, expires=False)
    row.not_before = now + timedelta(seconds=30)  # a retry's backoff: held until then
    assert publishing.TaskCall.of(row, now).eta == row.not_before
    # A lost run put back in the outbox (not_before = when it was requeued, already past):
    # no eta, so a worker whose clock lags the beat's never holds it back.
    row.not_before = now - timedelta(seconds=1)
    assert row.not_before > row.scheduled_for
    assert publishing.TaskCall.of(row, now).eta is None
    # A slot materialized, then published after the clock stepped back: due, no eta.
    row.scheduled_for = row.not_before = now + timedelta(minutes=5)
    assert publishing.TaskCall.of(row, now).eta is None
