"""``schedule_preview --text``: the English text becomes the rule options it means (one of
``--cron/--rrule/--every/--at`` with ``--tz``, ``--anchor`` and ``--window``), so the preview
shows exactly the structured rule that would be stored. Without ``--text`` the zone defaults to
the TZID of a DTSTART line in ``--rrule``, else UTC."""

from __future__ import annotations

from typing import Any

from scheduler_app.definition.text import check_agrees
from scheduler_app.timing.content_lines import dtstart_zone
from scheduler_app.timing.phrases import ParsedText, parse_text

OPTION_OF_KIND = {"cron": "cron", "rrule": "rrule", "interval": "every", "once": "at"}


def text_options(options: dict[str, Any]) -> ParsedText | None:
    """Rewrite ``options`` in place from ``--text``; the parsed rule, or None without it."""
    text = options.get("text")
    if text is None:
        options["tz"] = options.get("tz") or dtstart_zone(options.get("rrule") or "") or "UTC"
        return None
    for option in ("anchor", "window"):
        if options.get(option):
            raise ValueError(f"--{option}: --text already says it; leave out --{option}")
    parsed = parse_text(text, timezone=options.get("tz") or "UTC")
    check_agrees(parsed, options.get("tz"), None)
    options.update(
        text=None,
        tz=parsed.timezone,
        anchor=parsed.anchor.isoformat() if parsed.anchor is not None else None,
        window=parsed.active_window or None,
        window_policy=parsed.window_policy or options.get("window_policy") or "defer",
    )
    rule = parsed.rule if parsed.kind != "interval" else f"{parsed.rule}s"
    options[OPTION_OF_KIND[parsed.kind]] = rule
    return parsed


def parsed_text(parsed: ParsedText) -> str:
    """One line for the table: the structured rule the text means."""
    line = f"Rule: {parsed.kind} {parsed.rule!r}"
    if parsed.anchor is not None:
        line += f", anchor {parsed.anchor.isoformat()}"
    if parsed.active_window:
        line += f", window {parsed.active_window!r} ({parsed.window_policy} outside)"
    return line
