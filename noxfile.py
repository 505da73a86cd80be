"""The supported-versions matrix: `make test-matrix` (all of it) or, as CI does, the oldest
and the newest Django: `nox -s "tests(django='4.2')" "tests(django='5.2')"`.

Each session installs the library with its extras and the test tools into its own venv and
runs the unit and integration suites on SQLite. Django 6.0 needs Python 3.12+: the matrix
stays on 3.11, and the ``djtasks_django6`` session runs the django.tasks target's tests on
Django 6 where a ``python3.12`` is found (elsewhere nox reports it skipped; point it at one
with ``nox -s djtasks_django6 --force-python /path/to/python3.12``).
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
# What the tests check the optional features against (as in the `dev` extra).
TEST_ORACLES = [
    "ephem>=4.1",
    "opentelemetry-sdk>=1.20",
    "opentelemetry-instrumentation-celery>=0.41b0",
]
DJTASKS_ONLY = [
    "tests/unit/test_djtasks_declarations.py",
    "tests/integration/test_djtasks_target.py",
    "tests/integration/test_djtasks_observability.py",
    "tests/integration/test_djtasks_concurrency_pg.py",
    "tests/integration/test_outbox_targets.py",
    "tests/adoption/test_fresh_venv_djtasks.py",
]
"""Test files that import django.tasks (django-tasks-db needs Django 5.2+)."""


@nox.session(python=PYTHON)
@nox.parametrize("django", DJANGO)
def tests(session: nox.Session, django: str) -> None:
    """The unit and integration suites on SQLite with one Django release."""
    # django-tasks-db needs Django 5.2+: below it the `tasks` extra is left out, and so are the
    # tests of the django.tasks target (they import it), nothing else.
    with_tasks = tuple(int(part) for part in django.split(".")) >= (5, 2)
    extras = "redis,postgres,results,metrics,holidays,solar,otel,sentry" + (
        ",tasks" if with_tasks else ""
    )
    session.install(
        f".[{extras}]",
        f"django~={django}.0",
        CELERY,
        *TEST_TOOLS,
        *TEST_ORACLES,
        *EXAMPLE_PROJECT,
    )
    ignored = [] if with_tasks else [f"--ignore={path}" for path in DJTASKS_ONLY]
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
        *ignored,
        *session.posargs,
        env={"DATABASE_URL": f"sqlite:///{session.create_tmp()}/db.sqlite3"},
    )


DJANGO6_PYTHON = "3.12"
DJTASKS_TESTS = [
    "tests/unit/test_djtasks_declarations.py",
    "tests/integration/test_djtasks_target.py",
]


@nox.session(python=DJANGO6_PYTHON)
def djtasks_django6(session: nox.Session) -> None:
    """The django.tasks target on Django 6 (its own ``django.tasks``, no backport), SQLite.

    Needs Python 3.12+. Where it is missing, nox reports this session *skipped* (never counted
    as tested). The package pins ``django<6``, so the library is installed without its
    dependencies and they are named here, with Django 6.
    """
    session.install("--no-deps", ".")
    session.install(
        "django>=6.0,<6.1",
        "django-tasks-db>=0.13",
        CELERY,
        "kombu>=5.4,<6",
        "python-dateutil>=2.9",
        "tzdata>=2024.1",
        "prometheus-client>=0.20",
        "django-celery-results>=2.5",
        "psycopg[binary]>=3.1",
        *TEST_TOOLS,
        *EXAMPLE_PROJECT,
    )
    session.run("python", "-c", "import django, django.tasks; print(django.get_version())")
    session.run(
        "pytest",
        *DJTASKS_TESTS,
        "-p",
        "no:cacheprovider",
        *session.posargs,
        env={"DATABASE_URL": f"sqlite:///{session.create_tmp()}/db.sqlite3"},
    )
