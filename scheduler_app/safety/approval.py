"""Approval: schedules of sensitive tasks (mass mail, payments) run only once a person agrees.

A task needs approval when it is marked (``@app.task(needs_approval=True)``, or
``needs_approval=True`` on ``@scheduled``'s task) or its name matches
``SCHEDULER_APPROVAL_TASKS`` (names or fnmatch patterns). A new schedule of such a task, and
every new version of one, is stored ``awaiting_approval`` (the beat ignores it) until a user
with the ``scheduler_app.approve_schedule`` permission approves *that version*; then it is
active from the approval on (slots that passed while waiting are not run).

The rules live here (what needs approval, whether a version is approved); approving is a
service (``scheduler_app.services.approve_schedule``). The outbox and the worker claim ask
``version_approved`` again before an occurrence leaves the database or starts.

Two rules keep one person from running what nobody else saw (docs/admin.md, "Four
eyes"): with ``SCHEDULER_APPROVAL_REQUIRES_OTHER_PERSON`` the person who made a version
(created or edited it, as the audit trail records) cannot approve it (``check_other_person``);
and always, a person without ``run_schedule`` may not change what another person's schedule
runs (task, args, kwargs, job type, payload reference) or when and how often it runs (its
timing and the policies that add runs: ``check_runner_edit``), since its runs are checked
against the owner's rights, not the editor's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from fnmatch import fnmatchcase
from typing import Any

from celery import current_app

from scheduler_app.conf import get_settings
from scheduler_app.errors import OperatorPermissionDenied
from scheduler_app.models import (
    AuditAction,
    Occurrence,
    Schedule,
    ScheduleAuditEvent,
    ScheduleStatus,
)
from scheduler_app.safety.actors import actor_name, is_system

logger = logging.getLogger("scheduler_app.safety")
PERMISSION = "scheduler_app.approve_schedule"
RUN_PERMISSION = "scheduler_app.run_schedule"
WHAT_RUNS = (
    "task",
    "args",
    "kwargs",
    "objective",
    "job_type",
    "payload_ref",
    "mode",
    "options",
    "ping_url",
    "tenant",
)
"""The fields that change what a schedule's runs execute (with its owner's rights) or where
they go: ``mode`` turns a shadow schedule, which runs nothing, into one that runs; ``options``
routes its messages (another queue, an event's endpoint), ``ping_url`` where its runs are
reported, ``tenant`` which endpoints, queues and quotas its runs use (an event schedule
without a named endpoint goes to its tenant's)."""
WHEN_RUNS = (
    "kind",
    "rule",
    "anchor",
    "timezone",
    "dst_nonexistent",
    "dst_ambiguous",
    "starts_at",
    "ends_at",
    "max_count",
    "interval_mode",
    "active_window",
    "window_policy",
    "exclude_holidays",
    "misfire_policy",
    "max_lateness",
    "catch_up_window",
    "catch_up_limit",
    "overlap_policy",
    "max_attempts",
    "retry_delay",
    "max_per_day",
    "deadline",
    "jitter",
    "cancel_grace",
    "on_pause",
    "pause_after_failures",
)
"""The fields that decide when and how many times a schedule runs: a yearly schedule made
to run every ten seconds runs three million times more with its owner's rights (security
review 8); ``max_lateness`` runs every late slot within it whatever the misfire policy, a
longer ``deadline`` runs what would have expired (review 9); ``on_pause`` keeps runs going
while the owner has it paused, a higher ``pause_after_failures`` keeps a failing task
running (review 10)."""
MADE = (AuditAction.CREATED, AuditAction.EDITED)


def approval_patterns() -> tuple[str, ...]:
    """``SCHEDULER_APPROVAL_TASKS``: task names or fnmatch patterns that need approval."""
    return tuple(get_settings().APPROVAL_TASKS)


def needs_approval(task: str) -> bool:
    if any(fnmatchcase(task, pattern) for pattern in approval_patterns()):
        return True
    registered = current_app.tasks.get(task)
    return bool(getattr(registered, "needs_approval", False))


def hold_for_approval(schedule: Schedule) -> None:
    """Called before every write: an unapproved version of such a task waits."""
    if schedule.status == ScheduleStatus.CANCELLED:
        return  # a completed schedule is held too: run now and backfill run its version
    if schedule.approved_version == schedule.version or not needs_approval(schedule.task):
        return
    if schedule.status != ScheduleStatus.AWAITING_APPROVAL:
        logger.info(
            "schedule version waits for approval",
            extra={
                "action": "schedule.awaiting_approval",
                "schedule_id": str(schedule.pk),
                "version": schedule.version,
            },
        )
    schedule.status = ScheduleStatus.AWAITING_APPROVAL


def version_approved(schedule: Schedule, version: int) -> bool:
    """Whether ``version`` of ``schedule`` may run as far as approval goes: its task needs
    none, or exactly that version was approved (the last one approved is on the schedule)."""
    return schedule.approved_version == version or not needs_approval(schedule.task)


def occurrence_approved(row: Occurrence, asked: dict[str, bool] | None = None) -> bool:
    """Whether ``row`` (with its schedule and version loaded) may run as far as approval goes.

    Asked of the occurrence's own task *and* of its schedule's current one: a row whose task
    was changed (or forced) to one that needs approval is not let through by the other's
    answer. Its version must be the one approved last, or carry its own approval.
    """
    version = row.schedule_version
    if row.schedule.approved_version == version.version or version.approved_at is not None:
        return True
    cache = {} if asked is None else asked
    for task in {row.task, row.schedule.task}:
        if task not in cache:
            cache[task] = needs_approval(task)
        if cache[task]:
            return False
    return True


def version_authors(schedule: Schedule, version: int) -> set[str]:
    """Everyone who made a part of ``version`` of ``schedule``: who created or edited any
    version since the last approved one, up to ``version`` (from the audit trail). Not only
    the latest entry: an edit by someone else (a rename, a cost estimate) must not make the
    maker of the change to what runs a "second person"."""
    made = ScheduleAuditEvent.objects.filter(
        schedule_id=schedule.pk,
        version__gt=schedule.approved_version or 0,
        version__lte=version,
        action__in=MADE,
    )
    return set(made.values_list("by", flat=True))


def same_person_refusal(schedule: Schedule, version: int, user: Any) -> str:
    """Why ``user`` may not approve ``version`` (four eyes), or "" when they may: the rule is
    off, the approver is a system actor (the deployment), or someone else made the version."""
    if not get_settings().APPROVAL_REQUIRES_OTHER_PERSON or is_system(user):
        return ""
    if actor_name(user) not in version_authors(schedule, version):
        return ""
    return (
        f"you made (part of) version {version} of this schedule, and "
        "SCHEDULER_APPROVAL_REQUIRES_OTHER_PERSON asks for a second person: another user "
        "with the approve_schedule permission must approve it"
    )


def check_other_person(schedule: Schedule, version: int, user: Any) -> None:
    """Raise ``OperatorPermissionDenied`` when ``same_person_refusal`` says why."""
    refusal = same_person_refusal(schedule, version, user)
    if refusal:
        raise OperatorPermissionDenied(refusal)


def check_runner_edit(
    user: Any,
    changed: Iterable[str],
    owner: Any,
    *,
    owner_changed: bool = False,
    restarts: bool = False,
) -> None:
    """Refuse an edit of what runs (``WHAT_RUNS``) or of when and how often (``WHEN_RUNS``)
    by a person without ``run_schedule`` on a schedule whose runs are checked against
    somebody else (``owner``, after the edit): otherwise the editor would run their task or
    arguments, or the owner's task more often, with the owner's rights. Handing a schedule to
    another owner is such an edit too (else: edit as your own, then hand it to a runner). The
    owner themselves, a system actor and a user with ``run_schedule`` may. ``restarts``: the edit
    gives a completed schedule a slot again, so it runs again (as a run now would)."""
    touched = sorted(set(changed) & {*WHAT_RUNS, *WHEN_RUNS})
    if owner_changed:
        touched.append("owner")
    if restarts:
        touched.append("a finished or cancelled schedule (it would run again)")
    if not touched or is_system(user) or user.has_perm(RUN_PERMISSION):
        return
    if owner is not None and getattr(owner, "pk", owner) == user.pk:
        return
    raise OperatorPermissionDenied(
        f"setting {', '.join(touched)} of a schedule that runs as another user ({owner}) "
        f"needs the permission {RUN_PERMISSION!r}: its runs are checked against the owner's "
        "rights, not yours. Ask a user who may run it to make the change"
    )
