"""The service layer: every way of changing a schedule (admin, commands, decorator, API) goes here.

``schedules``: create, update; ``status``: pause, resume, cancel, delete; ``replay``;
``fields``: the fields
they take besides the definition (``DEFAULTS``, the canonical form and ``parse_definition``
are in ``scheduler_app.definition``, re-exported here). ``operator``: run now and
undoing a cancel; ``backfills``: backfill; ``approval``: approving a version. Every one takes
the acting ``user`` (a person, or a system actor from ``scheduler_app.safety.actors``), decides who
may do it (``scheduler_app.safety.access``), and records it in the audit trail in its transaction.
"""

from scheduler_app.definition.canonical import DEFAULTS, normalize_definition
from scheduler_app.definition.parsed import Definition, parse_definition
from scheduler_app.services.approval import approve_schedule
from scheduler_app.services.backfills import BackfillPlan, backfill
from scheduler_app.services.fields import CREATE_ONLY_FIELDS, DESCRIPTIVE_FIELDS
from scheduler_app.services.operator import (
    OperatorPermissionDenied,
    restore_schedule,
    run_now,
)
from scheduler_app.services.replay import replay_occurrence
from scheduler_app.services.schedules import create_schedule, update_schedule
from scheduler_app.services.status import (
    ResumePreview,
    cancel_schedule,
    delete_schedule,
    pause_schedule,
    preview_resume,
    resume_schedule,
)

__all__ = [
    "CREATE_ONLY_FIELDS",
    "DEFAULTS",
    "DESCRIPTIVE_FIELDS",
    "BackfillPlan",
    "Definition",
    "OperatorPermissionDenied",
    "ResumePreview",
    "approve_schedule",
    "backfill",
    "cancel_schedule",
    "create_schedule",
    "delete_schedule",
    "normalize_definition",
    "parse_definition",
    "pause_schedule",
    "preview_resume",
    "replay_occurrence",
    "restore_schedule",
    "resume_schedule",
    "run_now",
    "update_schedule",
]
