"""A worker's claim of an occurrence: the checks before a run starts (held back on purpose,
cancelled, expired, not approved, forbidden to its owner, kill-switched), then the fencing
token, the lease and the attempt row, in one statement on PostgreSQL. The claim's outcomes that
end an occurrence go through ``lifecycle.end``."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

from django.db import transaction
from django.db.models import F

from scheduler_app.conf import SchedulerSettings, get_settings
from scheduler_app.models import (
    AttemptKind,
    Occurrence,
    OccurrenceAttempt,
    OccurrenceState,
)
from scheduler_app.safety.approval import needs_approval
from scheduler_app.safety.handoff import CANCELLED, why_not_runnable
from scheduler_app.safety.permissions import CODE_ORIGIN, may_run, pause_owned_schedules, refusal
from scheduler_app.worker import sql as worker_sql
from scheduler_app.worker.lifecycle import end

logger = logging.getLogger("scheduler_app.lifecycle")  # the logger keeps its name

CLAIMABLE = (OccurrenceState.PENDING, OccurrenceState.DISPATCHED, OccurrenceState.RETRYING)
EARLY = timedelta(seconds=1)


@dataclass(frozen=True)
class Claim:
    """The result of a worker's attempt to start an occurrence."""

    claimed: bool
    reason: str = ""
    token: int = 0
    attempt: int = 0
    occurrence: Occurrence | None = None
    """As it was before the claim, with its schedule and version loaded."""
    stopped: bool | None = None
    """Whether a kill switch covers the claimed occurrence (read by the claim statement on
    PostgreSQL); None: not read, ask ``killswitch.stops``."""


def claim(
    occurrence_id: UUID | str,
    *,
    owner: str,
    now: datetime,
    lease: timedelta,
    task: str | None = None,
    scheduled_for: datetime | None = None,
) -> Claim:
    """``pending/dispatched/retrying -> running``, or why not (duplicate, cancelled, expired,
    forbidden, another task's occurrence).

    ``scheduled_for``: the slot the message names, a hint (the partition key) that is never
    trusted: when no row has this id and slot, the occurrence is looked up by its id alone.

    ``task`` is the name of the task the message was delivered to: an occurrence of another
    task is never run by it (a forged or misrouted message), and is left as it is.

    On PostgreSQL the common case is one statement (``scheduler_app.worker.sql``); a refusal,
    or an owner whose permission Python must check, costs a few more.
    """
    if worker_sql.available():
        return _claim_in_one_statement(
            str(occurrence_id),
            owner=owner,
            now=now,
            lease=lease,
            task=task,
            scheduled_for=scheduled_for,
        )
    rows = Occurrence.objects.select_related("schedule", "schedule__owner", "schedule_version")
    occurrence = None
    if scheduled_for is not None:
        occurrence = rows.filter(pk=occurrence_id, scheduled_for=scheduled_for).first()
    if occurrence is None:
        occurrence = rows.filter(pk=occurrence_id).first()
    if occurrence is None:
        return Claim(False, "unknown_occurrence")
    refused = _refused(occurrence, now, task)
    if refused is not None:
        return refused
    return _take(occurrence, owner=owner, now=now, lease=lease)


def _claim_in_one_statement(
    occurrence_id: str,
    *,
    owner: str,
    now: datetime,
    lease: timedelta,
    task: str | None,
    scheduled_for: datetime | None,
) -> Claim:
    settings = get_settings()
    predicate = worker_sql.permission_predicate(
        decided=False,
        default_check=settings.PERMISSION_CHECK == SchedulerSettings.PERMISSION_CHECK,
        require_owner=settings.REQUIRE_OWNER,
    )
    approval = "TRUE" if task is not None and not needs_approval(task) else worker_sql.APPROVED
    last: Occurrence | None = None
    for attempt in (1, 2):
        seen = worker_sql.claim(
            occurrence_id,
            owner=owner,
            now=now,
            lease=lease,
            early=EARLY,
            task=task,
            permission=predicate,
            code_origin=CODE_ORIGIN,
            approval=approval,
            scheduled_for=scheduled_for,
        )
        if seen is None:
            return Claim(False, "unknown_occurrence")
        if seen.won:
            return _recheck(
                Claim(True, "", seen.token, seen.attempt, seen.occurrence, seen.stopped), now
            )
        last = seen.occurrence
        scheduled_for = seen.occurrence.scheduled_for  # the row's own slot from here on
        refused = _refused(seen.occurrence, now, task, check_permission=attempt == 1)
        if refused is not None:
            return refused
        # Claimable and permitted: the owner's permission (or whether the task needs
        # approval) needed Python, and Python has now said yes.
        predicate = worker_sql.permission_predicate(
            decided=True, default_check=True, require_owner=False
        )
        approval = "TRUE"
    return Claim(False, "claimed_by_another", occurrence=last)


