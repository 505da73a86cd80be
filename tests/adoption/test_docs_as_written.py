"""The manual as a reader runs it (issue 35, "docs run as written"): every page of README.md and
docs/ (but install.md and django-tasks.md, see docs_runner's docstring) followed block by block
in a new user's project, at today's real date, with nothing a reader cannot see.

The project is made once per database by following docs/install.md (the wheel of ``make dist``
in a fresh virtualenv; SQLite with ``[redis]``, PostgreSQL with ``[redis,postgres]``); each page
then runs in a copy of it (its folder and its database), so a page gets only what install.md
and the page itself create. A page fails listing every block that failed, as ``page:line`` and
the error the reader would see. The packages a page installs (``pip install
"django-durable-scheduler[solar]"``) are removed after it, as the virtualenv is shared.

Needs Redis (the pages start workers and beats) and, for the PostgreSQL pass, PostgreSQL at
``PG_URL`` (each project gets databases of its own, dropped after). ``make test-adoption``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.adoption.docs_runner import (
    NOT_RUN,
    PAGES,
    InstallPage,
    PageRun,
    copy_project,
    installed_packages,
    page_blocks,
)
from tests.adoption.install_page import PageRunner, Project, Setup, install_blocks
from tests.adoption.venvs import PG_URL, free_port, new_project, postgres_database
from tests.conftest import REDIS_URL, require_server

pytestmark = pytest.mark.adoption

RUN = [page for page in PAGES if page.name not in NOT_RUN]
SETUPS = {
    "sqlite": Setup("sqlite", "redis"),
    "postgresql": Setup("postgresql", "redis,postgres"),
}


@dataclass
class Base:
    """install.md's project, its services stopped: what every page starts from."""

    project: Project
    installer: PageRunner
    database: str | None  # the PostgreSQL database to copy; None on SQLite


@pytest.fixture(scope="module", params=list(SETUPS))
def base(
    request: pytest.FixtureRequest, checkout: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Base]:
    require_server("Redis", REDIS_URL, 6379)
    setup = SETUPS[request.param]
    project = new_project(tmp_path_factory.mktemp(f"docs-{setup.database}"), REDIS_URL)
    with ExitStack() as stack:
        stack.callback(project.close)
        if setup.database == "postgresql":
            require_server("PostgreSQL", PG_URL, 5432)
            project.env |= stack.enter_context(postgres_database())
        installer = InstallPage(project, setup, checkout, free_port())
        main, _ = install_blocks()
        installer.follow(main)
        project.stop()
        yield Base(project, installer, project.env.get("POSTGRES_DB"))


@pytest.mark.parametrize("page", RUN, ids=[page.name for page in RUN])
def test_the_page_runs_as_written(base: Base, page: Path, tmp_path: Path) -> None:
    blocks = page_blocks(page)
    started = time.monotonic()
    with ExitStack() as stack:
        env = dict(base.project.env)
        if base.database:
            env |= stack.enter_context(postgres_database(template=base.database))
        project = copy_project(base.project, tmp_path, env)
        stack.callback(project.close)
        installer = PageRunner(project, base.installer.setup, base.installer.checkout, free_port())
        installer.checkout_lines = base.installer.checkout_lines
        before = installed_packages(project)
        run = PageRun(project, installer)
        stack.callback(uninstall_new, run, before)
        outcomes = run.follow(blocks)
    ran = [outcome for outcome in outcomes if outcome.block.runnable]
    failed = [f"{o.block.where}: {o.error}" for o in outcomes if o.error]
    print(
        f"{page.name}: {len(ran)} blocks run, {len(ran) - len(failed)} passed, "
        f"{len(blocks) - len(ran)} not run, {time.monotonic() - started:.0f} s"
    )
    assert not failed, f"{len(failed)} of {len(outcomes)} blocks fail:\n\n" + "\n\n".join(failed)


def uninstall_new(run: PageRun, before: set[str]) -> None:
    """Leave the shared virtualenv as install.md made it (when the page installed something)."""
    if not run.installed:
        return
    project = run.project
    added = installed_packages(project) - before
    if added:
        project.run(f"python -m pip uninstall -y {' '.join(sorted(added))}")
