"""Filling messages in from a template of their kind gives exactly what ``send_task``'s path
builds (``publishing.messages``): compared message by message with the full path, for many
occurrences of every kind (task, routing, eta, expiry), on an in-memory transport."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from celery import Celery
from celery.signals import before_task_publish
from kombu import Exchange

from scheduler_app.publishing.calls import TaskCall
from scheduler_app.publishing.messages import MessageBuilder
from tests.integration.test_publishing_pipeline import occurrence

NOW = datetime.now(UTC)


@pytest.fixture
def app() -> Iterator[Celery]:
    prefix = f"fill-{uuid.uuid4().hex[:8]}"
    app = Celery("fill-in-test", broker="memory://", set_as_current=False)
    app.conf.task_default_queue = f"{prefix}-default"
    app.conf.task_routes = {
        "tests.routed": {"queue": f"{prefix}-routed"},
        "tests.urgent": {"queue": f"{prefix}-urgent", "priority": 6},
        "tests.exchanged": {
            "exchange": Exchange(f"{prefix}-x", type="direct").name,
            "routing_key": "bound",
        },
    }

    @app.task(name="tests.own_options", ignore_result=True, time_limit=30, soft_time_limit=20)
    def own_options() -> None:  # pragma: no cover - never executed
        return None

    yield app


TASKS = ["demo.ping", "tests.routed", "tests.urgent", "tests.exchanged", "tests.own_options"]


def batch() -> list[Any]:
    rows = []
    kwargs_cycle: list[dict[str, Any]] = [
        {"n": 1},
        {},
        {"city": "Rīga", "clock": "⏰", "nested": {"ü": [1, 2.5, None, True]}},
        {"long": "x" * 5000},
    ]
    for index in range(120):
        task = [
            "demo.ping",
            "tests.routed",
            "tests.urgent",
            "tests.exchanged",
            "tests.own_options",
        ][index % 5]
        options = [{}, {"queue": "chosen", "priority": 2}][index % 2 and index % 3 == 0]
        rows.append(
            occurrence(
                task,
                kwargs_cycle[index % 4],
                eta=index % 3 == 0,
                expires=index % 2 == 0,
                options=options,
            )
        )
    return rows


def build_all(app: Celery, *, fill_in: bool) -> tuple[list[Any], MessageBuilder]:
    with app.producer_or_acquire() as producer:
        builder = MessageBuilder(app, producer)
        builder.fill_in = fill_in
        builder.now = NOW  # the same `expiration` arithmetic for both builds
        built = [builder.build(TaskCall.of(row, NOW)) for row in batch_rows]
    return built, builder


batch_rows: list[Any] = []


def test_filled_in_messages_equal_the_full_path(
    app: Celery, caplog: pytest.LogCaptureFixture
) -> None:
    batch_rows[:] = batch()
    with caplog.at_level(logging.WARNING, logger="scheduler_app.publishing"):
        filled, builder = build_all(app, fill_in=True)
    full, _ = build_all(app, fill_in=False)
    assert filled == full
    kinds = [template for template in builder.templates.values()]
    assert kinds and all(template is not None for template in kinds)
    assert sum(template.checked for template in kinds if template) >= 5  # and filled in
    assert len(kinds) < len(batch_rows) / 2  # most messages were filled in
    assert "differs" not in caplog.text


def test_a_publish_signal_receiver_keeps_the_full_path(app: Celery) -> None:
    def add_header(headers: dict[str, Any], **_: Any) -> None:
        headers["traceparent"] = "00-abc-def-01"

    before_task_publish.connect(add_header, weak=False)
    try:
        with app.producer_or_acquire() as producer:
            builder = MessageBuilder(app, producer)
            assert not builder.fill_in
    finally:
        before_task_publish.disconnect(add_header)


def test_a_router_function_keeps_the_full_path(app: Celery) -> None:
    app.conf.task_routes = (lambda name, args, kwargs, options, task=None, **kw: None,)
    with app.producer_or_acquire() as producer:
        assert not MessageBuilder(app, producer).fill_in


def test_a_kind_that_differs_when_filled_in_falls_back(
    app: Celery, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A version of Celery that adds a per-message header: the check catches it."""
    from celery.app import amqp

    original = amqp.AMQP.as_task_v2

    def with_counter(self: Any, *args: Any, **kwargs: Any) -> Any:
        message = original(self, *args, **kwargs)
        message.headers["x-counter"] = uuid.uuid4().hex
        return message

    monkeypatch.setattr(amqp.AMQP, "as_task_v2", with_counter)
    rows = [occurrence("demo.ping", {"n": n}, eta=False, expires=False) for n in range(5)]
    warnings = caplog.at_level(logging.WARNING, logger="scheduler_app.publishing")
    with warnings, app.producer_or_acquire() as producer:
        builder = MessageBuilder(app, producer)
        built = [builder.build(TaskCall.of(row, NOW)) for row in rows]
    assert len({message["headers"]["x-counter"] for message, _, _ in built}) == 5
    assert list(builder.templates.values()) == [None]
    assert "differs from send_task" in caplog.text
