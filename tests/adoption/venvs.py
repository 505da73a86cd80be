"""A new user's virtualenv, shell and PostgreSQL database: what every fresh-venv test starts from.

Shared by the install page's test (test_fresh_venv.py) and the docs runner
(test_docs_as_written.py); the wheel itself comes from the ``checkout`` fixture (conftest.py).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from tests.adoption.install_page import REPO, Project, superuser_env
from tests.adoption.interpreters import find_python

PG_URL = os.environ.get("PG_URL", "postgres://postgres@127.0.0.1:5432/test")


def clean_environment(venv: Path, broker: str) -> dict[str, str]:
    """The user's shell: the venv first on PATH, nothing of this repository's settings."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DJANGO_SETTINGS_MODULE", "PYTHONPATH", "DATABASE_URL", "VIRTUAL_ENV")
        and not key.startswith(("SCHEDULER_", "CELERY_", "PROJECT_", "POSTGRES_", "DJANGO_"))
    }
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    env["CELERY_BROKER_URL"] = broker
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env | superuser_env()


def interpreter(version: str) -> str:
    """The machine's Python ``version`` (pyenv's); a test without it fails in CI, where the
    supported ends must be tested, and is skipped elsewhere, saying how to get it."""
    found = find_python(version)
    if found is None:
        message = f"no python{version} on this machine (pyenv install {version}, or on PATH)"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def new_project(tmp_path: Path, broker: str, python: str = sys.executable) -> Project:
    """A new user's folder and virtualenv, made with ``python`` (this interpreter by default)."""
    venv, root, logs = tmp_path / "venv", tmp_path / "site", tmp_path / "logs"
    for folder in (root, logs):
        folder.mkdir()
    assert not root.resolve().is_relative_to(REPO)
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    return Project(root, venv, clean_environment(venv, broker), logs)


def postgres_env(name: str) -> dict[str, str]:
    """The POSTGRES_* that install.md's settings read, for database ``name`` on PG_URL."""
    parts = urlsplit(PG_URL)
    return {
        "POSTGRES_DB": name,
        "POSTGRES_USER": parts.username or "postgres",
        "POSTGRES_PASSWORD": parts.password or "",
        "POSTGRES_HOST": parts.hostname or "127.0.0.1",
        "POSTGRES_PORT": str(parts.port or 5432),
    }


def admin_sql(statement: str) -> None:
    """One statement on PG_URL's server (its ``postgres`` database), outside a transaction."""
    server = urlunsplit(urlsplit(PG_URL)._replace(path="/postgres"))
    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute(statement)


@contextmanager
def postgres_database(template: str | None = None) -> Iterator[dict[str, str]]:
    """A database of its own next to PG_URL's (a copy of ``template`` if given), dropped after."""
    name = f"adoption_{uuid.uuid4().hex[:8]}"
    admin_sql(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
    try:
        yield postgres_env(name)
    finally:
        admin_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
