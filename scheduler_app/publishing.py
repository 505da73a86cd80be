"""Publishing occurrences as ordinary Celery task messages.

Two paths, one message. On kombu's Redis transport a batch is built message by message the way
``send_task`` builds it (Celery's ``create_task_message`` and ``send_task_message``, kombu's
``Producer.publish`` and ``Channel.prepare_message``), then written with one non-transactional
Redis pipeline per chunk: the same list keys and the same JSON envelope kombu's ``Channel._put``
writes. Every other transport (AMQP, the demo's ``filesystem://``, ``memory://``) keeps the
per-message ``send_task`` path. Workers cannot tell the two apart.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from celery import Celery
from celery.utils.nodenames import anon_nodename
from celery.utils.saferepr import saferepr
from kombu import Producer
from kombu.exceptions import KombuError
from kombu.utils.json import dumps

from scheduler_app.clock import Clock, SystemClock
from scheduler_app.models import Occurrence
from scheduler_app.outbox import HEADER, PartialPublish, context_headers

logger = logging.getLogger("scheduler_app.publishing")

BROKER_ERRORS: tuple[type[BaseException], ...] = (KombuError, OSError, ConnectionError)
try:  # only with the Redis client installed (the ``redis`` extra); AMQP users may not have it
    from redis.exceptions import RedisError

    BROKER_ERRORS = (*BROKER_ERRORS, RedisError)
except ImportError:  # pragma: no cover - depends on the installed extras
    pass
PIPELINE_CHUNK = 1000
"""Messages per Redis pipeline round trip: bounds the client buffer; a failed chunk and every
chunk after it count as not published."""


class CeleryPublisher:
    """``send_task`` semantics with ``task_id`` = occurrence id, one producer per batch.

    Workers see a normal Celery message: the task's kwargs are the payload snapshot, the
    occurrence context travels in the ``scheduler`` header. ``pipeline`` forces the Redis
    pipeline path on (``True``) or off (``False``); by default it is used exactly when the
    broker is kombu's Redis transport.
    """

    def __init__(
        self, app: Celery, *, pipeline: bool | None = None, clock: Clock | None = None
    ) -> None:
        self.app = app
        self._pipeline = pipeline
        self.clock = clock or SystemClock()

    @property
    def uses_pipeline(self) -> bool:
        if self._pipeline is None:
            self._pipeline = _is_redis_broker(self.app)
        return self._pipeline

    def publish(self, occurrences: Sequence[Occurrence]) -> list[Occurrence]:
        if occurrences and self.uses_pipeline and _pipeline_applies(self.app):
            try:
                return RedisPipelinePublisher(self.app, self.clock.now()).publish(occurrences)
            except _Unsupported as exc:  # raised before anything was written
                logger.info(
                    "batch published message by message",
                    extra={"action": "publish.pipeline_fallback", "reason": str(exc)},
                )
        return self._publish_each(occurrences)

    def revoke(self, occurrence_ids: list[str]) -> None:
        """Tell workers to drop these task ids if they have not started them (best effort:
        a running task stops cooperatively through ``check_cancelled()``)."""
        try:
            self.app.control.revoke(occurrence_ids)
        except (KombuError, OSError, ConnectionError):
            logger.warning(
                "revoke not sent; the cancellation flag still stands",
                extra={"action": "outbox.revoke_failed", "count": len(occurrence_ids)},
            )

    def _publish_each(self, occurrences: Sequence[Occurrence]) -> list[Occurrence]:
        published: list[Occurrence] = []
        now = self.clock.now()
        try:
            with self.app.producer_or_acquire() as producer:
                for occurrence in occurrences:
                    self._send(occurrence, producer, now)
                    published.append(occurrence)
        except (KombuError, OSError, ConnectionError) as exc:
            raise PartialPublish(published=published, cause=repr(exc)) from exc
        return published

    def _send(self, occurrence: Occurrence, producer: Producer, now: datetime) -> None:
        call = TaskCall.of(occurrence, now)
        self.app.send_task(
            call.name,
            kwargs=call.kwargs,
            task_id=call.task_id,
            headers=call.headers,
            expires=call.expires,
            eta=call.eta,
            producer=producer,
            retry=False,
            **call.routing,
        )


@dataclass(frozen=True, kw_only=True)
class TaskCall:
    """The ``send_task`` arguments for one occurrence, shared by both paths."""

    name: str
    task_id: str
    kwargs: dict[str, Any]
    headers: dict[str, Any]
    expires: datetime | None
    eta: datetime | None
    routing: dict[str, Any]
    """The schedule's own routing options (``Schedule.options``); they win over task_routes."""

    @classmethod
    def of(cls, occurrence: Occurrence, now: datetime) -> TaskCall:
        """``eta`` only for a deliberate delay (a retry's backoff: ``not_before`` after the
        slot) that has not run out by the beat's clock. A run already due, such as a lost run
        put back in the outbox, or a slot published after the clock stepped back, goes without
        one, so a worker never holds it back for a difference between clocks."""
        slot = occurrence.scheduled_for
        return cls(
            name=occurrence.task,
            task_id=str(occurrence.id),
            kwargs=occurrence.kwargs,
            headers={HEADER: context_headers(occurrence)},
            expires=occurrence.deadline_at,
            eta=occurrence.not_before if occurrence.not_before > max(now, slot) else None,
            routing=routing_options(occurrence.schedule.options),
        )


