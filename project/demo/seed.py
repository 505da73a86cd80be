"""Example schedules for the demo (idempotent: schedules with a key are created once)."""

from __future__ import annotations

from datetime import timedelta

from project.demo.events import catalog_changed, lead_sent
from scheduler_app import services
from scheduler_app.clock import Clock, SystemClock
from scheduler_app.models import Schedule

DEMO_SCHEDULES = [
    {
        "key": "demo.every-10s",
        "name": "every 10 seconds",
        "task": "demo.ping",
        "kind": "interval",
        "rule": "10s",
        "kwargs": {"what": "interval"},
    },
    {
        "key": "demo.cron-kolkata",
        "name": "every minute, Asia/Kolkata",
        "task": "demo.ping",
        "kind": "cron",
        "rule": "* * * * *",
        "timezone": "Asia/Kolkata",
        "kwargs": {"what": "cron"},
    },
    {
        "key": "demo.fire-once",
        "name": "every 20 s, fire_once on misfire",
        "task": "demo.ping",
        "kind": "interval",
        "rule": "20s",
        "misfire_policy": "fire_once",
        "kwargs": {"what": "fire_once"},
    },
]


def seed(clock: Clock | None = None) -> list[Schedule]:
    clock = clock or SystemClock()
    created = []
    for definition in DEMO_SCHEDULES:
        if not Schedule.objects.filter(key=definition["key"]).exists():
            created.append(services.create_schedule(clock=clock, **definition))
    created.append(
        services.create_schedule(
            clock=clock,
            name="one-time, 30 s after start",
            task="demo.ping",
            kind="once",
            rule=clock.now() + timedelta(seconds=30),
            kwargs={"what": "once"},
        )
    )
    # Application events: a lead sent almost 7 days ago (its D+7 reminder fires in 40 s) and a
    # burst of catalog changes (one digest 20 s after the last one).
    now = clock.now()
    reminder = lead_sent(
        lead_id=42, sent_at=now - timedelta(days=7) + timedelta(seconds=40), clock=clock
    )
    if reminder is not None:
        created.append(reminder)
    for _ in range(3):
        digest = catalog_changed("catalog", quiet="20s", clock=clock)
    created.append(digest)
    return created
