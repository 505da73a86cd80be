"""django.tasks pings end to end: a schedule with a ``ping_url`` runs under a real
``manage.py run_scheduler`` and django-tasks-db's own ``manage.py db_worker`` (the Celery-free
example project), and the worker process pings ``/start`` then the success from its
background threads."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from tests.acceptance.test_djtasks_processes import MANAGE, database
from tests.integration.observability_support import PingServer, ping_server

__all__ = ["database", "ping_server"]  # fixtures

CREATE = """
from scheduler_app.services import create_schedule
create_schedule(task="taskproject.tasks.heartbeat", kind="interval", rule="10",
                ping_url="{url}/p")
"""


def test_db_worker_pings_start_then_success(
    tmp_path: Path, database: str, ping_server: PingServer
) -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "taskproject.settings",
        "PROJECT_VAR_DIR": str(tmp_path),
        "DATABASE_URL": database,
        "PYTHONPATH": str(Path(MANAGE[1]).parent),
        "SCHEDULER_PING_ALLOWED_HOSTS": "127.0.0.1",
    }
    env.pop("CELERY_BROKER_URL", None)
    subprocess.run([*MANAGE, "migrate", "-v0"], env=env, check=True, cwd=tmp_path)
    create = CREATE.format(url=ping_server.url)
    subprocess.run([*MANAGE, "shell", "-c", create], env=env, check=True, cwd=tmp_path)
    log = open(tmp_path / "processes.log", "w")  # noqa: SIM115
    commands = [
        [*MANAGE, "run_scheduler", "--owner", "s1"],
        [*MANAGE, "db_worker", "--interval", "0.2", "--no-startup-delay", "--no-reload"],
    ]
    processes = [
        subprocess.Popen(command, env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
        for command in commands
    ]
    try:
        deadline = time.monotonic() + 60
        while "/p" not in ping_server.paths and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
        codes = [process.wait(timeout=30) for process in processes]
        log.close()
    output = (tmp_path / "processes.log").read_text()
    assert codes == [0, 0], output
    paths = list(ping_server.paths)
    assert "/p" in paths, (paths, output)
    assert "/p/fail" not in paths
    first_success = paths.index("/p")
    assert paths[:first_success] == ["/p/start"]  # /start arrives before its success
