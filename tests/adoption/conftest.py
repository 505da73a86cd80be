"""The distribution every adoption test installs: ``make dist`` once per session."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.adoption.install_page import REPO


@pytest.fixture(scope="session")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Stands for the user's clone: ``make dist`` of this repository into its ``dist/``."""
    clone = tmp_path_factory.mktemp("checkout")
    done = subprocess.run(
        ["make", "dist", f"DIST_DIR={clone / 'dist'}"], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return clone


@pytest.fixture(scope="session")
def dist(checkout: Path) -> Path:
    return checkout / "dist"
