"""Public import path of the Python API for one-time runs, delays, deadlines and debounce (the
code lives in ``scheduler_app.authoring.api``; docs/api.md).

    from scheduler_app import api

    api.run_in("billing.send_reminder", minutes=30, kwargs={"invoice": 42})
"""

from scheduler_app.authoring.api import (
    IF_PAST,
    deadline_alarm,
    debounce,
    run_after,
    run_in,
    run_once,
)

__all__ = ["IF_PAST", "deadline_alarm", "debounce", "run_after", "run_in", "run_once"]
