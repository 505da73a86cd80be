"""What differs from one install to another: which optional extras are there, and how to add one.

Imports nothing but the standard library, so the pure timing code may use it too.

Every message about a missing optional package goes through :func:`install_extra`: the
distribution is not on the package index yet (docs/install.md: build the wheel with
``make dist`` and install that file with its extras), so a message that said
``pip install django-durable-scheduler[solar]`` sent people to a package that is not there.
When the distribution is published, this one function changes.

``install()`` was a shim for Django 4.2's ``CheckConstraint(check=...)``; the supported Django
versions (5.2 and later, pyproject.toml) all take ``condition=``, so it does nothing now. It is
kept because ``SchedulerAppConfig`` calls it.
"""

from __future__ import annotations

DISTRIBUTION = "django-durable-scheduler"
WHEEL_GLOB = "dist/django_durable_scheduler-*.whl"
"""Where ``make dist`` leaves the wheel, relative to a checkout."""
EXTRAS = frozenset(
    {
        "redis",
        "events",
        "postgres",
        "results",
        "metrics",
        "holidays",
        "solar",
        "otel",
        "sentry",
        "tasks",
        "tasks-backport",
    }
)
"""The extras pyproject.toml declares for users, `dev` and `bench` aside (a test keeps the
two lists equal)."""


def install_extra(extra: str) -> str:
    """How to add ``extra``: ``install the [solar] extra from the wheel `make dist` builds:
    pip install "$(ls dist/django_durable_scheduler-*.whl)[solar]" in your checkout
    (docs/install.md)``."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; known: {', '.join(sorted(EXTRAS))}")
    return (
        f"install the [{extra}] extra from the wheel `make dist` builds: "
        f'pip install "$(ls {WHEEL_GLOB})[{extra}]" in your checkout (docs/install.md)'
    )


def install() -> None:
    """Nothing to do on the supported Django versions (see the module's docstring)."""
