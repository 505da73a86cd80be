"""The torture scenarios (``python -m torture --scenarios ...``) and the fault plan of a run:
which faults each injects, when, and for how long."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime

SPRING = datetime(2027, 3, 28, 1, 0, tzinfo=UTC)  # the EU zones spring forward
FALL = datetime(2027, 10, 31, 1, 0, tzinfo=UTC)  # and fall back, at 01:00 UTC


@dataclass(frozen=True)
class Scenario:
    name: str
    faults: tuple[str, ...] = ()
    beats: int = 3
    dst: datetime | None = None
    beats_via_proxy: bool = False
    description: str = ""


SCENARIOS = [
    Scenario("three_beats", (), description="3 beats racing for the whole run, no fault"),
    Scenario("kill_beats", ("kill_beat",), description="kill -9 a random beat every 3-6 s"),
    Scenario("kill_workers", ("kill_worker",), description="kill -9 a worker mid-task, 5-9 s"),
    Scenario("postgres_restart", ("restart_postgres",), description="PostgreSQL down 1-3 s, 2x"),
    Scenario("redis_restart", ("restart_redis",), description="Redis down 1-3 s, 2x, data lost"),
    Scenario("clock_steps", ("clock_forward", "clock_back"), description="+2 h, then -5 min"),
    Scenario(
        "network_cut",
        ("cut_network",),
        beats_via_proxy=True,
        description="beat-database connections cut for 2-5 s, 2x",
    ),
    Scenario("dst_spring", (), dst=SPRING, description="across the EU spring-forward"),
    Scenario("dst_fall", (), dst=FALL, description="across the EU fall-back"),
    Scenario(
        "mixed",
        (
            "kill_beat",
            "kill_worker",
            "restart_postgres",
            "restart_redis",
            "cut_network",
            "clock_small",
        ),
        beats_via_proxy=True,
        description="all of the above at random (clock steps +60 s / -20 s)",
    ),
]
SOAK = Scenario(
    "soak",
    ("kill_beat", "kill_worker", "restart_postgres", "restart_redis", "cut_network"),
    beats_via_proxy=True,
    description="one hour, steady load, a fault about every minute",
)


@dataclass
class Event:
    at: float
    fault: str
    pause: float


def plan_faults(
    rng: random.Random, scenario: Scenario, duration: float, *, soak: bool = False
) -> list[Event]:
    """The fault schedule of a run: offsets in seconds from the start, with pauses."""
    events: list[Event] = []
    if not scenario.faults:
        return events
    if scenario.name == "clock_steps":
        return [Event(duration * 0.3, "clock_forward", 0), Event(duration * 0.6, "clock_back", 0)]
    if len(scenario.faults) == 1 and not soak:
        fault = scenario.faults[0]
        if fault in ("restart_postgres", "restart_redis", "cut_network"):
            return [
                Event(duration * share, fault, rng.uniform(1, 3) if fault != "cut_network"
                      else rng.uniform(2, 5))
                for share in (0.3, 0.65)
            ]  # fmt: skip
        gap = (3, 6) if fault == "kill_beat" else (5, 9)
        at = rng.uniform(*gap)
        while at < duration - 3:
            events.append(Event(at, fault, rng.uniform(0.5, 3)))
            at += rng.uniform(*gap)
        return events
    gap = (40.0, 80.0) if soak else (2.5, 5.0)
    at = rng.uniform(*gap)
    while at < duration - 4:
        events.append(Event(at, rng.choice(scenario.faults), rng.uniform(0.5, 3)))
        at += rng.uniform(*gap)
    return events
