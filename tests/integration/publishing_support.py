"""Shared by the broker publishing tests (Redis pipeline, RabbitMQ confirms)."""

from __future__ import annotations

from celery import Celery
from kombu import Exchange, Queue


def add_task_with_own_options(app: Celery, prefix: str) -> None:
    """``tests.limited``: registered locally, with options of its own (limits, a queue,
    ``ignore_result``) that ``send_task`` merges in."""

    @app.task(
        name="tests.limited",
        shared=False,
        lazy=False,  # registered now: finalizing would pull in every shared task
        time_limit=30,
        soft_time_limit=20,
        ignore_result=True,
        queue=f"{prefix}-limited",
    )
    def limited() -> None:  # pragma: no cover - never runs here
        return None


def declare_bound_queue(app: Celery, prefix: str, exchange: Exchange) -> None:
    """``{prefix}-bound`` on ``exchange`` with routing key ``bound``, as a worker consuming it
    would declare it."""
    with app.connection_for_write() as connection:
        Queue(f"{prefix}-bound", exchange, routing_key="bound")(
            connection.default_channel
        ).declare()
