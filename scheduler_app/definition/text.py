"""Ways of writing a timing that become the schedule's structured fields before validation:
English text (``text="every weekday at 9:00 in Europe/Riga"``) and RFC 5545 content lines whose
DTSTART names the zone. Only the structured rule is stored, never the text.

Shared by every entry point (the service's ``create_schedule``, ``@scheduled``, the preview
command and the admin builder), so each reads text the same way. Pure: no Django.
"""

from __future__ import annotations

from typing import Any

from scheduler_app.errors import ScheduleValidationError
from scheduler_app.timing.content_lines import dtstart_zone
from scheduler_app.timing.phrases import ParsedText, parse_text

TIMING_FIELDS = ("kind", "rule", "anchor", "active_window")
"""Fields the text sets itself: giving one of them as well is refused, not merged."""


def fields_from_text(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` with ``text`` replaced by the structured fields it means.

    A timing field given beside the text is refused (the text and the field would both say
    when); so is a ``timezone`` or ``window_policy`` that contradicts the text.
    """
    if "text" not in fields:
        return with_rule_zone(fields)
    text = fields["text"]
    rest = {name: value for name, value in fields.items() if name != "text"}
    clash = [name for name in TIMING_FIELDS if rest.get(name) not in (None, "")]
    if clash:
        raise ScheduleValidationError(
            clash[0],
            f"text already says when the schedule runs; leave out {clash[0]} (or the text)",
            code="conflict",
        )
    parsed = parse_text(text, timezone=str(rest.get("timezone") or "UTC"))
    check_agrees(parsed, rest.get("timezone"), rest.get("window_policy"))
    return {**rest, **parsed.as_fields()}


def declared_text(
    text: object, given: dict[str, Any], timezone: str | None, window_policy: str | None
) -> ParsedText:
    """``@scheduled(text=...)``: the text read as the service reads it. ``given`` holds the
    decorator's other timing parameters; any of them set beside the text is refused."""
    clash = [name for name, value in given.items() if value is not None]
    if clash:
        raise ScheduleValidationError(
            clash[0],
            f"text= already says when the schedule runs; leave out {clash[0]}= (or text=)",
            code="several_rules",
        )
    if not isinstance(text, str) or not text.strip():
        raise ScheduleValidationError("text", f"expected a non-empty string, got {text!r}")
    parsed = parse_text(text.strip(), timezone=timezone or "UTC")
    check_agrees(parsed, timezone, window_policy)
    return parsed


def check_agrees(parsed: ParsedText, timezone: Any, window_policy: Any) -> None:
    """Refuse a zone or window policy given beside the text that the text contradicts."""
    if timezone not in (None, "") and str(timezone) != parsed.timezone:
        raise ScheduleValidationError(
            "timezone",
            f"the text says {parsed.timezone} but timezone is {timezone}; keep one of them",
            code="conflict",
        )
    if parsed.active_window and window_policy not in (None, "", parsed.window_policy):
        raise ScheduleValidationError(
            "window_policy",
            f"'between' in the text skips slots outside {parsed.active_window}; leave out "
            f"window_policy={window_policy!r} or the 'between' part",
            code="conflict",
        )


def with_rule_zone(fields: dict[str, Any]) -> dict[str, Any]:
    """An RRULE whose DTSTART line has a TZID sets the zone when none is given."""
    if fields.get("timezone") or str(fields.get("kind") or "") != "rrule":
        return fields
    zone = dtstart_zone(fields.get("rule"))  # type: ignore[arg-type]
    return {**fields, "timezone": zone} if zone else fields
