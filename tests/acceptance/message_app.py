"""A plain Celery app for ``test_worker_messages.py``: the worker runs it, the test publishes
with it.

No Django and no ``OccurrenceTask``: the tasks only write down what a stock worker handed
them (the whole task request: headers, delivery info, message properties, eta, expires) to a
Redis list, so the test can compare a message from ``CeleryPublisher`` with the same call
made through ``send_task``. The worker builds the app from the ``MESSAGE_*`` environment
variables (``celery -A tests.acceptance.message_app worker``); the test calls ``make_app``.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import redis
from celery import Celery, Task
from kombu import Exchange, Queue

TASKS = ("msg.record", "msg.routed", "msg.exchanged", "msg.prio")
"""``msg.record`` takes the default queue; the others have a ``task_routes`` entry."""


def queue_names(prefix: str) -> dict[str, str]:
    """The queues of one test run, by role."""
    roles = ("default", "routed", "bound", "chosen", "prio")
    return {role: f"{prefix}-{role}" for role in roles}


def exchange_name(prefix: str) -> str:
    return f"{prefix}-ex"


def record_key(prefix: str) -> str:
    """The Redis list the tasks append what they saw to."""
    return f"{prefix}:seen"


def make_app(
    *, broker: str, backend: str, prefix: str, protocol: int | None = None, name: str = "msg"
) -> Celery:
    """The same configuration for the worker and the publishers of one run: a default queue,
    a ``task_routes`` queue, a named direct exchange bound with a routing key, a queue a
    schedule's options pick, and a priority queue (``x-max-priority`` on RabbitMQ)."""
    queues = queue_names(prefix)
    exchange = Exchange(exchange_name(prefix), type="direct")
    app = Celery(name, broker=broker, backend=backend, set_as_current=False, fixups=[])
    app.conf.update(
        task_default_queue=queues["default"],
        task_queues=[
            Queue(queues["default"], routing_key=queues["default"]),
            Queue(queues["routed"], routing_key=queues["routed"]),
            Queue(queues["bound"], exchange, routing_key="bound"),
            Queue(queues["chosen"], routing_key=queues["chosen"]),
            Queue(queues["prio"], routing_key=queues["prio"], max_priority=10),
        ],
        task_routes={
            "msg.routed": {"queue": queues["routed"]},
            "msg.exchanged": {"exchange": exchange.name, "routing_key": "bound"},
            "msg.prio": {"queue": queues["prio"]},
        },
        result_expires=600,
        # The run's results under its prefix, so that cleaning up finds them.
        result_backend_transport_options={"global_keyprefix": f"{prefix}:"},
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
    )
    if protocol is not None:
        app.conf.task_protocol = protocol
    return app


def quorum_queue(prefix: str) -> str:
    return f"{prefix}-quorum"


def make_quorum_app(*, broker: str, backend: str, prefix: str, name: str = "msg-quorum") -> Celery:
    """RabbitMQ with a quorum queue on a topic exchange, as Celery's docs set it up for native
    delayed delivery: ``send_task`` sends a message with an eta through the broker's
    ``celery_delayed_*`` exchanges instead of handing it to a worker to hold."""
    queue = quorum_queue(prefix)
    exchange = Exchange(f"{prefix}-topic", type="topic")
    app = Celery(name, broker=broker, backend=backend, set_as_current=False, fixups=[])
    app.conf.update(
        task_default_queue=queue,
        task_default_exchange=exchange.name,
        task_default_exchange_type="topic",
        task_default_routing_key=queue,
        task_queues=[
            Queue(queue, exchange, routing_key=queue, queue_arguments={"x-queue-type": "quorum"})
        ],
        result_expires=600,
        result_backend_transport_options={"global_keyprefix": f"{prefix}:"},
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
    )
    return app


def register_tasks(app: Celery, record_url: str, prefix: str) -> None:
    """The tasks the worker runs: each records its request and returns its kwargs."""
    client = redis.Redis.from_url(record_url)
    key = record_key(prefix)

    def record(task: Task, **kwargs: Any) -> dict[str, Any]:
        seen = {
            name: value for name, value in vars(task.request).items() if not name.startswith("_")
        }
        seen.update(task=task.name, at=time.time())
        client.rpush(key, json.dumps(seen, default=repr))
        return {"task": task.name, "kwargs": kwargs}

    for task_name in TASKS:
        app.task(name=task_name, bind=True, shared=False)(record)


def worker_app() -> Celery:
    """The worker's app, from the environment the test starts it with."""
    prefix = os.environ["MESSAGE_PREFIX"]
    record_url = os.environ["MESSAGE_REDIS_URL"]
    make = make_quorum_app if os.environ.get("MESSAGE_QUORUM") else make_app
    made = make(broker=os.environ["MESSAGE_BROKER_URL"], backend=record_url, prefix=prefix)
    register_tasks(made, record_url, prefix)
    return made


app = worker_app() if "MESSAGE_PREFIX" in os.environ else None
