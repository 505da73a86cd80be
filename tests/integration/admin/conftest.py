"""The admin tests: the demo tasks are schedulable here (the allowlist names them)."""

from __future__ import annotations

import pytest
from django.conf import LazySettings


@pytest.fixture(autouse=True)
def demo_tasks_allowed(settings: LazySettings) -> None:
    settings.SCHEDULER_ALLOWED_TASKS = ("demo.*",)
