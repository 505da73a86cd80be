"""What the parts of a ``schedule.v1`` document report to, and the small readers of one value.

``Collector`` gathers the problems of one document instead of stopping at the first. The readers
of an owner, a UUID, a status, an instant and a number of seconds each add a problem to it when
the value is wrong and return what to store; ``is_int`` and ``as_seconds`` only test and convert.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from django.contrib.auth import get_user_model

from scheduler_app.authoring import importing
from scheduler_app.contract.export import looks_like_uuid
from scheduler_app.contract.fields import USER_REF, enum_value
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.policies.limits import check_text
from scheduler_app.timing import parse_duration


class Collector:
    """Gathers the problems of one document instead of stopping at the first."""

    def __init__(self, label: str, memo: dict[Any, Any] | None = None) -> None:
        self.label = label
        self.memo: dict[Any, Any] = {} if memo is None else memo
        """Answers that do not change within one file (allowlist, job types), by question."""
        self.problems: list[importing.Problem] = []
        self.paths: dict[str, str] = {}
        """Model field -> where this document wrote it, when not at its native place."""

    def answer(self, question: tuple[str, str], ask: Callable[[], Any]) -> tuple[Any, str | None]:
        """``ask()``'s result, or the message it refused with; asked once per file."""
        if question not in self.memo:
            try:
                self.memo[question] = (ask(), None)
            except ScheduleValidationError as exc:
                self.memo[question] = (None, exc.message)
        answer: tuple[Any, str | None] = self.memo[question]
        return answer

    def add(self, path: str, message: str) -> None:
        self.problems.append(importing.Problem(self.label, path, message))

    def section(self, doc: dict[str, Any], name: str, allowed: Iterable[str]) -> dict[str, Any]:
        value = doc.get(name, {})
        if not isinstance(value, dict):
            self.add(name, "must be an object")
            return {}
        for unknown in sorted(set(value) - set(allowed)):
            self.add(f"{name}.{shown(unknown)}", "unknown field; see docs/contract.md")
        return value


def shown(name: str) -> str:
    """A field name from the file, safe to print: short, and quoted when it is not plain text."""
    if name.isprintable() and len(name) <= 40 and name.strip() == name and name:
        return name
    return repr(name[:40]) + ("..." if len(name) > 40 else "")


def owner(ref: Any, out: Collector) -> Any:
    if ref in (None, ""):
        return None
    if not isinstance(ref, str):
        out.add("owner_ref", f"must be 'user://<username>' or a username, got {ref!r}")
        return None
    username = ref.removeprefix(USER_REF)
    try:  # NUL or a lone surrogate: the user lookup itself would fail in the database
        check_text("owner_ref", username)
    except ScheduleValidationError as exc:
        out.add("owner_ref", exc.message)
        return None
    if "://" in username:
        out.add("owner_ref", f"{ref!r}: only user:// references exist; e.g. 'user://alice'")
        return None
    user_model = get_user_model()
    owner = user_model._default_manager.filter(**{user_model.USERNAME_FIELD: username}).first()
    if owner is None:
        out.add("owner_ref", f"no user {username!r}; create the user first or drop owner_ref")
    return owner


def uuid(value: Any, path: str, out: Collector) -> UUID | None:
    if value in (None, ""):
        return None
    if not isinstance(value, str) or not looks_like_uuid(value):
        out.add(path, f"{value!r} is not a UUID")
        return None
    return UUID(value)


def status(value: Any, out: Collector) -> str:
    status = enum_value(value)
    if status not in (*importing.SETTABLE_STATUSES, *importing.VERDICT_STATUSES):
        allowed = ", ".join(importing.SETTABLE_STATUSES)
        out.add("status", f"unknown status {value!r}; use one of: {allowed} (any case)")
        return "active"
    return str(status)


def instant(value: Any, path: str, out: Collector) -> datetime | None:
    text = value.strip() if isinstance(value, str) else None
    try:
        parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text and text[-1] in "Zz" else text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        out.add(path, f"{value!r} is not an ISO 8601 instant, e.g. 2026-03-29T02:30:00Z")
        return None
    if parsed.tzinfo is None:
        out.add(path, f"{value!r} has no UTC offset; add one, e.g. Z or +02:00")
        return None
    try:
        parsed.astimezone(UTC)
    except OverflowError:
        out.add(path, f"{value!r} is out of range in UTC")
        return None
    return parsed


def seconds(value: Any, path: str, out: Collector, *, nullable: bool) -> Any:
    if value is None and nullable:
        return None
    if is_int(value) and value >= 0:
        return value
    if isinstance(value, str):
        try:
            return int(parse_duration(value, path).total_seconds())
        except ScheduleValidationError as exc:
            out.add(path, exc.message)
            return None
    out.add(path, f"must be a whole number of seconds >= 0 or a duration like '15m', got {value!r}")
    return None


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def as_seconds(value: Any) -> int:
    if is_int(value):
        return int(value)
    return int(parse_duration(value, "duration").total_seconds())
