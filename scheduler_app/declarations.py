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
    FireOnce,
    Retry,
    Skip,
    Window,
)

__all__ = [
    "CancelPrevious",
    "CatchUp",
    "Declaration",
    "FireOnce",
    "Retry",
    "ScheduleRegistry",
    "Skip",
    "Window",
    "declare_event",
    "isolated_registry",
    "registry",
    "scheduled",
]
