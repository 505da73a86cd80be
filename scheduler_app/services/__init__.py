"""The service layer: every way of changing a schedule (admin, commands, decorator, API) goes here.

``schedules``: create, update, pause, resume, cancel, delete, replay. ``manual``: run now and
backfill.
"""

from scheduler_app.services.schedules import (
    CREATE_ONLY_FIELDS,
    DEFAULTS,
    DESCRIPTIVE_FIELDS,
    ResumePreview,
    cancel_schedule,
    create_schedule,
    delete_schedule,
    normalize_definition,
    pause_schedule,
    preview_resume,
    replay_occurrence,
    resume_schedule,
    update_schedule,
)

__all__ = [
    "CREATE_ONLY_FIELDS",
    "DEFAULTS",
    "DESCRIPTIVE_FIELDS",
    "ResumePreview",
    "cancel_schedule",
    "create_schedule",
    "delete_schedule",
    "normalize_definition",
    "pause_schedule",
    "preview_resume",
    "replay_occurrence",
    "resume_schedule",
    "update_schedule",
]
