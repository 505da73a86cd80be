"""The store. ``choices``: the fields' choices; ``bounds``: the whole-number fields' limits as
validators and check constraints; ``core``: schedules, versions, the SQLite lease; ``runtime``: a
schedule's runtime (next run, counters), its own narrow table; ``ledger``:
occurrences; ``history``: attempts; ``operations``: beat heartbeats, kill switches, quotas;
``audit``: the operator actions."""

from scheduler_app.models.audit import AuditAction, ScheduleAuditEvent
from scheduler_app.models.choices import (
    RULE_TRIGGERS,
    HandoffTarget,
    IntervalMode,
    LatenessClass,
    MisfirePolicy,
    OverlapPolicy,
    PauseBehaviour,
    ScheduleHealth,
    ScheduleMode,
    ScheduleOrigin,
    ScheduleStatus,
    Trigger,
)
from scheduler_app.models.core import *  # noqa: F403
from scheduler_app.models.core import (  # the names used elsewhere, for type checkers
    SEMANTIC_FIELDS,
    Schedule,
    SchedulerLease,
    ScheduleVersion,
)
from scheduler_app.models.history import AttemptKind, OccurrenceAttempt
from scheduler_app.models.ledger import *  # noqa: F403
from scheduler_app.models.ledger import (
    ACTIVE_STATES,
    FINAL_STATES,
    OPEN_STATES,
    Occurrence,
    OccurrenceState,
)
from scheduler_app.models.operations import *  # noqa: F403
from scheduler_app.models.runtime import (
    ScheduleQuerySet,
    ScheduleRuntime,
    bulk_create_schedules,
)

__all__ = [
    "ACTIVE_STATES",
    "FINAL_STATES",
    "OPEN_STATES",
    "RULE_TRIGGERS",
    "SEMANTIC_FIELDS",
    "AttemptKind",
    "AuditAction",
    "HandoffTarget",
    "IntervalMode",
    "LatenessClass",
    "MisfirePolicy",
    "Occurrence",
    "OccurrenceAttempt",
    "OccurrenceState",
    "OverlapPolicy",
    "PauseBehaviour",
    "Schedule",
    "ScheduleAuditEvent",
    "ScheduleHealth",
    "ScheduleMode",
    "ScheduleOrigin",
    "ScheduleQuerySet",
    "ScheduleRuntime",
    "ScheduleStatus",
    "ScheduleVersion",
    "SchedulerLease",
    "Trigger",
    "bulk_create_schedules",
]
