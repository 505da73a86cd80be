"""Application events that create one-time runs: how a real project would call the API."""

from __future__ import annotations

from datetime import datetime

from scheduler_app import api
from scheduler_app.clock import Clock
from scheduler_app.models import Schedule


def lead_sent(lead_id: int, sent_at: datetime, clock: Clock | None = None) -> Schedule | None:
    """Remind the salesperson 7 days after a lead was sent (at most once per lead)."""
    return api.run_after(
        "demo.lead_reminder",
        event_at=sent_at,
        delay="7d",
        key=f"lead:{lead_id}:d7",
        kwargs={"lead_id": lead_id},
        if_past="run_now",
        clock=clock,
    )


def catalog_changed(topic: str, quiet: str = "10m", clock: Clock | None = None) -> Schedule:
    """Send one digest ``quiet`` after the last change to ``topic``."""
    return api.debounce(
        "demo.digest", key=f"digest:{topic}", quiet=quiet, kwargs={"topic": topic}, clock=clock
    )
