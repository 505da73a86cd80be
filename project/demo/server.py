"""The demo's admin: a superuser made for this run and Django's development server."""

from __future__ import annotations

import secrets
import socket
import subprocess
import sys
from pathlib import Path
from typing import IO

from django.contrib.auth import get_user_model

DEMO_USER = "demo"
PREFERRED_PORT = 8000


def demo_login() -> tuple[str, str]:
    """A superuser ``demo`` with a new random password (the demo's database is new each run;
    the server listens on 127.0.0.1 only)."""
    password = secrets.token_urlsafe(9)
    user, _ = get_user_model().objects.get_or_create(
        username=DEMO_USER, defaults={"is_staff": True, "is_superuser": True}
    )
    user.is_staff = user.is_superuser = True
    user.set_password(password)
    user.save()
    return DEMO_USER, password


def free_port(preferred: int = PREFERRED_PORT) -> int:
    """``preferred`` when nothing listens there, else any free port."""
    for port in (preferred, 0):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return int(sock.getsockname()[1])
    raise OSError("no free TCP port on 127.0.0.1")


def start_server(root: Path, port: int, log: IO[bytes]) -> subprocess.Popen[bytes]:
    """``runserver`` in its own session (the demo stops it, once). ``--insecure`` serves the
    admin's CSS with DEBUG off; ``--noreload`` keeps it one process."""
    command = [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}"]
    return subprocess.Popen(
        [*command, "--noreload", "--insecure"],
        cwd=root,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
