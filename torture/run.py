"""``python -m torture``: run the scenarios, check every one, print one line each.

Each scenario gets a fresh database and broker, its own schedules (seeded), real beats and
workers, and its faults; then the beats stop, the last slots up to the end of the run are
materialized, the outbox and the reconciler drain what is left, and the checker compares
the outcome with the slots computed from the rules (``torture.checker``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from torture.ledger_figures import _dispatch_delays, _lateness, _outcomes, lateness_windows
from torture.scenarios import SCENARIOS, SOAK, Event, Scenario, plan_faults

REPO_ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Outcome:
    scenario: str
    line: str
    ok: bool
    figures: dict[str, Any]
    problems: list[str] = field(default_factory=list)


class Harness:
    def __init__(self, directory: Path, profile_name: str, seed: int) -> None:
        from torture.infra import Postgres, Redis

        self.directory = directory
        self.seed = seed
        self.profile_name = profile_name
        self.postgres = Postgres(directory / "pg")
        self.redis = Redis(directory / "redis")
        self.clock_file = directory / "clock-offset"
        self.proxy: Any = None
        self.procs: list[Any] = []
        self.max_offset = 0.0

    # --- servers and Django -------------------------------------------------------------

    def boot(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.postgres.init()
        self.redis.start()
        from torture.infra import Proxy

        self.proxy = Proxy(self.postgres.port)
        os.environ.update(
            DJANGO_SETTINGS_MODULE="torture.settings",
            DATABASE_URL=self.postgres.url,
            CELERY_BROKER_URL=self.redis.url,
            PROJECT_VAR_DIR=str(self.directory / "var"),
            TORTURE_CLOCK_FILE=str(self.clock_file),
        )
        self.clock_file.write_text("0.0")
        import django

        django.setup()
        import logging

        logging.getLogger("scheduler_app").setLevel(logging.WARNING)  # the harness's own
        from django.core.management import call_command
        from django.db import connection

        import torture.tasks  # noqa: F401  (registers the task; sets the workers' clock)
        from torture.tasks import SINK_TABLES

        call_command("migrate", verbosity=0)
        with connection.cursor() as cursor:
            cursor.execute(SINK_TABLES)

    def shutdown(self) -> None:
        for proc in self.procs:
            proc.stop(5)
        if self.proxy is not None:
            self.proxy.close()
        self.redis.kill()
        self.postgres.destroy()

    def reset(self, offset: float) -> None:
        import redis
        from django.db import connection

        connection.close()
        with connection.cursor() as cursor:
            cursor.execute(
                "TRUNCATE scheduler_app_occurrence, scheduler_app_scheduleversion, "
                "scheduler_app_schedule, scheduler_app_schedule_runtime, "
                "scheduler_app_schedulerlease, torture_effect, "
                "torture_execution CASCADE"
            )
        redis.Redis.from_url(self.redis.url).flushall()
        self.clock().set_offset(offset)

    def clock(self) -> Any:
        from torture.clock import OffsetClock

        return OffsetClock(self.clock_file)

    # --- one scenario -------------------------------------------------------------------

    def run(self, scenario: Scenario, profile: Any, *, soak: bool = False) -> Outcome:
        from torture.checker import check
        from torture.processes import Proc
        from torture.workload import create, generate

        rng = random.Random(f"{self.seed}:{scenario.name}")
        duration = profile.dst_seconds if scenario.dst else profile.scenario_seconds
        offset = 0.0
        if scenario.dst is not None:
            lead = 65.0
            offset = (scenario.dst - timedelta(seconds=lead) - datetime.now(UTC)).total_seconds()
        self.reset(offset)
        self.max_offset = offset
        clock = self.clock()
        run_dir = self.directory / scenario.name
        run_dir.mkdir(parents=True, exist_ok=True)
        beat_env = {"DATABASE_URL": self.postgres.url}
        if scenario.beats_via_proxy:
            beat_env["DATABASE_URL"] = self.postgres.url.replace(
                f":{self.postgres.port}/", f":{self.proxy.port}/"
            )
        self.procs = [
            Proc("worker", f"worker{i + 1}", {}, run_dir, concurrency=profile.concurrency)
            for i in range(profile.workers)
        ] + [Proc("beat", f"beat{i + 1}", beat_env, run_dir) for i in range(scenario.beats)]
        for proc in self.procs:
            proc.start()
        _wait(lambda: all(p.ready() for p in self.procs), 60, "beats and workers to start")
        # Schedules are created once everything runs, so start-up time is not lateness.
        start = clock.now()
        specs = generate(rng, profile, start, dst=scenario.dst is not None)
        if scenario.name == "clock_steps":
            for spec in specs:
                spec.catch_up_limit = 3
        create(specs, start)
        (run_dir / "specs.json").write_text(json.dumps([s.as_json() for s in specs], indent=1))
        events = plan_faults(rng, scenario, duration, soak=soak)
        faults: Counter[str] = Counter()
        started = time.monotonic()
        restarts: list[tuple[float, Any]] = []
        rss: dict[str, list[int]] = {}
        next_sample = 0.0
        while (elapsed := time.monotonic() - started) < duration:
            while events and events[0].at <= elapsed:
                event = events.pop(0)
                self.inject(event, rng, faults, restarts)
            for due, proc in [r for r in restarts if r[0] <= time.monotonic()]:
                restarts.remove((due, proc))
                proc.start()
            pending = {id(proc) for _, proc in restarts}
            for proc in self.procs:
                if not proc.alive() and id(proc) not in pending:
                    # It exited by itself: restart it, as a supervisor (systemd) would.
                    faults[f"{proc.kind}_exited"] += 1
                    proc.start()
            if elapsed >= next_sample:
                next_sample = elapsed + (30.0 if soak else 5.0)
                for proc in self.procs:
                    value = proc.rss()
                    if value:
                        rss.setdefault(proc.name, []).append(value)
            time.sleep(0.1)
        for _, proc in restarts:
            proc.start()
        # The end of the run: beats stop; what is due up to now is materialized once more by
        # the scheduler's own code, then workers and the reconciler finish the rest.
        for proc in self.procs:
            if proc.kind == "beat":
                proc.stop()
        # A clock stepped back leaves slots up to its furthest reading materialized.
        stepped_back = self.max_offset - clock.offset
        until = clock.now() + timedelta(seconds=stepped_back)
        # A delay set before the step back (a retry's backoff) now ends that much later.
        drained = self.drain(until, run_dir, timeout=180.0 + stepped_back)
        for proc in self.procs:
            proc.stop()
        verdict = check(
            scenario.name, specs, until, clock_steps="clock" in " ".join(scenario.faults)
        )
        verdict.faults = faults
        figures = {
            "description": scenario.description,
            "duration_s": duration,
            "schedules": len(specs),
            "drain_s": round(drained, 1),
            "lateness_s": _lateness(),
            **({"lateness_by_10min": lateness_windows(_dispatch_delays(), start)} if soak else {}),
            "outcomes": _outcomes(),
            "rss_mib": {
                name: [round(v / 2**20, 1) for v in values] for name, values in rss.items()
            },
            **{k: v for k, v in vars(verdict).items() if k not in ("problems", "faults")},
            "faults": dict(faults),
        }
        (run_dir / "verdict.json").write_text(
            json.dumps({**figures, "problems": verdict.problems[:200]}, indent=1, default=str)
        )
        return Outcome(scenario.name, verdict.line(), verdict.ok, figures, verdict.problems)

    def inject(
        self, event: Event, rng: random.Random, faults: Counter[str], restarts: list[Any]
    ) -> None:
        kind = event.fault
        if kind in ("kill_beat", "kill_worker"):
            wanted = "beat" if kind == "kill_beat" else "worker"
            alive = [p for p in self.procs if p.kind == wanted and p.alive()]
            if not alive:
                return
            victim = rng.choice(alive)
            victim.kill()
            restarts.append((time.monotonic() + event.pause, victim))
        elif kind == "restart_postgres":
            self.postgres.restart(event.pause)
        elif kind == "restart_redis":
            self.redis.restart(event.pause)
        elif kind == "cut_network":
            self.proxy.cut(event.pause)
        elif kind == "clock_forward":
            clock = self.clock()
            clock.set_offset(clock.offset + 2 * 3600)
        elif kind == "clock_back":
            clock = self.clock()
            clock.set_offset(clock.offset - 300)
        elif kind == "clock_small":
            clock = self.clock()
            clock.set_offset(clock.offset + rng.choice([60.0, -20.0]))
        faults[kind] += 1
        self.max_offset = max(self.max_offset, self.clock().offset)

    def drain(self, until: datetime, run_dir: Path, timeout: float = 180.0) -> float:
        """Materialize every slot <= ``until`` (the beats are stopped), then run the outbox and
        the reconciler until no occurrence is left unfinished."""
        from django.db import connection

        from project.celery import app
        from scheduler_app.clock import FakeClock
        from scheduler_app.conf import get_settings
        from scheduler_app.models import OPEN_STATES, Occurrence
        from scheduler_app.publishing import CeleryPublisher
        from scheduler_app.ticker import Ticker

        connection.close()
        started = time.monotonic()
        publisher = CeleryPublisher(app, clock=self.clock())
        final = Ticker(publisher, clock=FakeClock(until), owner="torture-final")
        while final.tick().created:
            pass
        settings = get_settings()
        closer = Ticker(publisher, clock=self.clock(), owner="torture-drain", settings=settings)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for proc in self.procs:
                if proc.kind == "worker":
                    proc.start()  # a worker killed at the very end
            closer._reconcile.next = datetime.min.replace(tzinfo=UTC)  # reconcile every pass
            closer.maybe_reconcile(self.clock().now())
            closer.dispatch(self.clock().now())
            if not Occurrence.objects.filter(state__in=OPEN_STATES).exists():
                break
            time.sleep(1.0)
        (run_dir / "drain.txt").write_text(f"{time.monotonic() - started:.1f}\n")
        return time.monotonic() - started


def _interrupted(signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _wait(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise SystemExit(f"torture: timed out after {timeout:.0f} s waiting for {what}")


def main(argv: list[str] | None = None) -> int:
    from torture.workload import PROFILES

    parser = argparse.ArgumentParser(prog="python -m torture", description=__doc__)
    parser.add_argument("--profile", choices=sorted(PROFILES), default="ci")
    parser.add_argument("--scenarios", default="all", help="comma-separated names, or all")
    parser.add_argument("--seed", type=int, default=None, help="default: random, printed")
    parser.add_argument("--dir", default=str(REPO_ROOT / "var" / "torture"))
    parser.add_argument("--write", action="store_true", help="rewrite docs/reliability.md")
    parser.add_argument("--seconds", type=float, default=None, help="override scenario length")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 10**6)
    profile = PROFILES[args.profile]
    if args.seconds:
        from dataclasses import replace

        profile = replace(profile, scenario_seconds=args.seconds)
    soak = args.profile == "soak"
    chosen = [SOAK] if soak else SCENARIOS
    if args.scenarios != "all":
        names = set(args.scenarios.split(","))
        unknown = names - {s.name for s in [*SCENARIOS, SOAK]}
        if unknown:
            parser.error(f"unknown scenario(s): {', '.join(sorted(unknown))}")
        chosen = [s for s in [*SCENARIOS, SOAK] if s.name in names]
    print(f"torture: profile {profile.name}, seed {seed} (rerun with --seed {seed})", flush=True)
    harness = Harness(Path(args.dir), profile.name, seed)
    outcomes: list[Outcome] = []
    started = time.monotonic()
    # SIGTERM (a CI timeout, `kill`) unwinds like Ctrl-C, so the servers and processes the
    # harness started are stopped too (by default Python dies without running ``finally``).
    signal.signal(signal.SIGTERM, _interrupted)
    try:
        harness.boot()
        for scenario in chosen:
            outcome = harness.run(scenario, profile, soak=scenario is SOAK)
            outcomes.append(outcome)
            print(outcome.line, flush=True)
            for problem in outcome.problems[:10]:
                print(f"    {problem}", flush=True)
    finally:
        harness.shutdown()
    elapsed = time.monotonic() - started
    from torture.report import write

    write(outcomes, profile, seed, elapsed, docs=args.write, argv=sys.argv[1:])
    failed = [o.scenario for o in outcomes if not o.ok]
    print(
        f"torture: {len(outcomes) - len(failed)}/{len(outcomes)} scenarios passed in "
        f"{elapsed:.0f} s (seed {seed}); logs in {args.dir}",
        flush=True,
    )
    return 1 if failed else 0
