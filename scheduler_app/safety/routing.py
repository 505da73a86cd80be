"""Routing options (``Schedule.options``) checked by type and range.

Checked twice: when a schedule is written (the service layer, with the schedule's tenant:
``check_routing``) and when a message is built (``routing_options``), so that a row stored
some other way (the ORM, a restored dump) is refused for that occurrence alone instead of
stopping the beat.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler_app.conf import get_settings
from scheduler_app.errors import ScheduleValidationError

ROUTING_OPTIONS = ("queue", "routing_key", "exchange", "priority")
"""The ``send_task`` options a schedule may set; anything else in ``Schedule.options`` is not
sent."""
NAME_OPTIONS = ("queue", "routing_key", "exchange")
MAX_NAME = 200
"""Longest queue, routing key or exchange name accepted (AMQP allows 255 bytes)."""
RESERVED_PREFIXES = ("celery.pidbox", "celeryev", "amq.", "reply.celery")
"""Celery's and RabbitMQ's own queues and exchanges: a schedule never publishes there."""
PRIORITY_RANGE = (0, 255)


class InvalidRouting(ScheduleValidationError):
    """A routing option of the wrong type, out of range, reserved or not allowed."""


def checked_options(options: Any) -> dict[str, Any]:
    """The routing options to send, each checked by type and range (``InvalidRouting``)."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise InvalidRouting(
            "options", 'routing options must be a JSON object, e.g. {"queue": "reports"}'
        )
    result: dict[str, Any] = {}
    for key in ROUTING_OPTIONS:
        value = options.get(key)
        if value is None:
            continue
        result[key] = _priority(value) if key == "priority" else _name(key, value)
    return result


def _name(key: str, value: Any) -> str:
    example = f'e.g. {{"{key}": "reports"}}'
    if not isinstance(value, str):
        raise InvalidRouting(
            f"options.{key}", f"must be a string, not {type(value).__name__}; {example}"
        )
    if not value or len(value) > MAX_NAME or not value.isprintable() or not value.isascii():
        raise InvalidRouting(
            f"options.{key}",
            f"must be 1 to {MAX_NAME} printable ASCII characters; {example}",
        )
    if value.lower().startswith(RESERVED_PREFIXES):
        raise InvalidRouting(
            f"options.{key}",
            f"{value!r} is reserved for Celery or the broker; use one of your own queues",
            code="reserved",
        )
    return value


def _priority(value: Any) -> int:
    low, high = PRIORITY_RANGE
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidRouting(
            "options.priority", f"must be a whole number from {low} to {high}, e.g. 5"
        )
    return value


def allowed_queues(tenant: str) -> tuple[str, ...] | None:
    """The queues ``tenant``'s schedules may name (``SCHEDULER_ALLOWED_QUEUES``); None: any."""
    setting = get_settings().ALLOWED_QUEUES
    if setting is None:
        return None
    if isinstance(setting, Mapping):
        chosen = setting.get(tenant, setting.get("*"))
        return None if chosen is None else tuple(chosen)
    return tuple(setting)


def check_routing(options: Any, tenant: str) -> dict[str, Any]:
    """``checked_options`` plus the tenant's allowlist (queue and routing key)."""
    result = checked_options(options)
    allowed = allowed_queues(tenant)
    if allowed is None:
        return result
    for key in ("queue", "routing_key"):
        if key in result and result[key] not in allowed:
            shown = ", ".join(allowed) or "(none)"
            raise InvalidRouting(
                f"options.{key}",
                f"{result[key]!r} is not a queue tenant {tenant!r} may use "
                f"(SCHEDULER_ALLOWED_QUEUES); choose one of: {shown}",
                code="queue_not_allowed",
            )
    return result
