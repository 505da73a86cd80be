"""The supported-versions matrix: `make test-matrix` (every supported pair) or, as CI does,
its ends: `make test-matrix-ends` (Django 6.1 on Python 3.13, Django 5.2 on Python 3.11).

Supported (docs/install.md): Django 5.2 LTS on Python 3.11, 3.12 and 3.13; Django 6.0 and 6.1
on Python 3.12 and 3.13 (Django 6 needs Python 3.12+); Celery 5.4 up to the current 5.x.

Each session installs the library with every extra and the test tools into its own venv and
runs the unit, integration and acceptance suites on SQLite, then (``--postgres``, as CI does
for the ends) the PostgreSQL pass. Interpreters come from the machine's pyenv versions
(``tests/adoption/interpreters.py``); where one is missing the session fails when ``CI`` is
set and is skipped (reported as such) elsewhere.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nox

sys.path.insert(0, str(Path(__file__).parent / "tests" / "adoption"))
from interpreters import find_python  # a file of this repository, stdlib only

nox.options.default_venv_backend = "venv"
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = bool(os.environ.get("CI"))

PAIRS = [
    ("3.11", "5.2"),
    ("3.12", "5.2"),
    ("3.13", "5.2"),
    ("3.12", "6.0"),
    ("3.13", "6.0"),
    ("3.12", "6.1"),
    ("3.13", "6.1"),
]
"""Every supported (Python, Django) pair."""
ENDS = [("3.13", "6.1"), ("3.11", "5.2")]
CELERY = "celery>=5.4,<6"
PG_URL = os.environ.get("PG_URL", "postgres://postgres@127.0.0.1:5432/test")


def _put_pyenv_on_path() -> None:
    """nox finds ``pythonX.Y`` on PATH; pyenv's shims answer only for its global version, so
    the folder of each supported version's interpreter goes on PATH first."""
    folders = [find_python(version) for version in sorted({p for p, _ in PAIRS})]
    found = [str(Path(path).parent) for path in folders if path]
    os.environ["PATH"] = os.pathsep.join([*found, os.environ.get("PATH", "")])


_put_pyenv_on_path()


def extras(django: str) -> str:
    """Every extra; the django.tasks backport only below Django 6 (``[tasks-backport]``)."""
    backport = ",tasks-backport" if django.startswith("5.") else ""
    return f"dev{backport}"


@nox.session
@nox.parametrize(("python", "django"), PAIRS, ids=[f"python{p}-django{d}" for p, d in PAIRS])
def tests(session: nox.Session, django: str) -> None:
    """The suite with one Django release: SQLite, then PostgreSQL with ``-- --postgres``."""
    session.install(f".[{extras(django)}]", f"django~={django}.0", CELERY)
    session.run(
        "python", "-c", "import django, celery; print(django.get_version(), celery.__version__)"
    )
    postgres = "--postgres" in session.posargs
    rest = [arg for arg in session.posargs if arg != "--postgres"]
    common = ["-p", "no:cacheprovider", "-n", "2", *rest]
    session.run(
        "pytest",
        "-m",
        "not postgres and not adoption",
        *common,
        env={"DATABASE_URL": f"sqlite:///{session.create_tmp()}/db.sqlite3"},
    )
    if postgres:
        session.run(
            "pytest",
            "tests/integration",
            "tests/acceptance",
            *common,
            env={"DATABASE_URL": PG_URL},
        )
