"""The AMQP batch path puts in RabbitMQ what ``send_task`` puts there, and counts a message as
published only once RabbitMQ has confirmed it.

Every message is published twice to queues of its own test (a unique name prefix, deleted
afterwards), once through the batch path and once through ``send_task``, read back with
``basic.get`` and compared: body, properties and headers, exchange and routing key. Only two
values may differ: the delivery tag (the broker's, per delivery) and ``expiration``
(milliseconds from the publish instant to ``expires``; the two publishes are apart).

Needs RabbitMQ (``RABBITMQ_URL``, default the local guest account): skipped locally without
it, failed when ``CI`` is set.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import amqp
import pytest
from celery import Celery
from celery.signals import before_task_publish
from kombu import Connection, Exchange, Queue

from scheduler_app import publishing
from scheduler_app.handoff.protocol import PartialPublish
from scheduler_app.models import Occurrence, Schedule, ScheduleVersion
from scheduler_app.publishing import CeleryPublisher
from scheduler_app.publishing import amqp as publishing_amqp
from scheduler_app.publishing.amqp import AmqpConfirmPublisher, Confirms
from tests.conftest import require_server
from tests.integration.publishing_support import add_task_with_own_options, declare_bound_queue

RABBITMQ_URL = os.environ.get("RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672//")
MINUTE = timedelta(minutes=1)
QUEUES = ("default", "routed", "urgent", "limited", "bound", "full")
"""Every queue a test may fill, by suffix; ``bound`` is reached through the named exchange."""


@pytest.fixture
def rabbitmq_url() -> str:
    require_server("RabbitMQ", RABBITMQ_URL, 5672)
    return RABBITMQ_URL


@pytest.fixture
def prefix() -> str:
    return f"amqp-test-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def broker(rabbitmq_url: str, prefix: str) -> Iterator[Connection]:
    """A connection of the test's own, to read the queues; deletes them (and the exchanges
    named after them) at the end."""
    connection = Connection(rabbitmq_url)
    yield connection
    names = [f"{prefix}-{suffix}" for suffix in QUEUES]
    for name in names:
        connection.default_channel.queue_delete(name)
    for name in [*names, f"{prefix}-exchange"]:
        connection.default_channel.exchange_delete(name)
    connection.release()


def make_app(url: str, prefix: str, **transport_options: Any) -> Celery:
    """Default queue, a ``task_routes`` queue, a priority queue (``x-max-priority``), a named
    direct exchange, a queue that refuses past two messages (nacks), and a locally registered
    task with options of its own."""
    exchange = Exchange(f"{prefix}-exchange", type="direct")
    app = Celery("amqp-test", broker=url, set_as_current=False)
    app.conf.broker_transport_options = transport_options
    app.conf.task_default_queue = f"{prefix}-default"
    app.conf.task_queues = [
        Queue(f"{prefix}-default"),
        Queue(f"{prefix}-urgent", max_priority=10),
        Queue(f"{prefix}-full", max_length=2, queue_arguments={"x-overflow": "reject-publish"}),
    ]
    app.conf.task_routes = {
        "tests.routed": {"queue": f"{prefix}-routed"},
        "tests.urgent": {"queue": f"{prefix}-urgent", "priority": 6},
        "tests.exchanged": {"exchange": exchange.name, "routing_key": "bound"},
        "tests.void": {"exchange": exchange.name, "routing_key": "nowhere"},
        "tests.full": {"queue": f"{prefix}-full"},
    }

    add_task_with_own_options(app, prefix)
    declare_bound_queue(app, prefix, exchange)
    return app


@pytest.fixture
def app(broker: Connection, prefix: str) -> Iterator[Celery]:
    app = make_app(broker.as_uri(include_password=True), prefix)
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
    task: str, kwargs: dict[str, Any], *, eta: bool = False, expires: bool = False
) -> Occurrence:
    """An unsaved occurrence: publishing reads it, never writes it."""
    scheduled = datetime(2026, 3, 29, 0, 30, tzinfo=UTC)
    return Occurrence(
        id=uuid.uuid4(),
        schedule=Schedule(id=uuid.uuid4(), options={}),
        schedule_version=ScheduleVersion(version=3, definition={"objective": "freshness"}),
        trigger="scheduled",
        scheduled_for=scheduled,
        window_start=scheduled,
        window_end=scheduled + MINUTE,
        timezone="Europe/Riga",
        idempotency_key=f"key-{uuid.uuid4().hex}",
        task=task,
        kwargs=kwargs,
        not_before=datetime.now(UTC) + timedelta(hours=1) if eta else scheduled,
        deadline_at=datetime.now(UTC) + timedelta(hours=1) if expires else None,
        created_at=scheduled,
    )


def cases() -> list[Occurrence]:
    return [
        occurrence("demo.ping", {"n": 1}, expires=True),
        occurrence("demo.ping", {}, eta=True),
        occurrence("demo.ping", {"n": 2}, eta=True, expires=True),
        occurrence(
            "tests.routed",
            {"city": "Rīga", "clock": "⏰", "nested": {"ü": [1, 2.5, None, True]}},
            expires=True,
        ),
        occurrence("tests.urgent", {"n": 3}, expires=True),
        occurrence("tests.exchanged", {"n": 4}, eta=True, expires=True),
        occurrence("tests.limited", {"n": 5}),
    ]


def drain(broker: Connection, prefix: str) -> dict[str, tuple[str, Any]]:
    """Every message in the test's queues, by task id: (queue, the message as received)."""
    found: dict[str, tuple[str, Any]] = {}
    channel = broker.default_channel
    for suffix in QUEUES:
        queue = f"{prefix}-{suffix}"
        try:
            channel.queue_declare(queue, passive=True)
        except amqp.exceptions.NotFound:
            channel = broker.channel()  # the passive declare closed the channel
            continue
        while (message := channel.basic_get(queue, no_ack=True)) is not None:
            found[message.properties["application_headers"]["id"]] = (queue, message)
    return found


