"""The Django admin for operators (docs/admin.md).

``schedules``: the list, the form with its builder and live preview, the action pages;
``occurrences``: the read-only history with attempts; ``monitoring``: the monitoring page;
``safety``: kill switches (audited), beat heartbeats, tenant quotas;
``results``: the optional packages' task-result admins, scoped by tenant.
"""

from scheduler_app.admin import results
from scheduler_app.admin.occurrences import OccurrenceAdmin
from scheduler_app.admin.safety import (
    BeatHeartbeatAdmin,
    KillSwitchAdmin,
    KillSwitchEventAdmin,
    TenantQuotaAdmin,
)
from scheduler_app.admin.schedules import ScheduleAdmin

__all__ = [
    "BeatHeartbeatAdmin",
    "KillSwitchAdmin",
    "KillSwitchEventAdmin",
    "OccurrenceAdmin",
    "ScheduleAdmin",
    "TenantQuotaAdmin",
    "results",
]
