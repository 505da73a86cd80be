"""The Redis batch path: messages built as ``send_task`` builds them, written with one
non-transactional pipeline per chunk (the same list keys and the same JSON envelope kombu's
``Channel._put`` writes)."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from celery import Celery
from kombu.exceptions import KombuError
from kombu.transport.virtual import Channel as VirtualChannel
from kombu.utils.json import dumps

from scheduler_app.handoff.protocol import PartialPublish
from scheduler_app.models import Occurrence
from scheduler_app.observability import tracing
from scheduler_app.observability.tracing import TRACE_HEADERS
from scheduler_app.publishing.calls import BROKER_ERRORS, TaskCall, Unsupported
from scheduler_app.publishing.envelopes import Envelope, learn
from scheduler_app.publishing.messages import MessageBuilder

logger = logging.getLogger("scheduler_app.publishing")

PIPELINE_CHUNK = 1000
"""Messages per Redis pipeline round trip: bounds the client buffer; a failed chunk and every
chunk after it count as not published."""


def is_redis_broker(app: Celery) -> bool:
    """kombu's Redis transport or a subclass (``rediss://``, ``sentinel://``); no I/O."""
    if not isinstance(app, Celery):
        return False
    with app.connection_for_write() as connection:
        transport = connection.get_transport_cls()
        # By name, not by import: importing kombu's Redis transport needs the redis extra.
        return any(
            cls.__module__ == "kombu.transport.redis" and cls.__name__ == "Transport"
            for cls in transport.__mro__
        )


def pipeline_applies(app: Celery) -> bool:
    """Cases ``send_task`` handles that the pipeline leaves to it: protocol 1, task-sent
    events, and publishing from inside a task (parent ids, inherited priority)."""
    conf = app.conf
    return (
        conf.task_protocol == 2
        and not conf.task_send_sent_event
        and app.current_worker_task is None
    )


class RedisPipelinePublisher:
    """One batch: build every message, declare its queues once, LPUSH in pipelines."""

    def __init__(self, app: Celery, now: datetime) -> None:
        self.app = app
        self.now = now

    def publish(self, occurrences: Sequence[Occurrence]) -> list[Occurrence]:
        """Publish in order. A broker error while writing a chunk raises ``PartialPublish``
        with the chunks written before it (at-least-once: the rest is published again with the
        same task id). A message that cannot be serialized stops the batch there, as on the
        ``send_task`` path."""
        built: list[tuple[Occurrence, list[tuple[str, str]]]] = []
        refused: KombuError | None = None
        try:
            with self.app.producer_or_acquire() as producer:
                builder = MessageBuilder(self.app, producer)
                envelopes = Envelopes(builder)
                for occurrence in occurrences:
                    try:
                        call = TaskCall.of(occurrence, self.now)
                        with tracing.publishing(occurrence):
                            commands = envelopes.commands(call)
                        built.append((occurrence, commands))
                    except KombuError as exc:  # e.g. the serializer refuses the kwargs
                        refused = exc
                        break
                builder.declare_queues()
                published = _push(builder.channel, built)
        except BROKER_ERRORS as exc:
            raise PartialPublish(published=[], cause=repr(exc)) from exc
        if refused is not None:
            raise PartialPublish(published=published, cause=repr(refused)) from refused
        return published


_UNKNOWN: Any = object()


class Envelopes:
    """The batch's messages as Redis commands, each kind's payload filled into its envelope
    (``publishing.envelopes``) once the envelope is verified.

    A kind's first full message teaches its envelope; the next message of the kind is built
    both ways, with kombu's path (``send_task``'s, over the recording channel) and filled into
    the envelope, and the two payloads are compared byte for byte (with kombu's delivery tag):
    equal, the kind is filled in from then on; different, it keeps kombu's path for the batch.
    """

    def __init__(self, builder: MessageBuilder) -> None:
        self.builder = builder
        self.channel: Any = builder.channel
        self.destinations: dict[tuple[str, str], list[str]] = {}
        self.known: dict[tuple[Any, ...], tuple[Envelope, list[str]] | None] = {}
        self.verified: set[tuple[Any, ...]] = set()
        self.tags = delivery_tags(self.channel)

    def commands(self, call: TaskCall) -> list[tuple[str, str]]:
        """The (list key, payload) pairs to LPUSH for ``call``."""
        traced = tuple(name for name in TRACE_HEADERS if name in call.headers)
        kind = (self.builder.kind(call), traced)
        learned = self.known.get(kind, _UNKNOWN)
        if learned is not _UNKNOWN and learned is not None:
            envelope, keys = learned
            if kind not in self.verified:
                return self._verify(kind, envelope, keys, call)
            values = self.builder.fill_values(call)
            if values is not None:
                payload = self._payload(envelope, values, next(self.tags))
                return [(key, payload) for key in keys]
        message, exchange, routing_key = self.builder.build(call)
        commands = redis_commands(self.channel, message, exchange, routing_key, self.destinations)
        if learned is _UNKNOWN:
            envelope = learn(message)
            self.known[kind] = None if envelope is None else (envelope, [k for k, _ in commands])
        return commands

    def _verify(
        self, kind: tuple[Any, ...], envelope: Envelope, keys: list[str], call: TaskCall
    ) -> list[tuple[str, str]]:
        values = self.builder.fill_values(call, on_call=False)
        if values is None:  # the builder checks its own filling in first (``build``)
            return redis_commands(self.channel, *self.builder.build(call), self.destinations)
        message, exchange, routing_key = self.builder.build_full(call)
        commands = redis_commands(self.channel, message, exchange, routing_key, self.destinations)
        filled = self._payload(envelope, values, message["properties"]["delivery_tag"])
        same = [k for k, _ in commands] == keys and all(p == filled for _, p in commands)
        self.known[kind] = (envelope, keys) if same else None
        if same:
            self.verified.add(kind)
            return commands
        logger.warning(
            "messages of this kind are encoded one by one: the envelope differs from kombu",
            extra={"action": "publish.envelope_mismatch", "task": call.name},
        )
        return commands

    def _payload(self, envelope: Envelope, values: dict[str, Any], tag: str) -> str:
        """What ``_inplace_augment_message`` and ``dumps`` make of ``values``."""
        body, _ = self.channel.encode_body(values["body"], self.channel.body_encoding)
        properties = values["properties"]
        properties["delivery_tag"] = tag
        return envelope.payload(body, values["headers"], properties)