def comparable(message: Any) -> dict[str, Any]:
    properties = {k: v for k, v in message.properties.items() if k != "expiration"}
    info = message.delivery_info
    return {
        "body": message.body,
        "properties": properties,
        "route": (info["exchange"], info["routing_key"]),
    }


def channel_state(app: Celery) -> tuple[int, bool]:
    """Open channels on the pooled connection, and whether the producer's is in confirm mode."""
    with app.producer_or_acquire() as producer:
        channel = producer.channel
        return len(producer.connection.connection.channels), channel._confirm_selected


# --- the same messages ---------------------------------------------------------------------


def test_the_batch_publishes_the_messages_send_task_publishes(
    app: Celery, broker: Connection, prefix: str, traced: None
) -> None:
    batch = cases()
    ids = [str(row.id) for row in batch]
    publisher = CeleryPublisher(app)
    assert publisher.batch_path == "amqp"
    channels_before = channel_state(app)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(app, "send_task", None)  # the batch path must not fall back
        assert publisher.publish(batch) == batch
    assert channel_state(app) == channels_before  # its channel is closed, none left confirming
    batched = drain(broker, prefix)
    assert CeleryPublisher(app, pipeline=False).publish(batch) == batch
    sent = drain(broker, prefix)

    assert sorted(batched) == sorted(sent) == sorted(ids)
    for task_id in ids:
        (batched_queue, batched_message), (sent_queue, sent_message) = (
            batched[task_id],
            sent[task_id],
        )
        assert batched_queue == sent_queue
        assert comparable(batched_message) == comparable(sent_message)
        batched_ms = batched_message.properties.get("expiration")
        sent_ms = sent_message.properties.get("expiration")
        assert (batched_ms is None) == (sent_ms is None)
        if batched_ms is not None:
            assert abs(int(batched_ms) - int(sent_ms)) < 5_000

    # And they are the messages we mean: spot checks of what the comparison covered.
    by_task = {row.task: batched[str(row.id)] for row in batch}
    assert by_task["tests.routed"][0] == f"{prefix}-routed"
    assert by_task["tests.exchanged"][0] == f"{prefix}-bound"
    assert by_task["tests.limited"][0] == f"{prefix}-limited"
    queue, message = by_task["tests.urgent"]
    assert (queue, message.properties["priority"]) == (f"{prefix}-urgent", 6)
    headers = message.properties["application_headers"]
    assert headers["traceparent"] == "00-abc-def-01"
    assert headers["scheduler"]["idempotency_key"] == batch[4].idempotency_key
    assert by_task["tests.limited"][1].properties["application_headers"]["timelimit"] == [30, 20]