ROUTING_OPTIONS = ("queue", "routing_key", "exchange", "priority")
"""The ``send_task`` options a schedule may set; anything else in ``Schedule.options`` is not
sent."""


def routing_options(options: dict[str, Any] | None) -> dict[str, Any]:
    return {
        key: options[key] for key in ROUTING_OPTIONS if options and options.get(key) is not None
    }


class _Unsupported(Exception):
    """A route the pipeline does not reproduce (fanout, expiring queues): use ``send_task``."""


def _is_redis_broker(app: Celery) -> bool:
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


def _pipeline_applies(app: Celery) -> bool:
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
                builder = _MessageBuilder(self.app, producer)
                for occurrence in occurrences:
                    try:
                        call = TaskCall.of(occurrence, self.now)
                        built.append((occurrence, builder.commands(call)))
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


def _push(channel: Any, built: list[tuple[Occurrence, list[tuple[str, str]]]]) -> list[Occurrence]:
    published: list[Occurrence] = []
    with channel.conn_or_acquire() as client:  # the channel's pool and key prefix
        for start in range(0, len(built), PIPELINE_CHUNK):
            chunk = built[start : start + PIPELINE_CHUNK]
            try:
                with client.pipeline(transaction=False) as pipe:
                    for _, commands in chunk:
                        for key, payload in commands:
                            pipe.lpush(key, payload)
                    pipe.execute()
            except BROKER_ERRORS as exc:
                raise PartialPublish(published=published, cause=repr(exc)) from exc
            published.extend(occurrence for occurrence, _ in chunk)
    return published


class _MessageBuilder:
    """Builds Redis commands for one batch; what does not depend on the message is done once."""

    def __init__(self, app: Celery, producer: Producer) -> None:
        self.app = app
        self.producer = producer
        self.channel = producer.channel
        self.recorder = _RecordingProducer(producer)
        self.now = app.now()  # Redis ignores the `expiration` property; AMQP is not on this path
        self.origin = anon_nodename()
        levels = app.conf.task_repr_maxlevels
        self.argsrepr = saferepr((), app.amqp.argsrepr_maxsize, maxlevels=levels)
        self.task_defaults: dict[str, tuple[Any, dict[str, Any]]] = {}
        self.destinations: dict[tuple[str, str], list[str]] = {}

    def commands(self, call: TaskCall) -> list[tuple[str, str]]:
        options = self._options(call)
        ignore_result = options.pop("ignore_result", None)
        limits = options.pop("time_limit", None), options.pop("soft_time_limit", None)
        options = self._route(call, options)
        amqp = self.app.amqp
        message = amqp.create_task_message(
            call.task_id,
            call.name,
            None,
            call.kwargs,
            eta=call.eta,
            expires=call.expires,
            reply_to=self.app.thread_oid,
            time_limit=limits[0],
            soft_time_limit=limits[1],
            create_sent_event=False,
            ignore_result=ignore_result,
            argsrepr=self.argsrepr,
            origin=self.origin,
            **options,
        )
        if not ignore_result:
            self.app.backend.on_task_call(self.producer, call.task_id)
        amqp.send_task_message(self.recorder, call.name, message, **options)
        prepared, exchange, routing_key = self.recorder.take()
        return _redis_commands(self.channel, prepared, exchange, routing_key, self.destinations)

    def _options(self, call: TaskCall) -> dict[str, Any]:
        """``send_task``'s options before routing: the task's own defaults, then ours."""
        if call.name not in self.task_defaults:
            self.task_defaults[call.name] = _task_defaults(self.app, call.name)
        defaults = self.task_defaults[call.name][1]
        options = dict(defaults, **call.routing, headers=call.headers, retry=False)
        options.pop("expires", None)  # ours is explicit, even when None
        return options

    def _route(self, call: TaskCall, options: dict[str, Any]) -> dict[str, Any]:
        task_type = self.task_defaults[call.name][0]
        args: Any = None  # what send_task hands routers when a call has no positional args
        options = self.app.amqp.router.route(options, call.name, args, call.kwargs, task_type)
        if call.expires is not None:
            options["expiration"] = max((call.expires - self.now).total_seconds(), 0)
        return options

    def declare_queues(self) -> None:
        """What ``send_task`` declares with every message, declared once per batch."""
        for entity in self.recorder.declarations:
            self.producer.maybe_declare(entity)