def delivery_tags(channel: Any, per_read: int = 256) -> Iterator[str]:
    """The delivery tags kombu's virtual channel gives its messages (``Channel.
    _next_delivery_tag``: ``str(uuid4())``), the system's randomness read once per
    ``per_read`` tags instead of once per tag (6.7 -> 2.2 µs a tag). A channel class with
    its own ``_next_delivery_tag`` is asked for each tag."""
    if type(channel)._next_delivery_tag is not VirtualChannel._next_delivery_tag:
        while True:
            yield channel._next_delivery_tag()
    while True:
        raw = os.urandom(16 * per_read)
        for start in range(0, len(raw), 16):
            tag = bytearray(raw[start : start + 16])
            tag[6] = (tag[6] & 0x0F) | 0x40  # version 4
            tag[8] = (tag[8] & 0x3F) | 0x80  # the RFC 4122 variant
            text = tag.hex()
            yield f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def _push(channel: Any, built: list[tuple[Occurrence, list[tuple[str, str]]]]) -> list[Occurrence]:
    """LPUSH each chunk's payloads, one command per list: ``LPUSH key a b c`` leaves the list
    as ``LPUSH key a``, ``LPUSH key b``, ``LPUSH key c`` do (a worker's BRPOP takes ``a``
    first), at half the client's time per message. Lists are independent queues, so only the
    order within one list is kept."""
    published: list[Occurrence] = []
    with channel.conn_or_acquire() as client:  # the channel's pool and key prefix
        for start in range(0, len(built), PIPELINE_CHUNK):
            chunk = built[start : start + PIPELINE_CHUNK]
            by_list: dict[str, list[str]] = {}
            for _, commands in chunk:
                for key, payload in commands:
                    by_list.setdefault(key, []).append(payload)
            try:
                with client.pipeline(transaction=False) as pipe:
                    for key, payloads in by_list.items():
                        pipe.lpush(key, *payloads)
                    pipe.execute()
            except BROKER_ERRORS as exc:
                raise PartialPublish(published=published, cause=repr(exc)) from exc
            published.extend(occurrence for occurrence, _ in chunk)
    return published


def redis_commands(
    channel: Any,
    message: dict[str, Any],
    exchange: str,
    routing_key: str,
    destinations: dict[tuple[str, str], list[str]],
) -> list[tuple[str, str]]:
    """The (list key, payload) pairs kombu's Redis ``Channel.basic_publish`` would LPUSH.

    kombu private details (kombu 5.x, ``transport/virtual/base.py``, ``transport/redis.py``),
    called rather than copied: ``_inplace_augment_message`` (body encoding, delivery tag, the
    delivery info), ``_lookup`` (the bindings, read once per exchange and routing key per
    batch), ``_get_message_priority`` and ``_q_for_pri`` (the priority list name), ``_expires``.
    ``tests/integration/test_publishing_pipeline.py`` compares the result with what kombu
    writes itself, so a change in kombu fails there.
    """
    channel._inplace_augment_message(message, exchange, routing_key)
    if (exchange, routing_key) not in destinations:
        destinations[exchange, routing_key] = destinations_of(channel, exchange, routing_key)
    payload = dumps(message)
    priority = channel._get_message_priority(message, reverse=False)
    queues = destinations[exchange, routing_key]
    return [(channel._q_for_pri(queue, priority), payload) for queue in queues]


def destinations_of(channel: Any, exchange: str, routing_key: str) -> list[str]:
    """The queues kombu's exchange types deliver to (``DirectExchange`` / ``TopicExchange``)."""
    if not exchange:  # the anonymous exchange: Celery's usual route to a direct queue
        queues = [routing_key]
    else:
        kind = channel.typeof(exchange).type
        if kind not in ("direct", "topic"):
            raise Unsupported(f"{kind} exchange {exchange!r}")
        queues = list(channel._lookup(exchange, routing_key))
        if kind == "topic":
            queues = [queue for queue in queues if queue and queue != channel.deadletter_queue]
    if any(queue in channel._expires for queue in queues):
        raise Unsupported("a queue with an expiry (kombu refreshes it on every publish)")
    return queues
