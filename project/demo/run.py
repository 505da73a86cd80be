"""``make demo``: migrate, seed, run beat, a worker and the admin, show occurrences as they
happen (the table is redrawn in place on a terminal).

Uses SQLite and kombu's filesystem transport unless DATABASE_URL / CELERY_BROKER_URL say
otherwise; state lives in ``var/`` (or ``$PROJECT_VAR_DIR``). The admin is served on
127.0.0.1:8000 (or a free port) with a login made for this run, printed at start. One Ctrl-C
(or SIGTERM) stops every process. ``--duration N`` stops after N seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parents[2]
STOP_TIMEOUT = 20.0


def var_dir() -> Path:
    """Where the demo keeps its files: the same place as the project settings' VAR_DIR."""
    return Path(os.environ.get("PROJECT_VAR_DIR", ROOT / "var"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration", type=float, default=None, help="stop after N seconds")
    args = parser.parse_args(argv)
    # Ctrl-C works even when started with SIGINT ignored (e.g. as a background job), and
    # SIGTERM (a supervisor, a test timeout) stops the demo like Ctrl-C does.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    fresh_state()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    import django

    django.setup()
    from django.core.management import call_command

    from project.demo.seed import seed
    from project.demo.server import demo_login, free_port

    call_command("migrate", verbosity=0)
    seed()
    login = demo_login()
    processes: list[subprocess.Popen[bytes]] = []
    server: subprocess.Popen[bytes] | None = None
    try:
        processes = start_processes()
        server = start_admin(free_port(), login)
        watch(args.duration)
    except KeyboardInterrupt:
        print("\nstopping...", flush=True)
    finally:
        stop_admin(server)
        stop_processes(processes)
    return 0


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def fresh_state() -> None:
    """Each demo starts from an empty SQLite file and an empty broker folder."""
    var = var_dir()
    var.mkdir(parents=True, exist_ok=True)
    if "DATABASE_URL" not in os.environ:
        database = var / "demo.sqlite3"
        for suffix in ("", "-journal", "-wal", "-shm"):
            Path(f"{database}{suffix}").unlink(missing_ok=True)
        os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    if "CELERY_BROKER_URL" not in os.environ:
        shutil.rmtree(var / "broker", ignore_errors=True)
    (var / "beat.pid").unlink(missing_ok=True)


def start_processes() -> list[subprocess.Popen[bytes]]:
    """Worker and beat, each in its own session: a terminal's Ctrl-C reaches only this
    process, which then stops them once, in order (no double signals mid-shutdown)."""
    celery = [sys.executable, "-m", "celery", "-A", "project"]
    var = var_dir()
    worker = celery + ["worker", "--pool=solo", "--loglevel=WARNING", "--without-gossip"]
    beat = celery + [
        "beat",
        "--scheduler=scheduler_app.beat:DurableScheduler",
        "--loglevel=WARNING",
        f"--pidfile={var / 'beat.pid'}",
        f"--schedule={var / 'celerybeat-schedule'}",
    ]
    log_path = var / "demo-processes.log"
    processes = []
    with log_path.open("ab") as log:  # the children keep their own copies of the descriptor
        for name, cmd in (("worker", worker), ("beat", beat)):
            process = subprocess.Popen(
                cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
            processes.append(process)
            print(f"started {name} (pid {process.pid}); its log: {log_path}", flush=True)
    return processes


def start_admin(port: int, login: tuple[str, str]) -> subprocess.Popen[bytes]:
    from project.demo.server import start_server

    with (var_dir() / "demo-admin.log").open("ab") as log:
        server = start_server(ROOT, port, log)
    user, password = login
    print(f"started admin (pid {server.pid}); its log: {var_dir() / 'demo-admin.log'}")
    print(f"admin: http://127.0.0.1:{port}/admin/  login: {user} / {password}", flush=True)
    return server


def stop_admin(server: subprocess.Popen[bytes] | None) -> None:
    """SIGINT, as runserver expects (it exits 0 on it), then SIGKILL if it lingers."""
    if server is None:
        return
    if server.poll() is None:
        server.send_signal(signal.SIGINT)
    try:
        server.wait(timeout=STOP_TIMEOUT)
    except (subprocess.TimeoutExpired, KeyboardInterrupt):
        server.kill()
        server.wait()
    print(f"admin stopped (exit code {server.returncode})", flush=True)


def stop_processes(processes: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM (warm shutdown) to each, wait, then SIGKILL what is left; a second Ctrl-C
    while waiting skips to the kill."""
    if not processes:
        return
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    try:
        deadline = time.monotonic() + STOP_TIMEOUT
        for process in processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(deadline - time.monotonic(), 0.1))
    except KeyboardInterrupt:
        pass
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    codes = ", ".join(str(process.returncode) for process in processes)
    print(f"beat and worker stopped (exit codes {codes})", flush=True)


def watch(duration: float | None) -> None:
    from project.demo.screen import LiveTable
    from project.demo.table import render

    table = LiveTable(sys.stdout)
    started = time.monotonic()
    while duration is None or time.monotonic() - started < duration:
        table.show(f"occurrences at {time.strftime('%H:%M:%S')} (Ctrl-C stops)\n{render()}")
        time.sleep(
            3 if duration is None else min(3, max(duration - (time.monotonic() - started), 0))
        )


if __name__ == "__main__":
    sys.exit(main())
