"""Building Celery task messages for a batch, the way ``send_task`` builds them.

Celery's ``create_task_message`` and ``send_task_message`` and kombu's ``Producer.publish``
(properties, serialization, compression, ``Channel.prepare_message``) run over a recording
channel: the result is the prepared message ``basic_publish`` would receive, for whichever
transport the producer's channel belongs to. The transports' batch writers
(``publishing.redis``, ``publishing.amqp``) then send them their own way.

That full path runs once per kind of message in a batch (task, routing options, with or
without eta and expiry). The other messages of the same kind are filled in from what it
handed ``prepare_message``: the task id, the kwargs (body and ``kwargsrepr``), ``eta``,
``expires`` and the ``scheduler`` header, the only parts that differ. A second message of
each kind is built both ways and compared; if they differ (a Celery or kombu version that
adds something per message), that kind keeps the full path. Signal receivers of
``before_task_publish``/``after_task_publish``, compression, and routers that are functions
(they may route on the kwargs) keep the full path for every message.
"""

from __future__ import annotations

import copy
import inspect
import json
import logging
from dataclasses import dataclass
from typing import Any, cast

from celery import Celery
from celery.app.routes import MapRoute
from celery.signals import after_task_publish, before_task_publish
from celery.utils.nodenames import anon_nodename
from celery.utils.saferepr import saferepr
from kombu import Producer, serialization
from kombu.serialization import dumps as serialize
from kombu.utils.json import dumps as kombu_json_dumps

from scheduler_app.handoff.protocol import HEADER
from scheduler_app.observability.tracing import TRACE_HEADERS
from scheduler_app.publishing.calls import TaskCall

logger = logging.getLogger("scheduler_app.publishing")

Prepared = tuple[Any, str, str]
"""(the channel's prepared message, exchange, routing key)."""


