"""Building Celery task messages for a batch, the way ``send_task`` builds them.

Celery's ``create_task_message`` and ``send_task_message`` and kombu's ``Producer.publish``
(properties, serialization, compression, ``Channel.prepare_message``) run over a recording
channel: the result is the prepared message ``basic_publish`` would receive, for whichever
transport the producer's channel belongs to. The transports' batch writers
(``publishing.redis``, ``publishing.amqp``) then send them their own way.
"""

from __future__ import annotations

import inspect
from typing import Any, cast

from celery import Celery
from celery.utils.nodenames import anon_nodename
from celery.utils.saferepr import saferepr
from kombu import Producer

from scheduler_app.publishing.calls import TaskCall

Prepared = tuple[Any, str, str]
"""(the channel's prepared message, exchange, routing key)."""


class MessageBuilder:
    """Builds the transport's prepared messages for one batch; what does not depend on the
    message is done once."""

    def __init__(self, app: Celery, producer: Producer) -> None:
        self.app = app
        self.producer = producer
        self.channel = producer.channel
        self.recorder = _RecordingProducer(producer)
        self.now = app.now()
        self.origin = anon_nodename()
        levels = app.conf.task_repr_maxlevels
        self.argsrepr = saferepr((), app.amqp.argsrepr_maxsize, maxlevels=levels)
        self.task_defaults: dict[str, tuple[Any, dict[str, Any]]] = {}

    def build(self, call: TaskCall) -> Prepared:
        """The message exactly as ``send_task`` would hand it to the channel's
        ``basic_publish``: (prepared message, exchange, routing key)."""
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
        return self.recorder.take()

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
