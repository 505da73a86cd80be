"""Public import path of ``@scheduled``, ``declare_event`` and the policy values they take
(the code lives in ``scheduler_app.authoring`` and ``scheduler_app.definition.policies``).

from scheduler_app.declarations import CatchUp, Retry, declare_event, scheduled
"""

from scheduler_app.authoring.declarations import (
    Declaration,
    ScheduleRegistry,
    declare_event,
    isolated_registry,
    registry,
    scheduled,
)
from scheduler_app.definition.policies import (
    CancelPrevious,
    CatchUp,
    Deadline,
    FireOnce,
    Overlap,
    Retry,
    Skip,
    Window,
)

__all__ = [
    "CancelPrevious",
    "CatchUp",
    "Deadline",
    "Declaration",
    "FireOnce",
    "Overlap",
    "Retry",
    "ScheduleRegistry",
    "Skip",
    "Window",
    "declare_event",
    "isolated_registry",
    "registry",
    "scheduled",
]