def test_with_confirm_publish_set_the_batch_still_waits_once(
    broker: Connection, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kombu's ``confirm_publish`` puts every channel of the connection in confirm mode and
    makes ``basic_publish`` wait for each message; the batch publishes without it."""
    waits: list[int] = []
    wait_each = amqp.Channel.basic_publish_confirm

    def counted(self: amqp.Channel, *args: Any, **kwargs: Any) -> Any:
        waits.append(1)
        return wait_each(self, *args, **kwargs)

    monkeypatch.setattr(amqp.Channel, "basic_publish_confirm", counted)
    app = make_app(broker.as_uri(include_password=True), prefix, confirm_publish=True)
    batch = [occurrence("demo.ping", {"n": n}) for n in range(50)]
    assert CeleryPublisher(app).publish(batch) == batch
    assert waits == []
    assert CeleryPublisher(app, pipeline=False).publish(batch) == batch
    assert len(waits) == len(batch)
    assert CeleryPublisher(app).publish(batch) == batch  # the pool's channels still work
    found = drain(broker, prefix)
    assert sorted(found) == sorted(str(row.id) for row in batch)
    app.close()


# --- published means confirmed ------------------------------------------------------------


def test_a_nack_publishes_the_confirmed_prefix(
    app: Celery, broker: Connection, prefix: str
) -> None:
    """The ``full`` queue takes two messages and nacks the rest (``x-overflow:
    reject-publish``): ``send_task`` without confirms would report them published."""
    batch = [
        occurrence("demo.ping", {"n": 0}),
        occurrence("tests.full", {"n": 1}),
        occurrence("tests.full", {"n": 2}),
        occurrence("tests.full", {"n": 3}),  # refused
        occurrence("demo.ping", {"n": 4}),
    ]
    with pytest.raises(PartialPublish) as failure:
        CeleryPublisher(app).publish(batch)
    assert failure.value.published == batch[:3]
    assert "tag 4" in failure.value.cause
    found = drain(broker, prefix)
    assert str(batch[3].id) not in found
    assert {str(row.id) for row in batch[:3]} <= set(found)


def test_a_connection_lost_mid_batch_publishes_the_confirmed_prefix(
    app: Celery, broker: Connection, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At most ``WINDOW`` messages are unconfirmed at a time, so when the socket dies at the
    25th message at least the first 15 are confirmed; the rest goes again, nothing is lost."""
    monkeypatch.setattr(publishing_amqp, "WINDOW", 10)
    publish_one = amqp.Channel._basic_publish
    count = [0]

    def dying(self: amqp.Channel, *args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        if count[0] == 25:
            self.connection.transport.sock.shutdown(socket.SHUT_RDWR)
        return publish_one(self, *args, **kwargs)

    batch = [occurrence("demo.ping", {"n": n}) for n in range(40)]
    with monkeypatch.context() as patch:
        patch.setattr(amqp.Channel, "_basic_publish", dying)
        with pytest.raises(PartialPublish) as failure:
            CeleryPublisher(app).publish(batch)
    published = failure.value.published
    assert published == batch[: len(published)]
    assert 15 <= len(published) < 25
    rest = batch[len(published) :]
    assert CeleryPublisher(app).publish(rest) == rest  # the pool reconnects
    assert sorted(drain(broker, prefix)) == sorted(str(row.id) for row in batch)


def test_no_confirm_in_time_publishes_nothing_and_the_next_batch_starts_clean(
    app: Celery, broker: Connection, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(publishing_amqp, "CONFIRM_TIMEOUT", 0.2)
    batch = [occurrence("demo.ping", {"n": n}) for n in range(3)]
    with monkeypatch.context() as patch:
        patch.setattr(Confirms, "ack", lambda self, tag, multiple: None)  # acks never arrive
        with pytest.raises(PartialPublish) as failure:
            CeleryPublisher(app).publish(batch)
    assert failure.value.published == []
    assert "ConfirmTimeout" in failure.value.cause
    assert CeleryPublisher(app).publish(batch) == batch  # late acks do not confuse the next
    assert sorted(drain(broker, prefix)) == sorted(str(row.id) for row in batch)


def test_a_missing_exchange_closes_the_channel_and_publishes_a_prefix(
    app: Celery, broker: Connection, prefix: str
) -> None:
    app.conf.task_routes = {"tests.lost": {"exchange": f"{prefix}-missing", "routing_key": "x"}}
    batch = [
        occurrence("demo.ping", {"n": 0}),
        occurrence("tests.lost", {}),
        occurrence("demo.ping", {}),
    ]
    with pytest.raises(PartialPublish) as failure:
        CeleryPublisher(app).publish(batch)
    published = failure.value.published
    assert published in (batch[:0], batch[:1])
    assert "NotFound" in failure.value.cause
    assert CeleryPublisher(app).publish(batch[2:]) == batch[2:]  # the next batch is fine
    found = drain(broker, prefix)
    assert {str(row.id) for row in [*published, batch[2]]} <= set(found)


def test_a_queue_declared_otherwise_publishes_nothing_and_the_pool_recovers(
    app: Celery, broker: Connection, prefix: str
) -> None:
    """RabbitMQ refuses to declare the priority queue again without ``x-max-priority``: the
    declaration closes the pooled producer's channel. Nothing counts as published, and the
    next user of the pool (the batch or ``send_task``) gets a working connection."""
    broker.default_channel.queue_declare(f"{prefix}-urgent", durable=True, auto_delete=False)
    batch = [occurrence("demo.ping", {}), occurrence("tests.urgent", {})]
    with pytest.raises(PartialPublish) as failure:
        CeleryPublisher(app).publish(batch)
    assert failure.value.published == []
    assert "PreconditionFailed" in failure.value.cause
    assert CeleryPublisher(app, pipeline=False).publish(batch[:1]) == batch[:1]
    assert CeleryPublisher(app).publish(batch[:1]) == batch[:1]
    assert list(drain(broker, prefix)) == [str(batch[0].id)]


def test_a_returned_message_is_not_published_when_mandatory(
    app: Celery, broker: Connection, prefix: str
) -> None:
    batch = [occurrence("demo.ping", {}), occurrence("tests.void", {}), occurrence("demo.ping", {})]
    with pytest.raises(PartialPublish) as failure:
        AmqpConfirmPublisher(app, datetime.now(UTC), mandatory=True).publish(batch)
    assert failure.value.published == batch[:1]
    # Without it, as with send_task, the broker confirms and drops what no queue is bound for.
    assert AmqpConfirmPublisher(app, datetime.now(UTC)).publish(batch) == batch


# --- the path follows the broker -----------------------------------------------------------


def test_pipeline_false_sends_message_by_message(
    app: Celery, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(publishing, "AmqpConfirmPublisher", None)  # must not be reached
    assert CeleryPublisher(app, pipeline=False).batch_path is None
    batch = [occurrence("demo.ping", {"n": n}) for n in range(3)]
    assert CeleryPublisher(app, pipeline=False).publish(batch) == batch


def test_the_broker_url_chooses_the_path_without_connecting() -> None:
    for url, path in [
        ("amqp://guest@127.0.0.1:9//", "amqp"),
        ("pyamqp://guest@127.0.0.1:9//", "amqp"),
        ("redis://127.0.0.1:9/0", "redis"),
        ("memory://", None),
    ]:
        app = Celery("amqp-path", broker=url, set_as_current=False)
        assert CeleryPublisher(app).batch_path == path, url
        app.close()


# --- the confirm bookkeeping ---------------------------------------------------------------


def sent(count: int) -> Confirms:
    confirms = Confirms()
    for _ in range(count):
        confirms.add()
    return confirms


def test_multiple_acks_settle_every_tag_up_to_theirs() -> None:
    confirms = sent(5)
    confirms.ack(3, multiple=True)
    assert (confirms.confirmed_prefix(), confirms.unsettled) == (3, 2)
    confirms.ack(5, multiple=False)
    assert (confirms.confirmed_prefix(), confirms.unsettled) == (3, 1)
    confirms.ack(4, multiple=False)
    assert (confirms.confirmed_prefix(), confirms.unsettled, confirms.refused) == (5, 0, None)


def test_a_nack_ends_the_prefix_even_when_later_tags_are_acked() -> None:
    confirms = sent(5)
    confirms.ack(1, multiple=False)
    confirms.nack(3, multiple=True)  # 2 and 3 refused
    confirms.ack(5, multiple=True)  # 4 and 5 confirmed, the refused stay refused
    assert (confirms.confirmed_prefix(), confirms.unsettled, confirms.refused) == (1, 0, 2)


def test_a_returned_message_stays_refused_when_its_ack_follows() -> None:
    confirms = sent(3)
    confirms.returned(2)
    confirms.ack(3, multiple=True)
    assert (confirms.confirmed_prefix(), confirms.unsettled, confirms.refused) == (1, 0, 2)


def test_unknown_tags_are_ignored() -> None:
    confirms = sent(2)
    confirms.ack(7, multiple=False)
    confirms.returned(0)
    assert (confirms.confirmed_prefix(), confirms.unsettled) == (0, 2)
    confirms.ack(7, multiple=True)
    assert (confirms.confirmed_prefix(), confirms.unsettled) == (2, 0)
