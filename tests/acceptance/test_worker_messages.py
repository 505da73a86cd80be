"""Workers cannot tell ``CeleryPublisher``'s messages from ``send_task``'s (issue 16).

For each broker (Redis, RabbitMQ) one stock ``celery worker`` (solo pool) runs a plain Celery
app (``message_app.py``) whose tasks record the whole request they were handed. Every case
publishes an occurrence through ``CeleryPublisher(app)`` (the broker's batch path: the Redis
pipeline, AMQP with publisher confirms) and its twin, the same call under another id, through
``app.send_task``; the worker must have seen the same thing for both, down to the headers,
the delivery info and the message properties. The publisher runs with Celery's default
``task_protocol`` and with ``task_protocol=2`` set explicitly. A third worker, in a RabbitMQ
vhost of its own, consumes a quorum queue (native delayed delivery for eta messages).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis
from celery import Celery

from scheduler_app.publishing import CeleryPublisher
from scheduler_app.publishing.redis import pipeline_applies
from tests.acceptance.message_app import (
    exchange_name,
    make_app,
    make_quorum_app,
    queue_names,
    quorum_queue,
)
from tests.acceptance.message_support import (
    Seen,
    Worker,
    clean_rabbitmq,
    clean_redis,
    comparable,
    occurrence,
    own_vhost,
    send_task,
    twin,
)
from tests.conftest import REDIS_URL, require_server

RABBITMQ_URL = os.environ.get("RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672//")
BROKERS = [
    pytest.param("redis", marks=pytest.mark.redis),
    pytest.param("amqp", marks=pytest.mark.redis),  # results and records live in Redis
]
PROTOCOLS = [pytest.param(None, id="protocol-default"), pytest.param(2, id="protocol-2")]


@dataclass
class Rig:
    """One broker's worker and what the tests need around it."""

    broker: str
    prefix: str
    worker: Worker
    seen: Seen
    apps: dict[int | None, Celery]

    @property
    def queues(self) -> dict[str, str]:
        return queue_names(self.prefix)