class MessageBuilder:
    """Builds the transport's prepared messages for one batch; what does not depend on the
    message is done once."""

    def __init__(self, app: Celery, producer: Producer) -> None:
        self.app = app
        self.producer = producer
        self.channel: Any = producer.channel
        self.recorder = _RecordingProducer(producer)
        self.now = app.now()
        self.origin = anon_nodename()
        levels = app.conf.task_repr_maxlevels
        self.argsrepr = saferepr((), app.amqp.argsrepr_maxsize, maxlevels=levels)
        self.task_defaults: dict[str, tuple[Any, dict[str, Any]]] = {}
        self.kwargsrepr_size = app.amqp.kwargsrepr_maxsize
        self.levels = levels
        self.templates: dict[tuple[Any, ...], _Template | None] = {}
        self.reprs: dict[Any, str] = {}
        self.fill_in = _can_fill_in(app, producer)
        self.on_call = True

    def build(self, call: TaskCall) -> Prepared:
        """The message exactly as ``send_task`` would hand it to the channel's
        ``basic_publish``: (prepared message, exchange, routing key)."""
        if not self.fill_in or call.args:  # templates are of messages without positional args
            return self._build_full(call)
        key = self.kind(call)
        template = self.templates.get(key, _NOT_YET)
        if template is _NOT_YET:
            prepared = self._build_full(call)
            self.templates[key] = self.recorder.channel.template(self.on_call)
            return prepared
        if template is None:
            return self._build_full(call)
        assert isinstance(template, _Template)
        if not template.checked:
            return self._check(key, template, call)
        return self._fill(template, call)

    @staticmethod
    def kind(call: TaskCall) -> tuple[Any, ...]:
        """What makes messages of one kind: task, routing, with or without eta and expiry."""
        return (call.name, tuple(call.routing.items()), call.eta is None, call.expires is None)

    def fill_values(self, call: TaskCall, *, on_call: bool = True) -> dict[str, Any] | None:
        """``prepare_message``'s arguments for ``call`` when its kind is filled in (checked
        against ``send_task``), else None (``build`` it). ``on_call``: tell the result
        backend, as publishing the message would (False: ``call`` is built anyway)."""
        if not self.fill_in or call.args:
            return None
        template = self.templates.get(self.kind(call))
        if not isinstance(template, _Template) or not template.checked:
            return None
        if on_call and template.on_call:
            self.app.backend.on_task_call(self.producer, call.task_id)
        return self._filled_args(template, call)

    def _check(self, key: tuple[Any, ...], template: _Template, call: TaskCall) -> Prepared:
        """Build the second message of a kind both ways; keep filling in only if they agree."""
        prepared = self._build_full(call)
        expected = self.recorder.channel.template(self.on_call)
        filled = self._filled_args(template, call)
        if expected is not None and filled == expected.arguments:
            template.checked = True
        else:
            self.templates[key] = None
            logger.warning(
                "messages of this kind are built one by one: filling in differs from send_task",
                extra={"action": "publish.fill_in_mismatch", "task": call.name},
            )
        return prepared

    def _fill(self, template: _Template, call: TaskCall) -> Prepared:
        if template.on_call:
            self.app.backend.on_task_call(self.producer, call.task_id)
        message = self.channel.prepare_message(**self._filled_args(template, call))
        return message, template.exchange, template.routing_key

    def _filled_args(self, template: _Template, call: TaskCall) -> dict[str, Any]:
        """``prepare_message``'s arguments for ``call``, from a template of its kind."""
        args = template.arguments
        kwargs = call.kwargs
        content_type, content_encoding, body = _body(template, kwargs)
        task_id = call.task_id
        headers = dict(args["headers"])
        headers["id"] = headers["root_id"] = task_id
        headers["eta"] = call.eta.isoformat() if call.eta is not None else None
        headers["expires"] = call.expires.isoformat() if call.expires is not None else None
        kwargsrepr = self.reprs.get(body)  # the same body: the same kwargs, in the same order
        if kwargsrepr is None:
            kwargsrepr = kwargs_repr(kwargs, self.kwargsrepr_size, self.levels)
            self.reprs[body] = kwargsrepr
        headers["kwargsrepr"] = kwargsrepr
        headers[HEADER] = call.headers[HEADER]
        for name in TRACE_HEADERS:  # the occurrence's own trace context, or none
            if name in call.headers:
                headers[name] = call.headers[name]
            else:
                headers.pop(name, None)
        properties = dict(args["properties"])
        properties["correlation_id"] = task_id
        if call.expires is not None:
            expiration = max((call.expires - self.now).total_seconds(), 0)
            properties["expiration"] = str(int(expiration * 1000))
        return {
            "body": body,
            "priority": args["priority"],
            "content_type": content_type,
            "content_encoding": content_encoding,
            "headers": headers,
            "properties": properties,
        }

    def build_full(self, call: TaskCall) -> Prepared:
        """``send_task``'s own path for ``call``, whatever its kind (the reference that a
        message filled in some other way is compared with)."""
        return self._build_full(call)

    def _build_full(self, call: TaskCall) -> Prepared:
        """``send_task``'s own path (Celery and kombu) over the recording channel."""
        options = self._options(call)
        ignore_result = options.pop("ignore_result", None)
        limits = options.pop("time_limit", None), options.pop("soft_time_limit", None)
        options = self._route(call, options)
        amqp = self.app.amqp
        message = amqp.create_task_message(
            call.task_id,
            call.name,
            call.args or None,
            call.kwargs,
            eta=call.eta,
            expires=call.expires,
            reply_to=self.app.thread_oid,
            time_limit=limits[0],
            soft_time_limit=limits[1],
            create_sent_event=False,
            ignore_result=ignore_result,
            argsrepr=None if call.args else self.argsrepr,  # None: Celery writes the repr
            origin=self.origin,
            **options,
        )
        self.on_call = not ignore_result
        if self.on_call:
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
        # What send_task hands routers: None when a call has no positional args.
        args: Any = call.args or None
        options = self.app.amqp.router.route(options, call.name, args, call.kwargs, task_type)
        if call.expires is not None:
            options["expiration"] = max((call.expires - self.now).total_seconds(), 0)
        return options

    def declare_queues(self) -> None:
        """What ``send_task`` declares with every message, declared once per batch."""
        for entity in self.recorder.declarations:
            self.producer.maybe_declare(entity)


_PLAIN = frozenset({int, float, bool, type(None)})


