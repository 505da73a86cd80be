"""The AMQP (RabbitMQ) batch path: messages built as ``send_task`` builds them, published on one
channel in confirm mode, and counted as published only once the broker has confirmed them.

One batch opens a channel of its own on the producer's pooled connection, selects publisher
confirms on it, publishes every message without waiting, then reads the broker's
``basic.ack``/``basic.nack`` frames until every delivery tag is settled. The channel is closed
at the end of the batch, so confirm mode never leaks into the channels ``send_task`` uses; with
kombu's ``confirm_publish`` transport option set, the batch still waits once, not per message.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from amqp.exceptions import AMQPError, MessageNacked
from celery import Celery
from kombu import Connection
from kombu.exceptions import KombuError
from kombu.transport import pyamqp

from scheduler_app.handoff.protocol import PartialPublish
from scheduler_app.models import Occurrence
from scheduler_app.observability import tracing
from scheduler_app.publishing.calls import BROKER_ERRORS, TaskCall
from scheduler_app.publishing.messages import MessageBuilder, Prepared

logger = logging.getLogger("scheduler_app.publishing")


class ConfirmTimeout(Exception):
    """The broker did not settle every message in time."""


AMQP_ERRORS: tuple[type[BaseException], ...] = (*BROKER_ERRORS, AMQPError, MessageNacked)
_BATCH_ERRORS: tuple[type[BaseException], ...] = (*AMQP_ERRORS, ConfirmTimeout)
"""What publishing to RabbitMQ can raise: py-amqp's own errors are not kombu's, and
``MessageNacked`` comes from ``send_task`` on a connection with ``confirm_publish``."""

CONFIRM_TIMEOUT = 30.0
"""Seconds to wait for the broker to confirm (or to take a message off our hands) before the
unconfirmed rest of the batch counts as not published."""

WINDOW = 5000
"""Messages published and not yet confirmed, at most: bounds what a failure sends again and
what the broker holds for us before it has answered."""


def is_amqp_broker(app: Celery) -> bool:
    """kombu's py-amqp transport (``amqp://``, ``pyamqp://``, ``amqps://``); no I/O."""
    if not isinstance(app, Celery):
        return False
    with app.connection_for_write() as connection:
        return issubclass(connection.get_transport_cls(), pyamqp.Transport)


class Confirms:
    """The broker's answers for delivery tags 1..n of one channel in confirm mode.

    A tag is pending, confirmed (``basic.ack``) or refused (``basic.nack``, or returned as
    unroutable before its ack). ``multiple`` settles every pending tag up to the one given.
    Only the unbroken run of confirmed tags from the first counts as published.
    """

    def __init__(self) -> None:
        self.sent = 0
        self.unsettled = 0
        self.refused: int | None = None
        """The lowest refused tag, if any."""
        self._answers: list[bool | None] = []
        self._floor = 1  # every tag below it is settled

    def add(self) -> int:
        self.sent += 1
        self.unsettled += 1
        self._answers.append(None)
        return self.sent

    def ack(self, delivery_tag: int, multiple: bool) -> None:
        self._settle(delivery_tag, multiple, confirmed=True)

    def nack(self, delivery_tag: int, multiple: bool) -> None:
        self._settle(delivery_tag, multiple, confirmed=False)

    def returned(self, delivery_tag: int) -> None:
        """Unroutable: the broker returns it, then acks it; the ack must not count."""
        self._answer(delivery_tag, confirmed=False)

    def confirmed_prefix(self) -> int:
        """How many tags from the first are confirmed without a gap."""
        count = 0
        for answer in self._answers:
            if answer is not True:
                break
            count += 1
        return count

    def _settle(self, delivery_tag: int, multiple: bool, *, confirmed: bool) -> None:
        first = self._floor if multiple else delivery_tag
        for tag in range(first, min(delivery_tag, self.sent) + 1):
            self._answer(tag, confirmed=confirmed)
        while self._floor <= self.sent and self._answers[self._floor - 1] is not None:
            self._floor += 1

    def _answer(self, tag: int, *, confirmed: bool) -> None:
        if not 1 <= tag <= self.sent or self._answers[tag - 1] is not None:
            return  # unknown tag, or already settled (the ack that follows a return)
        self._answers[tag - 1] = confirmed
        self.unsettled -= 1
        if not confirmed and (self.refused is None or tag < self.refused):
            self.refused = tag


