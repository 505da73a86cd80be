"""kombu's Redis transport, made to survive a Redis restart without a supervisor.

The root cause of the worker exits (kombu/celery 5.7.0). A kombu Redis channel builds its
connection pool lazily, from ``self.connection.client``: the transport and the kombu
``Connection`` that opened it. When Redis goes away, Celery closes the broker connection and
opens a new one; closing a channel disconnects its pools and sets ``channel.connection =
None``, and releasing the ``Connection`` sets ``transport.client = None``. Work still tied to
the old channel then needs Redis once more: a task that was running finishes and acks its
message (``acks_late``), a cancelled one is rejected and restored, the QoS finalizer restores
unacked messages, ``restore_visible`` sweeps. Each rebuilds the pool through
``_connparams``, which reads ``None.client`` (or ``None.hostname``): ``AttributeError``.
Celery expects connection errors there (``ack_log_error``, ``ignore_errors``), not an
``AttributeError``, which escapes to the consumer and the worker process exits.

The fix: a channel remembers the connection parameters it was opened with and uses them
when its connection is gone, so the late ack, reject or restore reaches the restarted Redis
(the message is acknowledged or put back, as intended). ``scheduler_app.signals`` (loaded
when Django starts, in workers and beats) points the ``redis://`` and ``rediss://`` URL
schemes at this transport; nothing else changes. The minimal reproduction is kept in
``tests/integration/test_reliability_kombu.py``.
"""

from __future__ import annotations

from typing import Any

import redis
from kombu.transport import redis as kombu_redis


class Channel(kombu_redis.Channel):
    """A Redis channel that can still reach Redis after its connection object is gone."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._remembered: dict[bool, dict[str, Any]] = {}
        super().__init__(*args, **kwargs)

    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        connection = self.connection
        if connection is not None and connection.client is not None:
            params: dict[str, Any] = super()._connparams(  # type: ignore[misc]
                asynchronous=asynchronous
            )
            self._remembered[asynchronous] = dict(params)
            return params
        remembered = self._remembered.get(asynchronous) or self._remembered.get(not asynchronous)
        if remembered is None:
            raise redis.exceptions.ConnectionError(
                "the Redis channel is closed and was never connected"
            )
        return dict(remembered)


class Transport(kombu_redis.Transport):
    """kombu's Redis transport with ``Channel`` above."""

    Channel = Channel
