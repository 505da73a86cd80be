"""Redis payloads filled into an envelope encoded once per kind (``publishing.envelopes``) are
byte for byte the payloads kombu's own path writes: compared message by message, for many
occurrences of every kind (task, routing, exchange, priority, eta, expiry, trace headers)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from celery import Celery

from scheduler_app.publishing.calls import TaskCall
from scheduler_app.publishing.envelopes import Envelope, learn
from scheduler_app.publishing.messages import MessageBuilder
from scheduler_app.publishing.redis import Envelopes, redis_commands
from tests.integration import test_publishing_pipeline as pipeline
from tests.integration.test_publishing_fill_in import NOW, batch
from tests.integration.test_publishing_pipeline import occurrence

pytestmark = pytest.mark.redis
app = pipeline.app
"""The pipeline tests' app: its queues, routes, exchange and a task with options of its own."""
prefix = pipeline.prefix


def _with_tag(payload: str, tag: str) -> str:
    """``payload`` with its delivery tag (a random uuid per message) replaced by ``tag``."""
    own = json.loads(payload)["properties"]["delivery_tag"]
    return payload.replace(own, tag)


def both_ways(app: Celery, calls: list[TaskCall]) -> tuple[list[Any], list[Any], Envelopes]:
    """Every call's Redis commands through ``Envelopes`` and through kombu's path alone."""
    with app.producer_or_acquire() as producer:
        builder = MessageBuilder(app, producer)
        builder.now = NOW  # the same `expiration` arithmetic for both builds
        envelopes = Envelopes(builder)
        filled = [envelopes.commands(call) for call in calls]
        reference = MessageBuilder(app, producer)
        reference.now = NOW
        destinations: dict[tuple[str, str], list[str]] = {}
        full = [
            redis_commands(reference.channel, *reference.build_full(call), destinations)
            for call in calls
        ]
    return filled, full, envelopes


def calls_of(rows: list[Any]) -> list[TaskCall]:
    return [TaskCall.of(row, NOW) for row in rows]


def test_filled_in_payloads_are_kombus_byte_for_byte(
    app: Celery, caplog: pytest.LogCaptureFixture
) -> None:
    calls = calls_of(batch())
    for index, call in enumerate(calls):  # some carry trace context, some do not
        if index % 4 == 1:
            traced = {**call.headers, "traceparent": f"00-{index:032x}-{index:016x}-01"}
            calls[index] = call._replace(headers=traced)
    with caplog.at_level(logging.WARNING, logger="scheduler_app.publishing"):
        filled, full, envelopes = both_ways(app, calls)
    for mine, theirs in zip(filled, full, strict=True):
        assert [key for key, _ in mine] == [key for key, _ in theirs]
        for (_, payload), (_, expected) in zip(mine, theirs, strict=True):
            tag = json.loads(payload)["properties"]["delivery_tag"]
            assert payload == _with_tag(expected, tag)
    assert len(envelopes.verified) >= 5  # and filled in after their check
    assert "differs" not in caplog.text


def test_each_message_gets_its_own_delivery_tag(app: Celery) -> None:
    rows = [occurrence("demo.ping", {"n": n}, eta=False, expires=False) for n in range(8)]
    filled, _, envelopes = both_ways(app, calls_of(rows))
    tags = {json.loads(payload)["properties"]["delivery_tag"] for [(_, payload)] in filled}
    assert len(tags) == 8 and envelopes.verified


def test_an_envelope_that_differs_from_kombu_falls_back(
    app: Celery, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A kombu that adds something per message: the check on the kind catches it."""
    original = Envelope.payload

    def off_by_one(self: Envelope, *args: Any) -> str:
        return original(self, *args) + " "

    monkeypatch.setattr(Envelope, "payload", off_by_one)
    rows = [occurrence("demo.ping", {"n": n}, eta=False, expires=False) for n in range(6)]
    with caplog.at_level(logging.WARNING, logger="scheduler_app.publishing"):
        filled, full, envelopes = both_ways(app, calls_of(rows))
    # learn() itself refuses an envelope that does not give the message back
    assert not envelopes.verified and list(envelopes.known.values()) == [None]
    for mine, theirs in zip(filled, full, strict=True):
        [(_, payload)], [(_, expected)] = mine, theirs
        assert payload == _with_tag(expected, json.loads(payload)["properties"]["delivery_tag"])


def test_learn_refuses_a_message_it_cannot_give_back() -> None:
    assert learn({"body": b"bytes", "headers": {}, "properties": {}}) is None
    assert learn({"body": "e30=", "headers": None, "properties": {}}) is None
    message = {"body": "e30=", "headers": {"id": "x", "task": "t"}, "properties": {}}
    envelope = learn(message)
    assert envelope is not None
    assert envelope.payload("e30=", {"id": "y"}, {}) == json.dumps(
        {"body": "e30=", "headers": {"id": "y", "task": "t"}, "properties": {}}
    )
