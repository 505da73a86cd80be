"""Public import path of ``@scheduled`` and ``declare_event`` (the code lives in
``scheduler_app.authoring``).

from scheduler_app.declarations import declare_event, scheduled
"""

from scheduler_app.authoring.declarations import (
    Declaration,
    ScheduleRegistry,
    declare_event,
    isolated_registry,
    registry,
    scheduled,
)

__all__ = [
    "Declaration",
    "ScheduleRegistry",
    "declare_event",
    "isolated_registry",
    "registry",
    "scheduled",
]
