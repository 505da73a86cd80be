"""Schedules to ``schedule.v1`` documents (either style), and files written safely.

A file is rendered document by document, so 100,000 schedules never sit in memory as one
string, and one stored row that cannot be written (a lone surrogate kept by SQLite, a payload
nested deeper than JSON can be dumped) is refused with its id instead of failing the export of
every schedule. Files are written atomically: a temporary file beside the target, renamed over
it at the end, so a failed export never leaves a truncated or empty file behind.
"""

from __future__ import annotations

import json
import os
import tempfile
import textwrap
from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID
from zoneinfo import ZoneInfo

from scheduler_app.contract.fields import (
    CONTRACT,
    DST_FIELDS,
    INFORMATIONAL,
    POLICY_FIELDS,
    SPEC_KINDS,
    SPEC_TOP_POLICIES,
    TIMING_FIELDS,
    USER_REF,
    Style,
    spec_enum,
)
from scheduler_app.handoff.allowlist import event_type_of
from scheduler_app.models import Schedule

SPEC_ENUM_POLICIES = ("misfire", "overlap", "on_pause", "mode", "lateness_class")
SPEC_ENUM_TIMING = ("interval_mode", "window_policy")


@dataclass(frozen=True)
class Refusal:
    """A stored row that could not be exported, and why."""

    item_id: str
    reason: str

    def __str__(self) -> str:
        return f"{self.item_id}: not exported: {self.reason}"


# -- one document ----------------------------------------------------------------------------


def export_document(schedule: Schedule, style: Style = "native") -> dict[str, Any]:
    """One schedule as a ``schedule.v1`` document, keys in the documented order."""
    if style == "spec":
        return _spec_document(schedule)
    return {
        "contract": CONTRACT,
        "schedule_id": str(schedule.pk),
        "tenant_id": schedule.tenant,
        "owner_ref": schedule.owner.get_username() if schedule.owner else None,
        "key": schedule.key,
        "name": schedule.name,
        "objective": schedule.objective,
        "origin": schedule.origin,
        "target": _target(schedule, style),
        "timing": _timing(schedule, style),
        "policies": {name: getattr(schedule, model) for name, model in POLICY_FIELDS.items()},
        "status": schedule.status,
        **{name: _instant(getattr(schedule, name), "UTC") for name in INFORMATIONAL},
    }


def _spec_document(schedule: Schedule) -> dict[str, Any]:
    key_is_id = bool(schedule.key) and not looks_like_uuid(schedule.key or "")
    policies = {name: getattr(schedule, model) for name, model in POLICY_FIELDS.items()}
    for name in SPEC_ENUM_POLICIES:
        policies[name] = spec_enum(policies[name])
    document: dict[str, Any] = {
        "contract": CONTRACT,
        "schedule_id": schedule.key if key_is_id else str(schedule.pk),
        "tenant_id": schedule.tenant,
        "owner_ref": f"{USER_REF}{schedule.owner.get_username()}" if schedule.owner else None,
        "target": _target(schedule, "spec"),
        "timing": _timing(schedule, "spec"),
        **{name: policies.pop(inner) for name, inner in SPEC_TOP_POLICIES.items()},
        "status": spec_enum(schedule.status),
        "version": schedule.version,
    }
    zone = schedule.timezone
    document.update({name: _instant(getattr(schedule, name), zone) for name in INFORMATIONAL[1:]})
    if key_is_id:
        document["uuid"] = str(schedule.pk)
    elif schedule.key:
        document["key"] = schedule.key
    document.update(
        name=schedule.name,
        objective=schedule.objective,
        origin=spec_enum(schedule.origin),
        policies=policies,
    )
    return document


def _target(schedule: Schedule, style: Style) -> dict[str, Any]:
    event_type = event_type_of(schedule.task)
    routing: dict[str, Any] = {"options": _sorted(schedule.options)}
    if event_type is not None:  # the endpoint is its only option, shown on its own
        options = schedule.options if isinstance(schedule.options, dict) else {}
        head = {"type": "event", "event_type": event_type, "endpoint": options.get("endpoint")}
        routing = {}
    elif schedule.job_type:
        head = {"type": "job", "job_type": schedule.job_type}
    else:
        head = {"type": "task", "task": schedule.task}
    if style == "spec":
        head["type"] = spec_enum(head["type"])
    return {
        **head,
        "payload_ref": schedule.payload_ref,
        "kwargs": _sorted(schedule.kwargs),
        **routing,
        "args": _sorted(schedule.args or []),
    }


def _timing(schedule: Schedule, style: Style) -> dict[str, Any]:
    zone = schedule.timezone if style == "spec" else "UTC"
    timing = {
        name: _instant(getattr(schedule, model), zone) for name, model in TIMING_FIELDS.items()
    }
    timing["dst"] = {name: getattr(schedule, model) for name, model in DST_FIELDS.items()}
    if style == "spec":
        timing["kind"] = SPEC_KINDS.get(schedule.kind, spec_enum(schedule.kind))
        for name in SPEC_ENUM_TIMING:
            timing[name] = spec_enum(timing[name])
        timing["dst"] = {name: spec_enum(value) for name, value in timing["dst"].items()}
    return timing


def _instant(value: Any, zone: str) -> Any:
    """UTC with ``Z`` (native), or with the offset of the schedule's zone (spec)."""
    if not isinstance(value, datetime):
        return value
    if zone != "UTC":
        with suppress(ValueError, KeyError, OSError):  # a zone the database lost: UTC says it
            return value.astimezone(ZoneInfo(zone)).isoformat()
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def looks_like_uuid(text: str) -> bool:
    try:
        UUID(text)
    except ValueError:
        return False
    return True


# -- files -----------------------------------------------------------------------------------


def ordered_schedules() -> Iterator[Schedule]:
    """Every schedule in export order (creation, then id), streamed from the database."""
    return (
        Schedule.objects.select_related("owner")
        .order_by("created_at", "id")
        .iterator(chunk_size=500)
    )


def render_document(document: dict[str, Any], indent: str = "    ") -> str:
    """One document as it appears in a file; raises for what JSON in UTF-8 cannot hold."""
    text = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False)
    text.encode("utf-8")  # a lone surrogate (SQLite keeps them) cannot be written
    return textwrap.indent(text, indent)


UNWRITABLE = (ValueError, TypeError, RecursionError, UnicodeError)


def render_file(
    schedules: Iterable[Schedule],
    style: Style,
    refused: list[Refusal],
    progress: Callable[[], None] | None = None,
) -> Iterator[str]:
    """The export file in pieces; rows that cannot be written go to ``refused``."""
    yield '{\n  "contract": "schedule.v1",\n  "schedules": ['
    first = True
    for schedule in schedules:
        try:
            piece = render_document(export_document(schedule, style))
        except UNWRITABLE as exc:
            refused.append(Refusal(str(schedule.pk), _reason(exc)))
        else:
            yield ("\n" if first else ",\n") + piece
            first = False
        if progress is not None:
            progress()
    yield ("]" if first else "\n  ]") + "\n}\n"


def _reason(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "a JSON value is nested too deeply to be written; fix the stored row"
    if isinstance(exc, UnicodeEncodeError):
        return f"it holds text that is not valid Unicode ({exc.reason}); fix the stored row"
    return f"{exc}; fix the stored row"


def write_atomically(path: Path, pieces: Iterable[str]) -> None:
    """Write ``pieces`` to ``path`` through a temporary file renamed over it at the end."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.writelines(pieces)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
