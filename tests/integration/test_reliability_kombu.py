"""The kombu ``_connparams`` AttributeError that made workers exit after a Redis restart:
the minimal reproduction (stock kombu), and our transport surviving the same sequence.

After a Redis restart Celery closes the broker connection and opens a new one; work still
tied to the old channel (a late ``acks_late`` ack, a reject, the QoS finalizer's restore,
``restore_visible``) then rebuilds the channel's pool from ``channel.connection.client``,
which is gone: ``AttributeError``, not the connection error Celery expects, and the worker
process exits. See ``scheduler_app/publishing/transport.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from kombu import Connection, Queue

from scheduler_app.publishing.transport import Transport

STOCK = "kombu.transport.redis:Transport"
OURS = "scheduler_app.publishing.transport:Transport"
PREFIX = "kombu-repro:"
"""Every key these tests write (queue, unacked hash and index) has this prefix: nothing
shared in the Redis database is touched."""
UNACKED = f"{PREFIX}unacked"


def own_keys(client: redis.Redis) -> list[bytes]:
    return list(client.scan_iter(f"{PREFIX}*"))


@pytest.fixture
def queue(redis_url: str) -> Iterator[str]:
    client = redis.Redis.from_url(redis_url)
    if keys := own_keys(client):
        client.delete(*keys)
    yield "repro-queue"
    if keys := own_keys(client):
        client.delete(*keys)


def unacked_message(url: str, transport: str, queue: str) -> tuple[Connection, Any, Any]:
    """A connection, its channel and one message received on it and not acknowledged."""
    connection = Connection(
        url, transport=transport, transport_options={"global_keyprefix": PREFIX}
    )
    channel = connection.channel()
    with connection.Producer(channel) as producer:
        producer.publish({"n": 1}, routing_key=queue, declare=[Queue(queue)])
    received: list[Any] = []
    consumer = connection.Consumer(
        Queue(queue), channel=channel, callbacks=[lambda body, msg: received.append(msg)]
    )
    consumer.consume()
    connection.drain_events(timeout=5)
    return connection, channel, received[0]


def reconnect(connection: Connection, channel: Any) -> None:
    """What the worker does when it reconnects: the old channel closed (nothing left to
    restore on it: its message was taken by the task), the old connection released."""
    channel.qos._delivered.clear()  # the running task holds the message, as in the worker
    channel.close()
    connection.release()


def test_stock_kombu_raises_attribute_error_on_a_late_ack(redis_url: str, queue: str) -> None:
    connection, channel, message = unacked_message(redis_url, STOCK, queue)
    reconnect(connection, channel)
    with pytest.raises(AttributeError, match="has no attribute"):
        message.ack()  # the task finished after the reconnect (acks_late)
    with pytest.raises(AttributeError):
        channel.qos.restore_visible(num=1, interval=1)


def test_our_transport_acks_late_and_restores_on_the_restarted_redis(
    redis_url: str, queue: str
) -> None:
    client = redis.Redis.from_url(redis_url)
    connection, channel, message = unacked_message(redis_url, OURS, queue)
    assert isinstance(connection.transport, Transport)
    assert client.hlen(UNACKED) == 1
    reconnect(connection, channel)
    message.ack()  # reaches Redis: the message leaves the unacked hash
    assert client.hlen(UNACKED) == 0
    channel.qos.restore_visible(num=1, interval=1)

    connection, channel, message = unacked_message(redis_url, OURS, queue)
    reconnect(connection, channel)
    message.reject(requeue=True)  # a cancelled run is put back on its queue
    assert client.llen(f"{PREFIX}{queue}") == 1


def test_redis_urls_use_our_transport(redis_url: str) -> None:
    assert isinstance(Connection(redis_url).transport, Transport)
    assert isinstance(Connection(redis_url.replace("redis://", "rediss://")).transport, Transport)
