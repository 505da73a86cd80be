"""The schedules of a scenario: every rule kind, fast cadences, mixed policies, seeded.

Each ``Spec`` is the rule as the harness wrote it; the checker derives the intended slots
from the specs alone (``torture.checker``), never from the scheduler's tables.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

TASK = "torture.effect"
STEADY_ZONES = ("UTC", "Asia/Kolkata", "America/New_York", "Australia/Sydney", "Asia/Tokyo")
DST_ZONES = ("Europe/Paris", "Europe/London", "Europe/Helsinki", "Europe/Berlin")


@dataclass
class Spec:
    kind: str
    rule: str
    timezone: str
    starts_at: datetime
    anchor: datetime | None = None
    misfire_policy: str = "catch_up"
    overlap_policy: str = "skip"
    dst_ambiguous: str = "first"
    deadline: int | None = None
    interval_mode: str = "fixed_rate"
    catch_up_limit: int = 1_000  # the documented maximum (limits.NUMBER_LIMITS)
    work: float = 0.1
    schedule_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def fields(self) -> dict[str, Any]:
        values: dict[str, Any] = {
            "task": TASK,
            "kind": self.kind,
            "rule": self.rule,
            "timezone": self.timezone,
            "starts_at": self.starts_at,
            "misfire_policy": self.misfire_policy,
            "overlap_policy": self.overlap_policy,
            "dst_nonexistent": "skip",
            "dst_ambiguous": self.dst_ambiguous,
            "kwargs": {"work": self.work},
            # Catch-up wide enough that a few seconds of downtime never drops a slot;
            # retries fast and many, so a run killed several times still ends.
            "max_lateness": 30,
            "catch_up_window": 3600,
            "catch_up_limit": self.catch_up_limit,
            "max_attempts": 25,
            "retry_delay": 1,
        }
        if self.anchor is not None:
            values["anchor"] = self.anchor
        if self.deadline is not None:
            values["deadline"] = self.deadline
        if self.interval_mode != "fixed_rate":
            values["interval_mode"] = self.interval_mode
        return values

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        for name in ("starts_at", "anchor"):
            if data[name] is not None:
                data[name] = data[name].isoformat()
        return data


@dataclass(frozen=True)
class Profile:
    name: str
    schedules: int
    scenario_seconds: float
    dst_seconds: float
    interval_range: tuple[int, int]
    work_range: tuple[float, float]
    workers: int
    concurrency: int


PROFILES = {
    "ci": Profile("ci", 200, 40.0, 130.0, (2, 12), (0.02, 0.6), 2, 8),
    # A few thousand schedules at ~25 slots/s: what 2 CPUs carry (5-60 s: 86 slots/s).
    "long": Profile("long", 3000, 180.0, 150.0, (30, 300), (0.01, 0.3), 2, 24),
    # ~21 slots/s (~76,000 in the hour): what 3 beats and 2 workers sustain on 2 CPUs with
    # faults every minute; 1,500 schedules (46 slots/s) outran the workers there.
    "soak": Profile("soak", 700, 3600.0, 150.0, (5, 60), (0.01, 0.3), 2, 16),
}


def generate(
    rng: random.Random, profile: Profile, start: datetime, *, dst: bool = False
) -> list[Spec]:
    """Schedules of every kind whose first slot is after ``start`` (the harness clock)."""
    starts_at = (start + timedelta(seconds=2)).replace(microsecond=0)
    low, high = profile.interval_range
    specs: list[Spec] = []
    for index in range(profile.schedules):
        roll = rng.random()
        misfire = rng.choices(["catch_up", "fire_once", "skip"], [70, 15, 15])[0]
        overlap = rng.choices(["skip", "allow", "buffer_one", "buffer_all"], [55, 20, 15, 10])[0]
        work = round(rng.uniform(*profile.work_range), 3)
        every = rng.randint(low, high)
        anchor = starts_at + timedelta(seconds=1 + rng.randint(0, every))
        zones = DST_ZONES if dst else STEADY_ZONES
        if roll < 0.34:
            spec = Spec("interval", f"{every}s", rng.choice(zones), starts_at, anchor=anchor)
        elif roll < 0.40:
            # The next slot is the previous completion + every: checked as a chain.
            spec = Spec(
                "interval", f"{every}s", rng.choice(zones), starts_at, anchor=anchor,
                interval_mode="fixed_delay",
            )  # fmt: skip
        elif roll < 0.50:
            spec = Spec(
                "interval", f"{every}s", rng.choice(zones), starts_at, anchor=anchor,
                deadline=rng.choice([2, 5, 30]),
            )  # fmt: skip
        elif roll < 0.72:
            minute = rng.choice(["*", "*/2", "*/3"]) if not dst else rng.choice(["*", "*/2"])
            hour = "*"
            if dst and rng.random() < 0.5:
                hour = "0-4"  # only the night hours around the change
            spec = Spec("cron", f"{minute} {hour} * * *", rng.choice(zones), starts_at)
            spec.dst_ambiguous = rng.choice(["first", "last", "both"])
        elif roll < 0.86:
            zone = rng.choice(("UTC", "Asia/Kolkata"))  # fixed offsets: see checker.py
            if rng.random() < 0.5:
                rule = f"FREQ=SECONDLY;INTERVAL={every}"
            else:
                rule = f"FREQ=MINUTELY;INTERVAL={rng.choice([1, 2])}"
            spec = Spec("rrule", rule, zone, starts_at, anchor=anchor)
        else:
            seconds = rng.uniform(3, max(4.0, profile.scenario_seconds - 3))
            at = (starts_at + timedelta(seconds=seconds)).replace(microsecond=0)
            spec = Spec("once", at.isoformat(), rng.choice(zones), starts_at)
        spec.misfire_policy = misfire
        spec.overlap_policy = overlap
        spec.work = work
        spec.extra["index"] = index
        specs.append(spec)
    return specs


def create(specs: list[Spec], start: datetime) -> None:
    """Store the specs through the public service layer (validation included), all as of
    ``start``: however long creating them takes, each one's first slot is its first slot
    after ``start``, as the checker assumes."""
    from scheduler_app.clock import FakeClock
    from scheduler_app.services import create_schedule  # needs Django set up

    clock = FakeClock(start)
    for spec in specs:
        name = f"torture-{spec.extra['index']}"
        schedule = create_schedule(clock=clock, name=name, **spec.fields())
        spec.schedule_id = str(schedule.id)
