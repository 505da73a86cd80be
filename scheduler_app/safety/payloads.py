"""Payload checks beyond the size limit: plain JSON only, and no secrets.

A payload is stored in the database, copied into every occurrence and sent through the
broker: a password in it leaks into backups, logs and queues. Keys that look like secrets are
refused; pass a reference the task resolves instead (``payload_ref``, or a key such as
``password_ref`` / ``token_name`` that names the secret in your vault).
"""

from __future__ import annotations

import math
import re
from typing import Any

from scheduler_app.errors import ScheduleValidationError

SECRET_WORDS = re.compile(
    r"(password|passwd|passphrase|secret|token|api[-_]?key|access[-_]?key|private[-_]?key"
    r"|credentials?|authorization|bearer|cookie|session[-_]?id"
    r"|(^|[-_.])(pass|pwd|pin|auth))$",
    re.IGNORECASE,
)
REFERENCE_SUFFIXES = ("_ref", "_reference", "_name", "_id", "_path", "_env", "_url_ref")


def looks_secret(key: str) -> bool:
    lowered = key.lower()
    if lowered.endswith(REFERENCE_SUFFIXES):
        return False
    return bool(SECRET_WORDS.search(lowered))


def check_payload(kwargs: Any, path: str = "kwargs") -> None:
    """Raise ``ScheduleValidationError`` on non-JSON values or secret-looking keys."""
    if isinstance(kwargs, dict):
        for key, value in kwargs.items():
            if not isinstance(key, str):
                raise ScheduleValidationError(
                    path, f"key {key!r} is not a string; JSON object keys are strings"
                )
            where = f"{path}.{key}"
            if looks_secret(key):
                raise ScheduleValidationError(
                    where,
                    f"{key!r} looks like a secret; payloads are stored and sent in clear. "
                    "Keep the secret in your vault or settings and pass a reference instead "
                    f"(payload_ref, or a key such as '{key}_ref' naming it)",
                    code="secret_in_payload",
                )
            check_payload(value, where)
    elif isinstance(kwargs, list | tuple):
        for index, value in enumerate(kwargs):
            check_payload(value, f"{path}[{index}]")
    elif isinstance(kwargs, float) and not math.isfinite(kwargs):
        raise ScheduleValidationError(
            path, f"{kwargs!r} is not valid JSON; use null or a finite number"
        )
    elif not isinstance(kwargs, str | int | bool | type(None) | float):
        raise ScheduleValidationError(
            path,
            f"a {type(kwargs).__name__} is not a JSON value; pass strings, numbers, booleans, "
            "null, lists and objects (e.g. an ISO string for a date)",
        )