def _task_defaults(app: Celery, name: str) -> tuple[Any, dict[str, Any]]:
    """The execution options ``send_task`` merges in from a task registered in this process.

    Mirrors ``Celery.send_task`` (celery 5.5+): it reads the registry without finalizing the
    app (``_tasks``) and calls the task's private ``_get_exec_options``. The equivalence tests
    in ``tests/integration/test_publishing_pipeline.py`` cover a task with options of its own.
    """
    get = getattr(getattr(app, "_tasks", None), "get", None)
    task_type = get(name) if callable(get) else None
    get_exec_options = getattr(task_type, "_get_exec_options", None)
    if not inspect.ismethod(get_exec_options):
        return task_type, {}
    options = get_exec_options() or {}
    return task_type, {key: value for key, value in options.items() if value is not None}


class _RecordingChannel:
    """The producer's channel, except that ``basic_publish`` keeps the message."""

    def __init__(self, channel: Any) -> None:
        self._channel = channel
        self.sent: list[tuple[dict[str, Any], str, str]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._channel, name)

    def basic_publish(
        self, message: dict[str, Any], exchange: str, routing_key: str, **_: Any
    ) -> None:
        self.sent.append((message, exchange, routing_key))


class _RecordingProducer:
    """Stands in for the producer under Celery's ``send_task_message``: runs kombu's own
    ``Producer.publish`` (properties, serialization, compression, ``prepare_message``) over a
    recording channel, and collects the declarations to make them once for the batch."""

    def __init__(self, producer: Producer) -> None:
        self.channel = _RecordingChannel(producer.channel)
        self.kombu = Producer(
            cast(Any, self.channel),
            exchange=producer.exchange,
            routing_key=producer.routing_key,
            serializer=producer.serializer,
            compression=producer.compression,
            auto_declare=False,
        )
        self.declarations: list[Any] = []
        exchange = producer.exchange
        if producer.auto_declare and exchange is not None and exchange.name:
            self.declarations.append(exchange)

    def publish(self, body: Any, **kwargs: Any) -> None:
        for entity in kwargs.pop("declare", None) or ():
            if entity not in self.declarations:
                self.declarations.append(entity)
        self.kombu.publish(body, declare=[], **kwargs)

    def take(self) -> tuple[dict[str, Any], str, str]:
        [sent] = self.channel.sent
        self.channel.sent.clear()
        return sent


def _redis_commands(
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
        destinations[exchange, routing_key] = _destinations(channel, exchange, routing_key)
    payload = dumps(message)
    priority = channel._get_message_priority(message, reverse=False)
    queues = destinations[exchange, routing_key]
    return [(channel._q_for_pri(queue, priority), payload) for queue in queues]


def _destinations(channel: Any, exchange: str, routing_key: str) -> list[str]:
    """The queues kombu's exchange types deliver to (``DirectExchange`` / ``TopicExchange``)."""
    if not exchange:  # the anonymous exchange: Celery's usual route to a direct queue
        queues = [routing_key]
    else:
        kind = channel.typeof(exchange).type
        if kind not in ("direct", "topic"):
            raise _Unsupported(f"{kind} exchange {exchange!r}")
        queues = list(channel._lookup(exchange, routing_key))
        if kind == "topic":
            queues = [queue for queue in queues if queue and queue != channel.deadletter_queue]
    if any(queue in channel._expires for queue in queues):
        raise _Unsupported("a queue with an expiry (kombu refreshes it on every publish)")
    return queues