@pytest.fixture(scope="module", params=BROKERS)
def rig(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    broker: str = request.param
    require_server("Redis", REDIS_URL, 6379)
    url = REDIS_URL if broker == "redis" else RABBITMQ_URL
    if broker == "amqp":
        require_server("RabbitMQ", RABBITMQ_URL, 5672)
    prefix = f"msg-{broker}-{uuid.uuid4().hex[:10]}"  # unique per run and per xdist worker
    client = redis.Redis.from_url(REDIS_URL)
    apps = {
        protocol: make_app(broker=url, backend=REDIS_URL, prefix=prefix, protocol=protocol)
        for protocol in (None, 2)
    }
    worker = None
    try:
        directory = tmp_path_factory.mktemp(f"worker-{broker}")
        consumed = [name for role, name in queue_names(prefix).items() if role != "prio"]
        worker = Worker.start(
            broker=url, record_url=REDIS_URL, prefix=prefix, directory=directory, queues=consumed
        )
        yield Rig(broker, prefix, worker, Seen(client, prefix), apps)
    finally:
        if worker is not None:
            worker.stop(apps[None])
        for app in apps.values():
            app.close()
        if broker == "amqp":
            clean_rabbitmq(RABBITMQ_URL, prefix)
        clean_redis(client, prefix)
        client.close()


@pytest.fixture(params=PROTOCOLS)
def app(rig: Rig, request: pytest.FixtureRequest) -> Celery:
    """The publishing app, with the default ``task_protocol`` or with 2 set explicitly."""
    chosen = rig.apps[request.param]
    # The path under test is the broker's batch path (the Redis pipeline, AMQP with publisher
    # confirms), not send_task.
    assert CeleryPublisher(chosen).batch_path == rig.broker and pipeline_applies(chosen)
    return chosen


def publish_both(app: Celery, rows: list[Any]) -> list[tuple[str, str]]:
    """Publish ``rows`` through the publisher and their twins through ``send_task``; the
    (ours, send_task's) task id pairs."""
    twins = [twin(row) for row in rows]
    assert CeleryPublisher(app).publish(rows) == rows
    for row in twins:
        send_task(app, row)
    return [(str(row.id), str(other.id)) for row, other in zip(rows, twins, strict=True)]


def assert_same(records: dict[str, dict[str, Any]], ours: str, theirs: str) -> dict[str, Any]:
    mine = comparable(records[ours], ours)
    assert mine == comparable(records[theirs], theirs)
    return records[ours]


def in_ten_minutes() -> datetime:
    return datetime.now(UTC) + timedelta(minutes=10)


# --- routing -----------------------------------------------------------------------------


def routing_cases(rig: Rig) -> dict[str, tuple[str, dict[str, Any], tuple[str, str, Any]]]:
    """case: (task, schedule options, the (exchange, routing key, priority) a worker sees)."""
    queues = rig.queues
    ex = exchange_name(rig.prefix)
    unset = 0  # kombu's Producer.publish sends priority 0 unless told otherwise
    return {
        "default": ("msg.record", {}, ("", queues["default"], unset)),
        "task_routes": ("msg.routed", {}, ("", queues["routed"], unset)),
        "task_routes exchange": ("msg.exchanged", {}, (ex, "bound", unset)),
        "options queue and priority": (
            "msg.routed",  # the schedule's options win over task_routes
            {"queue": queues["chosen"], "priority": 3},
            ("", queues["chosen"], 3),
        ),
        "options exchange and routing key": (
            "msg.record",
            {"exchange": ex, "routing_key": "bound", "priority": 6},
            (ex, "bound", 6),
        ),
    }


def test_routing_headers_and_properties_match_send_task(rig: Rig, app: Celery) -> None:
    cases = routing_cases(rig)
    rows = [
        occurrence(task, options=options, deadline_at=in_ten_minutes())
        for task, options, _ in cases.values()
    ]
    pairs = publish_both(app, rows)
    records = rig.seen.wait(rig.worker, [task_id for pair in pairs for task_id in pair])

    for (case, (task, _, expected)), row, (ours, theirs) in zip(
        cases.items(), rows, pairs, strict=True
    ):
        seen = assert_same(records, ours, theirs)
        delivery = seen["delivery_info"]
        assert (delivery["exchange"], delivery["routing_key"], delivery["priority"]) == expected
        assert seen["task"] == task, case
        assert seen["kwargs"] == row.kwargs and seen["args"] == []
        assert seen["scheduler"]["occurrence_id"] == ours
        assert seen["scheduler"]["idempotency_key"] == row.idempotency_key
        assert seen["eta"] is None
        assert datetime.fromisoformat(seen["expires"]) == row.deadline_at


# --- expires and eta ---------------------------------------------------------------------


def test_an_expired_message_is_not_run_and_an_unexpired_one_is(rig: Rig, app: Celery) -> None:
    past = datetime.now(UTC) - timedelta(seconds=30)
    expired = occurrence(deadline_at=past)
    fresh = occurrence(deadline_at=in_ten_minutes())
    [(ours, theirs)] = publish_both(app, [expired])
    [(later, later_twin)] = publish_both(app, [fresh])  # the solo worker runs them in order
    records = rig.seen.wait(rig.worker, [later, later_twin])

    assert_same(records, later, later_twin)
    assert ours not in rig.seen.all() and theirs not in rig.seen.all()
    states = {app.AsyncResult(task_id).state for task_id in (ours, theirs)}
    # Redis hands the message to the worker, which revokes it as expired; RabbitMQ may drop
    # it itself (the message's TTL is 0), and then no state is ever stored.
    assert states == {"REVOKED"} if rig.broker == "redis" else states <= {"REVOKED", "PENDING"}


def test_an_eta_holds_the_task_until_then(rig: Rig, app: Celery) -> None:
    eta = datetime.now(UTC) + timedelta(seconds=2)
    row = occurrence(not_before=eta, deadline_at=in_ten_minutes())
    pairs = publish_both(app, [row])
    [(ours, theirs)] = pairs
    records = rig.seen.wait(rig.worker, [ours, theirs])

    seen = assert_same(records, ours, theirs)
    assert datetime.fromisoformat(seen["eta"]) == eta
    for task_id in (ours, theirs):
        assert records[task_id]["at"] >= eta.timestamp()


# --- results and priorities --------------------------------------------------------------


def test_the_result_backend_stores_the_result(rig: Rig, app: Celery) -> None:
    row = occurrence("msg.routed", deadline_at=in_ten_minutes())
    [(ours, theirs)] = publish_both(app, [row])
    expected = {"task": "msg.routed", "kwargs": row.kwargs}
    assert app.AsyncResult(ours).get(timeout=20) == expected
    assert app.AsyncResult(theirs).get(timeout=20) == expected
    assert app.AsyncResult(ours).state == "SUCCESS"


def test_priorities_order_the_queue_as_send_tasks_do(rig: Rig) -> None:
    """Published while no worker consumes the priority queue, then consumed: the broker's
    priority order, every one of our messages just before its ``send_task`` twin.

    One test for both protocol settings: the worker starts consuming the queue once
    (cancelling a consumer on Redis can put back a message it was fetching, out of order).
    """
    pairs = []
    for app in rig.apps.values():
        low, high = (occurrence("msg.prio", options={"priority": p}) for p in (0, 9))
        pairs.append(publish_both(app, [low, high]))
    app = rig.apps[None]
    app.control.add_consumer(
        rig.queues["prio"], destination=[rig.worker.hostname], reply=True, timeout=10
    )
    ids = [task_id for published in pairs for pair in published for task_id in pair]
    rig.seen.wait(rig.worker, ids)

    order = [task_id for task_id in rig.seen.order() if task_id in ids]
    lows = [task_id for low, _ in pairs for task_id in low]
    highs = [task_id for _, high in pairs for task_id in high]
    # RabbitMQ delivers the highest priority first; kombu's Redis transport the lowest number
    # first (https://docs.celeryq.dev/en/stable/userguide/routing.html#redis-message-priorities).
    assert order == ([*highs, *lows] if rig.broker == "amqp" else [*lows, *highs])
    records = rig.seen.all()
    for ours, theirs in (pair for published in pairs for pair in published):
        assert_same(records, ours, theirs)


# --- RabbitMQ quorum queues: native delayed delivery ------------------------------------


@dataclass
class QuorumEta:
    """One eta message through each path to a quorum queue, and what the worker saw."""

    eta: datetime
    ours: str
    theirs: str
    records: dict[str, dict[str, Any]]


@pytest.fixture(scope="module")
def quorum_eta(tmp_path_factory: pytest.TempPathFactory) -> Iterator[QuorumEta]:
    require_server("Redis", REDIS_URL, 6379)
    require_server("RabbitMQ", RABBITMQ_URL, 5672)
    prefix = f"msg-quorum-{uuid.uuid4().hex[:10]}"
    client = redis.Redis.from_url(REDIS_URL)
    with own_vhost(RABBITMQ_URL, prefix) as url:
        app = make_quorum_app(broker=url, backend=REDIS_URL, prefix=prefix)
        worker = None
        try:
            worker = Worker.start(
                broker=url,
                record_url=REDIS_URL,
                prefix=prefix,
                directory=tmp_path_factory.mktemp("worker-quorum"),
                queues=[quorum_queue(prefix)],
                env={"MESSAGE_QUORUM": "1"},
            )
            assert CeleryPublisher(app).batch_path == "amqp"
            eta = datetime.now(UTC) + timedelta(seconds=2)
            row = occurrence(not_before=eta, deadline_at=in_ten_minutes())
            [(ours, theirs)] = publish_both(app, [row])
            records = Seen(client, prefix).wait(worker, [ours, theirs])
            yield QuorumEta(eta=eta, ours=ours, theirs=theirs, records=records)
        finally:
            if worker is not None:
                worker.stop(app)
            app.close()
            if url == RABBITMQ_URL:  # no vhost of our own
                clean_rabbitmq(url, prefix, queues=[quorum_queue(prefix)])
            clean_redis(client, prefix)
            client.close()


@pytest.mark.redis
def test_on_a_quorum_queue_an_eta_still_holds_the_task_until_then(quorum_eta: QuorumEta) -> None:
    records = quorum_eta.records
    for task_id in (quorum_eta.ours, quorum_eta.theirs):
        assert records[task_id]["at"] >= quorum_eta.eta.timestamp()
        # send_task turns the eta into a countdown and back: a few microseconds later.
        seen = datetime.fromisoformat(records[task_id]["eta"])
        assert timedelta(0) <= seen - quorum_eta.eta < timedelta(seconds=1)
    assert records[quorum_eta.ours]["kwargs"] == records[quorum_eta.theirs]["kwargs"]


@pytest.mark.redis
def test_on_a_quorum_queue_an_eta_message_takes_send_tasks_route(quorum_eta: QuorumEta) -> None:
    """Both go through RabbitMQ's native delayed delivery (the batch path hands such a batch
    to ``send_task``): the same delayed exchange and routing key; the eta (recomputed from a
    countdown) and the broker's ``x-death`` record differ by when each message was sent."""
    records = quorum_eta.records
    mine, theirs = (
        _without_delay_noise(comparable(records[task_id], task_id))
        for task_id in (quorum_eta.ours, quorum_eta.theirs)
    )
    assert mine == theirs
    assert records[quorum_eta.ours]["delivery_info"]["exchange"] == "celery_delayed_delivery"


def _without_delay_noise(record: dict[str, Any]) -> dict[str, Any]:
    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if k not in ("x-death", "eta")}
        return value

    return clean(record)
