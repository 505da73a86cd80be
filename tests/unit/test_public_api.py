"""The import paths docs/reference.md lists as the public API keep working, and each names the
one object the package uses inside (a re-export, never a copy)."""

from __future__ import annotations

import importlib

import pytest
from django.utils.module_loading import import_string

from scheduler_app import ticker as ticker_module
from scheduler_app.authoring import api as api_module
from scheduler_app.authoring import declarations as declarations_module
from scheduler_app.conf import SchedulerSettings
from scheduler_app.definition import policies as policies_module

PUBLIC = [
    ("scheduler_app.declarations", "scheduled", declarations_module.scheduled),
    ("scheduler_app.declarations", "isolated_registry", declarations_module.isolated_registry),
    ("scheduler_app.declarations", "CatchUp", policies_module.CatchUp),
    ("scheduler_app.declarations", "Retry", policies_module.Retry),
    ("scheduler_app.api", "run_once", api_module.run_once),
    ("scheduler_app.api", "run_in", api_module.run_in),
    ("scheduler_app.api", "run_after", api_module.run_after),
    ("scheduler_app.api", "deadline_alarm", api_module.deadline_alarm),
    ("scheduler_app.api", "debounce", api_module.debounce),
    ("scheduler_app.ticker", "Ticker", ticker_module.Ticker),
    ("scheduler_app.beat", "DurableScheduler", None),
    ("scheduler_app.tasks", "OccurrenceTask", None),
    ("scheduler_app.services", "create_schedule", None),
    ("scheduler_app.context", "current_occurrence", None),
    ("scheduler_app.models", "Schedule", None),
    ("scheduler_app.clock", "FakeClock", None),
    ("scheduler_app.errors", "ScheduleValidationError", None),
    ("scheduler_app.events", "occurrence_finished", None),
]


@pytest.mark.parametrize(("module", "name", "inside"), PUBLIC)
def test_every_public_path_imports_the_object_used_inside(
    module: str, name: str, inside: object
) -> None:
    found = getattr(importlib.import_module(module), name)
    assert found is not None
    if inside is not None:
        assert found is inside


def test_the_settings_defaults_name_importable_paths() -> None:
    for name in ("PERMISSION_CHECK", "TENANT_RESOLVER"):
        assert callable(import_string(getattr(SchedulerSettings, name)))