def _recheck(claim: Claim, now: datetime) -> Claim:
    """What the one statement cannot ask (approval by the schedule's own task, the version's
    payload), asked of the row it just claimed; a refusal ends the attempt before the task."""
    occurrence = claim.occurrence
    not_runnable = why_not_runnable(occurrence) if occurrence is not None else ""
    if occurrence is None or not not_runnable:
        return claim
    state = OccurrenceState.CANCELLED if not_runnable == CANCELLED else OccurrenceState.SKIPPED
    end(
        occurrence,
        state,
        not_runnable,
        now,
        from_states=(OccurrenceState.RUNNING,),
        token=claim.token,
    )
    return Claim(False, not_runnable, occurrence=occurrence)


def held_back(occurrence: Occurrence) -> bool:
    """A deliberate delay: a retry's backoff, jitter, a deferral (``not_before`` after the
    slot), the same rule as the message's ``eta``."""
    return occurrence.not_before is not None and (
        occurrence.state == OccurrenceState.RETRYING
        or occurrence.not_before > occurrence.scheduled_for
    )


def _refused(
    occurrence: Occurrence, now: datetime, task: str | None, *, check_permission: bool = True
) -> Claim | None:
    """Why ``occurrence`` (as read, with its schedule) may not start now, ending it when the
    reason is final (cancelled, expired, forbidden); None when it may."""
    if task is not None and occurrence.task != task:
        return Claim(False, "task_mismatch")
    if occurrence.state not in CLAIMABLE:
        return Claim(False, f"already_{occurrence.state}", occurrence=occurrence)
    if occurrence.state == OccurrenceState.PENDING and occurrence.publish_lease_until is None:
        # Still in the outbox and no beat is handing it off: a message for it did not come
        # from the outbox (the handoff's kill switches and quotas were never asked). Left as
        # it is: the outbox publishes it.
        return Claim(False, "not_published", occurrence=occurrence)
    if held_back(occurrence) and now + EARLY < occurrence.not_before:
        # Not yet: a retry's old delivery (its own message follows), or a message that
        # arrived before its jitter or delay (a forged one). Left as it is: the outbox and
        # the retry publish it when it is due. A slot without a delay is due when the beat
        # says so: the beat's clock decides when a slot is due, not the worker's.
        why = "retry_not_due" if occurrence.state == OccurrenceState.RETRYING else "not_due"
        return Claim(False, why, occurrence=occurrence)
    not_runnable = why_not_runnable(occurrence)
    if not_runnable:
        # Past every check above it (the services, the outbox) and still not runnable: a row
        # forced in, or a schedule cancelled or sent back for approval after the handoff.
        state = OccurrenceState.CANCELLED if not_runnable == CANCELLED else OccurrenceState.SKIPPED
        end(occurrence, state, not_runnable, now, from_states=CLAIMABLE)
        return Claim(False, not_runnable)
    if occurrence.cancel_requested_at is not None:
        # Asked to stop before it started (``cancel_previous`` or an operator) and the revoke
        # did not reach the worker: never start it, let the newer one go.
        end(occurrence, OccurrenceState.CANCELLED, "cancel_requested", now, from_states=CLAIMABLE)
        return Claim(False, "cancel_requested")
    if occurrence.deadline_at is not None and now >= occurrence.deadline_at:
        end(occurrence, OccurrenceState.EXPIRED, "deadline_passed", now, from_states=CLAIMABLE)
        return Claim(False, "expired")
    if check_permission and not may_run(occurrence.schedule):
        why = refusal(occurrence.schedule)
        person = occurrence.schedule.owner
        if person is not None and not person.is_active:
            # Paused first: once the refusal is visible, so is the pause that explains it.
            pause_owned_schedules(person, f"paused: {why}", now)
        end(occurrence, OccurrenceState.FAILED, "forbidden", now, from_states=CLAIMABLE, error=why)
        return Claim(False, "forbidden")
    return None


def _take(occurrence: Occurrence, *, owner: str, now: datetime, lease: timedelta) -> Claim:
    """The claim's compare-and-set and its attempt record (the ORM path)."""
    token = occurrence.fencing_token + 1
    with transaction.atomic():
        won = Occurrence.objects.filter(
            pk=occurrence.pk,
            scheduled_for=occurrence.scheduled_for,  # as read by the claim: the partition key
            state__in=CLAIMABLE,
            fencing_token=occurrence.fencing_token,
        ).update(
            state=OccurrenceState.RUNNING,
            fencing_token=token,
            attempts=F("attempts") + 1,
            lease_owner=owner,
            lease_expires_at=now + lease,
            started_at=now,
        )
        if not won:
            return Claim(False, "claimed_by_another", occurrence=occurrence)
        OccurrenceAttempt.objects.create(
            occurrence_id=occurrence.pk,
            scheduled_for=occurrence.scheduled_for,
            kind=AttemptKind.RUN,
            number=occurrence.attempts + 1,
            worker=owner[:200],
            started_at=now,
        )
    return Claim(True, "", token, occurrence.attempts + 1, occurrence)
