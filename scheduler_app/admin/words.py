"""The builder's "describe it in words" field: English text read by the same parser as the
API (``timing.phrases``), turned into the builder's own fields so the page shows (and saves)
the structured rule. The text itself is never stored."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from scheduler_app.admin.builder import format_times, from_rule
from scheduler_app.timing.phrases import ParsedText

WORDS_HELP = (
    "e.g. “every weekday at 9:00 in Europe/Riga”, “on the last day of the month at 18:00”, "
    "“every 15 minutes between 8:00 and 18:00”. It fills the fields below; only the rule is saved."
)


def timing_values(parsed: ParsedText) -> dict[str, Any]:
    """The form's timing values for a parsed text (what ``clean`` stores)."""
    return {
        "kind": parsed.kind,
        "rule": parsed.rule,
        "timezone": parsed.timezone,
        "anchor": parsed.anchor,
        "active_window": parsed.active_window,
        "window_policy": parsed.window_policy or "defer",
    }


def builder_fill(parsed: ParsedText) -> dict[str, Any]:
    """The form inputs (by name) the page sets from the text: the builder's choices when it
    can express the rule, else the advanced mode with the raw kind and rule."""
    spec = from_rule(parsed.kind, parsed.rule)
    fill: dict[str, Any]
    if spec is None:
        fill = {"repeat": "advanced", "kind": parsed.kind, "rule": parsed.rule}
    else:
        fill = {
            "repeat": spec.repeat,
            "every": spec.every,
            "at_times": format_times(spec.at_times) if spec.at_times else None,
            "weekdays": list(spec.weekdays),
            "monthly_on": spec.monthly_on,
            "month_day": spec.month_day,
            "nth": spec.nth,
            "nth_weekday": spec.nth_weekday or None,
            "once_at": spec.once_at.strftime("%Y-%m-%dT%H:%M") if spec.once_at else None,
            "kind": parsed.kind,
            "rule": parsed.rule,
        }
    fill.update(
        timezone=parsed.timezone,
        active_window=parsed.active_window,
        window_policy=parsed.window_policy or "defer",
    )
    if parsed.anchor is not None:
        shown = timezone.localtime(parsed.anchor)  # the admin's date/time inputs use this zone
        fill.update(anchor_0=f"{shown:%Y-%m-%d}", anchor_1=f"{shown:%H:%M:%S}")
    return {name: value for name, value in fill.items() if value is not None}