def kwargs_repr(kwargs: dict[str, Any], maxsize: int, levels: int) -> str:
    """The ``kwargsrepr`` header Celery would write (``saferepr``), at ``repr``'s cost (1 µs
    against 12-22 µs) for the usual payload: a flat dict of numbers, booleans, None and
    strings without quotes, backslashes or unprintable characters, whose ``repr`` fits
    ``maxsize``. For those the two texts are the same (``tests/unit/test_kwargs_repr.py``
    compares them); anything else goes through ``saferepr``."""
    if levels >= 1:
        for key, value in kwargs.items():
            if type(key) is not str or not _plain_text(key):
                break
            if type(value) is str:
                if not _plain_text(value):
                    break
            elif type(value) not in _PLAIN:
                break
        else:
            text = repr(kwargs)
            if len(text) <= maxsize:
                return text
    return saferepr(kwargs, maxsize, maxlevels=levels)


def _plain_text(text: str) -> bool:
    return text.isprintable() and "'" not in text and '"' not in text and "\\" not in text


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


def _body(template: _Template, kwargs: dict[str, Any]) -> tuple[str, str, Any]:
    """(content type, encoding, body) for ``kwargs``. kombu's JSON is the standard encoder
    plus a ``default`` for other types: a payload of JSON's own types (every stored one) comes
    out the same from the standard encoder, in half the time. Anything else goes through
    kombu; ``MessageBuilder._check`` compares a kind's second message with ``send_task``'s."""
    if template.serializer == "json" and _kombu_json():
        try:
            body = _STRICT_JSON.encode(((), kwargs, _EMBED))
        except Exception:  # a type only kombu encodes, a loop, nesting too deep...:
            pass  # kombu's path, which raises what it raised before (``EncodeError``)
        else:
            return template.arguments["content_type"], template.arguments["content_encoding"], body
    encoded: tuple[str, str, Any] = serialize(((), kwargs, _EMBED), serializer=template.serializer)
    return encoded


_STRICT_JSON = json.JSONEncoder()


def _kombu_json() -> bool:
    """Whether the ``json`` serializer is still kombu's own."""
    codec = serialization.registry._encoders.get("json")  # type: ignore[attr-defined]
    return codec is not None and codec.encoder is kombu_json_dumps


_EMBED = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}
"""The third part of a protocol 2 body for a task with no callbacks, chain or chord."""
_NOT_YET = object()


@dataclass
class _Template:
    """What the full path handed ``prepare_message`` and ``basic_publish`` for one message."""

    arguments: dict[str, Any]
    exchange: str
    routing_key: str
    serializer: str
    on_call: bool = True
    checked: bool = False


def _can_fill_in(app: Celery, producer: Producer) -> bool:
    """Filling in is exact only when nothing can change a message but its own values."""
    if before_task_publish.receivers or after_task_publish.receivers:
        return False
    if producer.compression or app.conf.task_compression:
        return False
    routes = getattr(app.amqp.router, "routes", None) or ()
    return all(isinstance(route, MapRoute) for route in routes)


class _RecordingChannel:
    """The producer's channel, except that ``basic_publish`` keeps the message, and
    ``prepare_message`` keeps a copy of its arguments (the template of its kind)."""

    def __init__(self, channel: Any) -> None:
        self._channel = channel
        self.sent: list[tuple[dict[str, Any], str, str]] = []
        self.prepared: dict[str, Any] | None = None
        self.last_route = ("", "")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._channel, name)

    def prepare_message(
        self,
        body: Any,
        priority: Any = None,
        content_type: Any = None,
        content_encoding: Any = None,
        headers: Any = None,
        properties: Any = None,
    ) -> Any:
        self.prepared = copy.deepcopy(
            {
                "body": body,
                "priority": priority,
                "content_type": content_type,
                "content_encoding": content_encoding,
                "headers": headers,
                "properties": properties,
            }
        )
        return self._channel.prepare_message(
            body, priority, content_type, content_encoding, headers, properties
        )

    def basic_publish(
        self, message: dict[str, Any], exchange: str, routing_key: str, **_: Any
    ) -> None:
        self.sent.append((message, exchange, routing_key))
        self.last_route = (exchange, routing_key)

    def template(self, on_call: bool) -> _Template | None:
        """The template of the message just built, or None if it cannot be one."""
        arguments, self.prepared = self.prepared, None
        if arguments is None or not isinstance(arguments["headers"], dict):
            return None
        serializer = serialization.registry.type_to_name.get(  # type: ignore[attr-defined]
            arguments["content_type"]
        )
        if serializer is None or HEADER not in arguments["headers"]:
            return None
        exchange, routing_key = self.last_route
        return _Template(arguments, exchange, routing_key, serializer, on_call)


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
