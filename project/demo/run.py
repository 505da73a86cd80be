"""``make demo``: migrate, seed, run beat and a worker, show occurrences as they happen.

Uses SQLite and kombu's filesystem transport unless DATABASE_URL / CELERY_BROKER_URL say
otherwise. Ctrl-C stops both processes. ``--duration N`` stops after N seconds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration", type=float, default=None, help="stop after N seconds")
    args = parser.parse_args(argv)
    fresh_state()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from project.demo.seed import seed

    call_command("migrate", verbosity=0)
    seed()
    processes = start_processes()
    try:
        watch(args.duration)
    except KeyboardInterrupt:
        print("\nstopping...")
    finally:
        stop_processes(processes)
    return 0


def fresh_state() -> None:
    """Each demo starts from an empty SQLite file and an empty broker folder."""
    var = ROOT / "var"
    if "DATABASE_URL" not in os.environ:
        database = var / "demo.sqlite3"
        database.unlink(missing_ok=True)
        os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    if "CELERY_BROKER_URL" not in os.environ:
        shutil.rmtree(var / "broker", ignore_errors=True)


def start_processes() -> list[subprocess.Popen[bytes]]:
    celery = [sys.executable, "-m", "celery", "-A", "project"]
    var = ROOT / "var"
    worker = celery + ["worker", "--pool=solo", "--loglevel=WARNING", "--without-gossip"]
    beat = celery + [
        "beat",
        "--scheduler=scheduler_app.beat:DurableScheduler",
        "--loglevel=WARNING",
        f"--pidfile={var / 'beat.pid'}",
        f"--schedule={var / 'celerybeat-schedule'}",
    ]
    log = open(var / "demo-processes.log", "ab")  # noqa: SIM115 - kept open for the children
    return [
        subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        for cmd in (worker, beat)
    ]


def stop_processes(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
    print("beat and worker stopped")


def watch(duration: float | None) -> None:
    from project.demo.table import render

    started = time.monotonic()
    while duration is None or time.monotonic() - started < duration:
        print(render(), flush=True)
        time.sleep(3)


if __name__ == "__main__":
    sys.exit(main())
