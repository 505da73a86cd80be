"""Limits on what a schedule may hold, checked at the boundary (services, and so every form,
import, API call and decorator sync) before anything is evaluated or written.

Hostile or careless input must end as a field error, never as a 500, a dead beat or a row that
breaks a page later: numbers within sane maxima (mirrored by database check constraints),
rules and texts of bounded length, strict JSON (no NaN or Infinity, bounded nesting, no NUL
or lone surrogate characters, integers that fit 64 bits).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from scheduler_app.errors import ScheduleValidationError

DAY = 86_400
NUMBER_LIMITS: Mapping[str, tuple[int, int]] = {
    "max_lateness": (0, 7 * DAY),
    "catch_up_window": (0, 7 * DAY),
    "catch_up_limit": (1, 1_000),
    "max_attempts": (1, 100),
    "retry_delay": (0, DAY),
    "cancel_grace": (0, DAY),
    "deadline": (0, 366 * DAY),
    "jitter": (0, DAY),
    "expected_every": (1, 366 * DAY),
    "max_count": (1, 1_000_000),
    "max_per_day": (1, 100_000),
    "pause_after_failures": (1, 10_000),
}
"""Inclusive (minimum, maximum) of every whole-number field; seconds unless it is a count.
The same bounds are database check constraints (``models/bounds.py``)."""

RULE_LENGTHS: Mapping[str, int] = {
    "cron": 200,
    "rrule": 40_000,
    "interval": 50,
    "once": 64,
    "solar": 64,
}
"""Longest accepted rule per kind, in characters."""

TEXT_LENGTHS: Mapping[str, int] = {
    "name": 200,
    "key": 200,
    "tenant": 100,
    "objective": 100,
    "timezone": 64,
    "active_window": 500,
    "job_type": 200,
    "payload_ref": 500,
    "lateness_class": 20,
    "exclude_holidays": 40,
}
"""Longest accepted text per field (the column's length: SQLite does not enforce it)."""

MAX_JSON_DEPTH = 20
"""Deepest nesting of objects and arrays accepted in a payload or in ``options``."""
MAX_JSON_INT = 2**63 - 1
MAX_OPTIONS_BYTES = 4_096


def check_numbers(values: Mapping[str, Any]) -> None:
    """Every bounded whole-number field is an int within its limits (None where allowed)."""
    for field, (low, high) in NUMBER_LIMITS.items():
        value = values.get(field)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            raise ScheduleValidationError(
                field, f"must be a whole number, got {_shown(value)}", code="invalid"
            )
        if not low <= value <= high:
            raise ScheduleValidationError(
                field,
                f"must be between {low} and {high:,}, got {_shown(value)}",
                code="out_of_range",
            )


def check_text(field: str, value: Any) -> None:
    """A string of bounded length without NUL or lone surrogate characters."""
    if value is None:
        return
    if not isinstance(value, str):
        raise ScheduleValidationError(
            field, f"must be text, got {type(value).__name__}", code="invalid"
        )
    limit = RULE_LENGTHS.get(field) if field in RULE_LENGTHS else TEXT_LENGTHS.get(field)
    if limit is not None and len(value) > limit:
        raise ScheduleValidationError(
            field, f"is {len(value):,} characters long; the limit is {limit}", code="too_long"
        )
    _check_characters(field, value)


def check_rule(kind: Any, rule: Any) -> None:
    """The rule's length is within the limit of its kind (checked before it is parsed)."""
    if not isinstance(rule, str):
        return  # a datetime (once) or a timedelta (interval): normalized, no text to cap
    limit = RULE_LENGTHS.get(str(kind).strip().lower(), max(RULE_LENGTHS.values()))
    if len(rule) > limit:
        raise ScheduleValidationError(
            "rule",
            f"a {kind} rule of {len(rule):,} characters is too long; the limit is {limit}",
            code="too_long",
        )
    _check_characters("rule", rule)


def check_descriptive(fields: Mapping[str, Any]) -> None:
    """``name``, ``key``, ``tenant`` of a create or an edit."""
    for field in ("name", "key", "tenant"):
        if field in fields:
            check_text(field, fields[field])


def check_json(field: str, value: Any) -> None:
    """Strict JSON: finite numbers, 64-bit integers, bounded depth, clean strings and keys."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_JSON_DEPTH:
                raise ScheduleValidationError(
                    field,
                    f"is nested deeper than {MAX_JSON_DEPTH} levels; flatten it",
                    code="too_deep",
                )
            children = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in children:
                if isinstance(key, str):
                    _check_characters(field, key)
                stack.append((child, depth + 1))
        elif isinstance(item, str):
            _check_characters(field, item)
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            if abs(item) > MAX_JSON_INT:
                raise ScheduleValidationError(
                    field,
                    f"holds an integer of {item.bit_length()} bits; the limit is a "
                    "64-bit integer (pass big numbers as strings)",
                    code="number_too_large",
                )
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise ScheduleValidationError(
                    field,
                    f"holds {item!r}, which is not valid JSON; use null or a string",
                    code="not_finite",
                )
        else:
            raise ScheduleValidationError(
                field,
                f"holds a {type(item).__name__}, which is not a JSON value",
                code="not_json",
            )


def _check_characters(field: str, text: str) -> None:
    if "\x00" in text:
        raise ScheduleValidationError(
            field, "contains a NUL character (\\u0000); remove it", code="bad_character"
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ScheduleValidationError(
            field,
            "contains a lone surrogate character, which is not valid Unicode text; remove it",
            code="bad_character",
        ) from None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
