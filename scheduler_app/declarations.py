"""Public import path of ``@scheduled`` (the code lives in ``scheduler_app.authoring``).

from scheduler_app.declarations import scheduled
"""

from scheduler_app.authoring.declarations import (
    Declaration,
    ScheduleRegistry,
    isolated_registry,
    registry,
    scheduled,
)

__all__ = ["Declaration", "ScheduleRegistry", "isolated_registry", "registry", "scheduled"]
