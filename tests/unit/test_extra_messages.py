"""A message about a missing optional package says which extra and how to install it from the
wheel (the distribution is not on the package index: docs/install.md), through one helper
(issue 35: "pip install 'django-durable-scheduler[solar]'" pointed at a package that is not
there)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from scheduler_app import compat
from scheduler_app.compat import EXTRAS, WHEEL_GLOB, install_extra
from scheduler_app.errors import InvalidRule
from scheduler_app.timing.calendars import solar

ROOT = Path(__file__).resolve().parents[2]
TO_THE_INDEX = re.compile(r"install ['\"]?django-durable-scheduler\[")
"""An install line that names the distribution, i.e. the package index."""


def test_the_extras_are_the_ones_pyproject_declares() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert set(declared["optional-dependencies"]) - {"dev", "bench"} == EXTRAS


def test_the_hint_is_install_md_s_wheel_with_the_extra() -> None:
    hint = install_extra("solar")
    assert hint == (
        "install the [solar] extra from the wheel `make dist` builds: "
        'pip install "$(ls dist/django_durable_scheduler-*.whl)[solar]" in your checkout '
        "(docs/install.md)"
    )
    install_md = (ROOT / "docs" / "install.md").read_text()
    assert "make dist" in install_md
    assert WHEEL_GLOB.removeprefix("dist/") in install_md
    with pytest.raises(ValueError, match="unknown extra 'sun'"):
        install_extra("sun")


def test_no_message_sends_people_to_the_package_index() -> None:
    sources = sorted((ROOT / "scheduler_app").rglob("*.py"))
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sources
        if path.name != "compat.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if TO_THE_INDEX.search(line)
    ]
    assert offenders == []


def test_a_solar_rule_without_astral_says_how_to_add_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(solar, "_sun", None)
    with pytest.raises(InvalidRule) as refused:
        solar.parse_solar("sunrise 56.9496 24.1052")
    assert install_extra("solar") in str(refused.value)


def test_compat_install_is_harmless() -> None:
    compat.install()  # the app config still calls it: nothing to do on Django 5.2+