class AmqpConfirmPublisher:
    """One batch: build every message, declare its queues once, publish on one confirm-mode
    channel, wait once for the broker's confirms."""

    def __init__(
        self,
        app: Celery,
        now: datetime,
        *,
        confirm_timeout: float | None = None,
        window: int | None = None,
        mandatory: bool = False,
    ) -> None:
        self.app = app
        self.now = now
        self.confirm_timeout = CONFIRM_TIMEOUT if confirm_timeout is None else confirm_timeout
        self.window = max(WINDOW if window is None else window, 1)
        self.mandatory = mandatory
        """Off by default, as for ``send_task``: the broker confirms and drops a message no
        queue is bound for. On, such a message is returned and counts as not published."""

    def publish(self, occurrences: Sequence[Occurrence]) -> list[Occurrence]:
        """Publish in order; return them once the broker has confirmed every one.

        A nack, a returned message, a confirm timeout or a broker error raises
        ``PartialPublish`` with the occurrences confirmed before the first that was not
        (at-least-once: the rest is published again with the same task id). A message that
        cannot be serialized stops the batch there, as on the ``send_task`` path.
        """
        built: list[Prepared] = []
        refused: KombuError | None = None
        confirms = Confirms()
        try:
            with self.app.producer_or_acquire() as producer:
                builder = MessageBuilder(self.app, producer)
                for occurrence in occurrences:
                    try:
                        with tracing.publishing(occurrence):
                            built.append(builder.build(TaskCall.of(occurrence, self.now)))
                    except KombuError as exc:  # e.g. the serializer refuses the kwargs
                        refused = exc
                        break
                try:
                    builder.declare_queues()
                    _ConfirmedBatch(self, producer.connection, confirms).send(built)
                except Exception:  # whatever went wrong, the pool does not get it as it is
                    _drop(producer.connection)
                    raise
        except _BATCH_ERRORS as exc:
            published = list(occurrences[: confirms.confirmed_prefix()])
            raise PartialPublish(published=published, cause=repr(exc)) from exc
        published = list(occurrences[: confirms.confirmed_prefix()])
        if len(published) < len(built):
            cause = f"the broker refused delivery tag {confirms.refused} (basic.nack or return)"
            raise PartialPublish(published=published, cause=cause)
        if refused is not None:
            raise PartialPublish(published=published, cause=repr(refused)) from refused
        return published


class _ConfirmedBatch:
    """The channel of one batch: opened, put in confirm mode, closed. After an error the
    whole connection is dropped instead (``_drop``)."""

    def __init__(self, options: AmqpConfirmPublisher, connection: Connection, confirms: Confirms):
        self.options = options
        self.connection = connection
        self.confirms = confirms
        self.task_tags: dict[str, int] = {}

    def send(self, built: list[Prepared]) -> None:
        if not built:
            return
        channel = self.connection.channel()
        self._select(channel)
        self._publish_all(channel, built)
        self._wait(lambda: self.confirms.unsettled == 0)
        self._close(channel)

    def _select(self, channel: Any) -> None:
        channel.confirm_select()
        # py-amqp's flag for the channel: with ``confirm_publish`` set, its own
        # ``basic_publish_confirm`` must not select again.
        channel._confirm_selected = True
        channel.events["basic_ack"].add(self.confirms.ack)
        channel.events["basic_nack"].add(self.confirms.nack)
        channel.events["basic_return"].add(self._on_return)

    def _publish_all(self, channel: Any, built: list[Prepared]) -> None:
        window = self.options.window
        for message, exchange, routing_key in built:
            if self.confirms.refused is not None:
                return  # nothing after a refusal can count as published: don't send it
            if self.confirms.unsettled >= window:
                self._wait(lambda: self.confirms.unsettled < window)
            tag = self.confirms.add()
            self.task_tags[message.properties.get("correlation_id", "")] = tag
            # The channel class's own publish, not the per-message waiting
            # ``basic_publish_confirm`` that ``confirm_publish`` installs on the instance.
            channel._basic_publish(
                message,
                exchange=exchange,
                routing_key=routing_key,
                mandatory=self.options.mandatory,
                timeout=self.options.confirm_timeout,  # a blocked broker is a failure, not a hang
            )

    def _wait(self, done: Any) -> None:
        """Read the broker's frames until ``done()``; at most ``confirm_timeout`` seconds (a
        duration in this process: the monotonic clock)."""
        deadline = time.monotonic() + self.options.confirm_timeout
        amqp_connection = self.connection.connection
        while not done():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ConfirmTimeout(
                    f"{self.confirms.unsettled} messages unconfirmed after "
                    f"{self.options.confirm_timeout:g} s"
                )
            try:
                amqp_connection.drain_events(timeout=remaining)
            except TimeoutError:  # socket.timeout: loop to the deadline check
                continue

    def _on_return(self, exc: Exception, exchange: str, routing_key: str, message: Any) -> None:
        task_id = message.properties.get("correlation_id", "")
        self.confirms.returned(self.task_tags.get(task_id, 0))
        logger.warning(
            "message returned by the broker: no queue bound",
            extra={"action": "publish.amqp_returned", "occurrence": task_id},
        )

    def _close(self, channel: Any) -> None:
        try:
            channel.close()
        except AMQP_ERRORS as exc:
            logger.info(
                "publish channel not closed cleanly; dropping the connection",
                extra={"action": "publish.amqp_close_failed", "error": repr(exc)},
            )
            _drop(self.connection)


def _drop(connection: Connection) -> None:
    """After a broker error or a timeout the pooled connection may hold a half-written frame,
    a closed default channel or late confirms: drop it, and its next user connects afresh."""
    try:
        connection.collect()
    except AMQP_ERRORS as exc:  # already gone
        logger.debug(
            "connection already gone", extra={"action": "publish.amqp_drop", "error": repr(exc)}
        )
