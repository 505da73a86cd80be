"""Event deliveries to a local receiver, one delivery process (part of ``make bench``).

    DJANGO_SETTINGS_MODULE=bench.settings DATABASE_URL=... \\
        python -m bench.events [--size 500] [--repeats 3] [--concurrency 16,64]

``size`` interval schedules of an event type, due at once; per repeat, a fake clock steps one
interval, one ``DeliveryLoop`` with ``--beat`` semantics materializes the slots, hands them off
and delivers them to a receiver on 127.0.0.1 (a ``ThreadingHTTPServer`` on threads of the same
process, that verifies every Standard Webhooks signature and answers 204). Measured: from the
loop's first round until every occurrence of the repeat has succeeded. Also with a receiver
that takes 50 ms per request (``--latency``), where the concurrency is what counts. Writes
``bench/results/events.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import override_settings  # noqa: E402
from standardwebhooks.webhooks import Webhook  # noqa: E402

from scheduler_app.clock import FakeClock  # noqa: E402
from scheduler_app.models import Occurrence, OccurrenceState, Schedule  # noqa: E402
from scheduler_app.services import create_schedule  # noqa: E402
from scheduler_app.webhooks.loop import DeliveryLoop  # noqa: E402

T0 = datetime(2026, 6, 1, 0, 0, tzinfo=UTC)
INTERVAL = 3600
SECRET = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
RESULTS = Path(__file__).resolve().parent / "results" / "events.json"


@contextmanager
def receiver(latency: float) -> Iterator[tuple[str, Any, Any]]:
    """The receiver, on threads of this process (its CPU is counted in the figures: a
    receiver in a process of its own timed out under this machine's two cores)."""
    webhook = Webhook(SECRET)
    received, bad = [0], [0]
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            try:
                webhook.verify(body, {k.lower(): v for k, v in self.headers.items()})
                ok = True
            except Exception:
                ok = False
            if latency:
                time.sleep(latency)
            with lock:
                (received if ok else bad)[0] += 1
            self.send_response(204 if ok else 401)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    class Server(ThreadingHTTPServer):
        request_queue_size = 256  # every delivery in flight connects at once
        daemon_threads = True

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hooks", received, bad
    finally:
        server.shutdown()
        server.server_close()


def reset() -> None:
    Occurrence.objects.filter(schedule__key__startswith="eventbench-").delete()
    Schedule.objects.filter(key__startswith="eventbench-").delete()


def create(size: int) -> None:
    clock = FakeClock(T0 - timedelta(seconds=INTERVAL))
    for n in range(size):
        create_schedule(
            clock=clock,
            task="event:bench.tick",
            kind="interval",
            rule=str(INTERVAL),
            anchor=T0,
            key=f"eventbench-{n}",
            overlap_policy="allow",
            kwargs={"n": n},
            options={"endpoint": "bench"},
        )


def burst(size: int, repeat: int) -> float:
    clock = FakeClock(T0 + timedelta(seconds=INTERVAL * repeat))
    loop = DeliveryLoop(clock=clock, beat=True, owner=f"bench-{repeat}")
    started = time.perf_counter()
    expected = size * (repeat + 1)
    done = Occurrence.objects.filter(
        schedule__key__startswith="eventbench-", state=OccurrenceState.SUCCEEDED
    )
    try:
        while done.count() < expected:
            loop.step(wait=0.05)
            if time.perf_counter() - started > 120:  # a retry waits for a clock that stands
                states = Occurrence.objects.exclude(state=OccurrenceState.SUCCEEDED)
                raise SystemExit(f"stuck: {list(states.values_list('state', 'last_error'))}")
    finally:
        loop.drain()
        loop.pool.shutdown()
        if loop.ticker is not None:
            loop.ticker.release_lease()
    return time.perf_counter() - started


def run(size: int, repeats: int, concurrency: int, latency: float) -> dict[str, Any]:
    reset()
    with receiver(latency) as (url, received, bad):
        endpoint = {"url": url, "secrets": [SECRET], "concurrency": concurrency}
        with override_settings(
            SCHEDULER_EVENT_ENDPOINTS={"bench": endpoint},
            SCHEDULER_EVENT_ALLOWED_HOSTS=("127.0.0.1",),
            SCHEDULER_EVENT_CONCURRENCY=concurrency,
            SCHEDULER_EVENT_TENANT_CONCURRENCY=concurrency,
        ):
            create(size)
            samples = [burst(size, repeat) for repeat in range(repeats)]
    if bad[0] or received[0] != size * repeats:
        raise SystemExit(f"receiver: {received[0]} verified, {bad[0]} refused")
    median = statistics.median(samples)
    return {
        "concurrency": concurrency,
        "receiver_latency_s": latency,
        "samples_s": [round(sample, 3) for sample in samples],
        "median_s": round(median, 3),
        "per_second": round(size / median),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--concurrency", default="16,64")
    parser.add_argument("--latency", type=float, default=0.05)
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    logging.getLogger("scheduler_app").setLevel(logging.WARNING)  # a line per event costs
    figures = []
    for latency in (0.0, args.latency):
        for concurrency in (int(c) for c in args.concurrency.split(",")):
            figure = run(args.size, args.repeats, concurrency, latency)
            figures.append(figure)
            print(
                f"{args.size:,} events, concurrency {concurrency}, receiver "
                f"{latency * 1000:.0f} ms: median {figure['median_s']} s "
                f"({figure['per_second']:,}/s)",
                flush=True,
            )
    reset()
    payload = {
        "size": args.size,
        "repeats": args.repeats,
        "database": connection.vendor,
        "runs": figures,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(payload, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
