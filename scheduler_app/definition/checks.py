"""Checks of a definition's fields besides its timing: the task (allow-listed), its payload
(args and kwargs: strict JSON, their size), the routing options and the holidays code; each
raises ``ScheduleValidationError`` for the first problem.
"""

from __future__ import annotations

import json
from typing import Any

from scheduler_app.conf import get_settings
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.handoff.allowlist import (
    EVENT_PREFIX,
    check_target,
    is_allowed_name,
    registered_tasks,
)
from scheduler_app.policies.limits import MAX_JSON_DEPTH, MAX_OPTIONS_BYTES, check_json, check_text
from scheduler_app.safety.routing import checked_options


def check_task(task: object) -> None:
    """Only allow-listed ``OccurrenceTask`` targets (``targets.check_target``), ``celery.*`` never.

    With ``SCHEDULER_VALIDATE_TASK_NAMES = False`` (a process that cannot import the tasks,
    such as a beat on another host) a task this process does not know is accepted only when
    ``SCHEDULER_ALLOWED_TASKS`` names it: without the task its marker cannot be seen.
    """
    if not isinstance(task, str) or not task.strip():
        raise ScheduleValidationError(
            "task", "a Celery task name is required, e.g. 'reports.daily'"
        )
    # An event's type (``event:<type>``) needs no task registered anywhere.
    if task.startswith(EVENT_PREFIX) or get_settings().VALIDATE_TASK_NAMES:
        check_target(task)
        return
    if task in registered_tasks():
        check_target(task)
        return
    if not is_allowed_name(task):
        raise ScheduleValidationError(
            "task",
            f"task {task!r} is not registered in this process and SCHEDULER_ALLOWED_TASKS does "
            "not name it; add it (or a pattern such as 'reports.*') to SCHEDULER_ALLOWED_TASKS",
            code="forbidden_task",
        )


def check_event_args(task: object, args: object) -> None:
    """An event's data is its ``kwargs`` (a JSON object): positional arguments mean nothing."""
    if isinstance(task, str) and task.startswith(EVENT_PREFIX) and args:
        raise ScheduleValidationError(
            "args",
            "an event schedule sends kwargs as the event's data; move these values into kwargs "
            '(e.g. {"contract_id": 42}) and leave args empty',
            code="event_args",
        )


def holidays_code(value: object) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ScheduleValidationError(
            "exclude_holidays", f"expected a code such as 'LV' or 'US-NY', got {value!r}"
        )
    check_text("exclude_holidays", value)
    return value


def _check_args(args: object) -> list[Any]:
    if not isinstance(args, list | tuple):
        raise ScheduleValidationError(
            "args", 'positional arguments must be a JSON list, e.g. [1, "eu"]'
        )
    return list(args)


def check_payload(kwargs: object, args: object = ()) -> None:
    """kwargs (a JSON object) and args (a JSON list): strict JSON, and their size counted
    together against ``SCHEDULER_MAX_PAYLOAD_BYTES`` (both travel in every message)."""
    if not isinstance(kwargs, dict):
        raise ScheduleValidationError(
            "kwargs", "the payload must be a JSON object of keyword arguments"
        )
    positional = _check_args(args)
    if positional:
        check_json("args", positional)
    try:
        size = len(json.dumps(kwargs, separators=(",", ":")).encode())
        size += len(json.dumps(positional, separators=(",", ":")).encode()) if positional else 0
    except RecursionError:
        raise ScheduleValidationError(
            "kwargs", f"is nested deeper than {MAX_JSON_DEPTH} levels; flatten it", code="too_deep"
        ) from None
    except (TypeError, ValueError, UnicodeEncodeError) as exc:
        check_json("kwargs", kwargs)  # names the problem when it is one it knows
        raise ScheduleValidationError(
            "kwargs", f"the payload is not JSON-serializable ({exc}); pass plain JSON values"
        ) from None
    limit = get_settings().MAX_PAYLOAD_BYTES
    if size > limit:
        raise ScheduleValidationError(
            "kwargs",
            f"the payload (kwargs and args) is {size} bytes, more than the limit of {limit} "
            "(SCHEDULER_MAX_PAYLOAD_BYTES); store large data elsewhere and pass its id",
            code="payload_too_large",
        )
    check_json("kwargs", kwargs)


def check_options(options: object) -> None:
    if options is None or options == {}:
        return
    if not isinstance(options, dict):
        raise ScheduleValidationError(
            "options", 'routing options must be a JSON object, e.g. {"queue": "reports"}'
        )
    check_json("options", options)
    try:
        size = len(json.dumps(options).encode())
    except (TypeError, ValueError, RecursionError) as exc:
        raise ScheduleValidationError("options", f"not JSON-serializable ({exc})") from None
    if size > MAX_OPTIONS_BYTES:
        raise ScheduleValidationError(
            "options", f"is {size} bytes; the limit is {MAX_OPTIONS_BYTES}", code="too_large"
        )
    checked_options(options)  # types and ranges of queue, routing_key, exchange, priority
