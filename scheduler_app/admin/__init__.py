"""The Django admin for operators (docs/admin.md).

``schedules``: the list, the form with its builder and live preview, the action pages;
``occurrences``: the read-only history with attempts; ``monitoring``: the monitoring page.
"""

from scheduler_app.admin.occurrences import OccurrenceAdmin
from scheduler_app.admin.schedules import ScheduleAdmin

__all__ = ["OccurrenceAdmin", "ScheduleAdmin"]
