"""The supported-versions matrix: `make test-matrix` (all of it) or, as CI does, the oldest
and the newest Django: `nox -s "tests(django='4.2')" "tests(django='5.2')"`.

Each session installs the library with its extras and the test tools into its own venv and
runs the unit and integration suites on SQLite. Django 6.0 needs Python 3.12+, which this
machine does not have, so it is not in the matrix yet.
"""

from __future__ import annotations

import nox

nox.options.default_venv_backend = "venv"
nox.options.reuse_existing_virtualenvs = True

PYTHON = "3.11"
DJANGO = ["4.2", "5.1", "5.2"]
CELERY = "celery>=5.4,<6"
TEST_TOOLS = ["pytest>=8", "pytest-django>=4.8", "pytest-xdist>=3.5", "hypothesis>=6.100"]
EXAMPLE_PROJECT = ["dj-database-url>=2.1", "tqdm>=4.66"]


@nox.session(python=PYTHON)
@nox.parametrize("django", DJANGO)
def tests(session: nox.Session, django: str) -> None:
    """The unit and integration suites on SQLite with one Django release."""
    session.install(
        ".[redis,postgres,results,metrics]",
        f"django~={django}.0",
        CELERY,
        *TEST_TOOLS,
        *EXAMPLE_PROJECT,
    )
    session.run(
        "python", "-c", "import django, celery; print(django.get_version(), celery.__version__)"
    )
    session.run(
        "pytest",
        "tests/unit",
        "tests/integration",
        "tests/adoption",
        "-m",
        "not postgres and not adoption",
        "-p",
        "no:cacheprovider",
        "-n",
        "2",
        *session.posargs,
        env={"DATABASE_URL": f"sqlite:///{session.create_tmp()}/db.sqlite3"},
    )
