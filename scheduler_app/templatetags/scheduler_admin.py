"""Template filters of the scheduler's admin pages: ``{{ value|instant }}`` writes an instant in
the admin's one format (seconds and zone; ``{{ value|instant:zone }}`` adds the local time)."""

from __future__ import annotations

from datetime import datetime

from django import template

from scheduler_app.admin.display import instant_text

register = template.Library()


@register.filter
def instant(value: datetime | None, zone_name: str = "UTC") -> str:
    return instant_text(value, zone_name or "UTC")
