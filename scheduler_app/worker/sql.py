"""PostgreSQL: claim an occurrence in one statement, record its outcome in one.

Both are data-modifying CTEs: every part commits or none does, and each compare-and-set
(state, fencing token) is re-checked by PostgreSQL on the row's newest version, so they keep
the guarantees of the ORM path in ``scheduler_app.worker.lifecycle`` with one round trip each. They
run through ``cursors.fetch_one`` (values bound on the server; prepared when the project
opts in).

Every statement keyed by an occurrence's id also names its slot (``scheduled_for``), the
ledger's partition key: with it PostgreSQL reads one partition, without it every partition's
index. The claim takes the slot from the message, which is trusted for nothing: a slot that
matches no row with that id makes the claim look again by the id alone (``claim``). Every
later statement takes the slot from the row the claim read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections

from scheduler_app.db.cursors import Statement, fetch_one, inline, statement
from scheduler_app.errors import storable_error
from scheduler_app.models import (
    AttemptKind,
    KillSwitch,
    KillSwitchScope,
    Occurrence,
    OccurrenceAttempt,
    OccurrenceState,
    Schedule,
    ScheduleStatus,
    ScheduleVersion,
)
from scheduler_app.worker import results
from scheduler_app.worker.rows import build, columns, parents_joined, width


def available() -> bool:
    return connection.vendor == "postgresql"


def _slot(alias: str, scheduled_for: datetime | None) -> str:
    """The partition key's condition for a statement keyed by id (nothing without a slot)."""
    return "" if scheduled_for is None else f"AND {alias}.scheduled_for = %(slot)s"


def _tables() -> dict[str, str]:
    return {
        "occ": Occurrence._meta.db_table,
        "sched": Schedule._meta.db_table,
        "ver": ScheduleVersion._meta.db_table,
        "att": OccurrenceAttempt._meta.db_table,
        "kill": KillSwitch._meta.db_table,
    }


_CONSTANTS: dict[str, str] = {
    "running": OccurrenceState.RUNNING.value,
    "pending": OccurrenceState.PENDING.value,
    "dispatched": OccurrenceState.DISPATCHED.value,
    "retrying": OccurrenceState.RETRYING.value,
    "buffered": OccurrenceState.BUFFERED.value,
    "run": AttemptKind.RUN.value,
    "global": KillSwitchScope.GLOBAL.value,
    "tenant": KillSwitchScope.TENANT.value,
    "by_task": KillSwitchScope.TASK.value,
    "s_cancelled": ScheduleStatus.CANCELLED.value,
    "s_awaiting": ScheduleStatus.AWAITING_APPROVAL.value,
}
"""States, kinds, scopes and statuses: constants of the code, written into the statements'
text (``_constants``), never sent as values."""


def _constants(text: str) -> Statement:
    """``text`` with each ``%(name)s`` of ``_CONSTANTS`` written as its literal.

    A prepared statement may get a generic plan, planned once for any values (always with
    ``plan_cache_mode = force_generic_plan``: docs/deployment.md). Such a plan can use a
    partial index only when the query's own text implies the index's predicate: with
    ``b.state = $n`` the buffered check of ``finish`` cannot read ``occ_open_idx`` and reads
    every occurrence the schedule ever had; with ``b.state = 'buffered'`` it reads the open
    rows alone (as the beat's probe does, ``scheduler_app.dispatch.probe``)."""
    return statement(inline(text, _CONSTANTS))


@dataclass(frozen=True)
class Claimed:
    """What the claim statement saw: the occurrence as it was before the statement (with its
    schedule and version), and, when it won, the new token, attempt number and kill switch."""

    occurrence: Occurrence
    won: bool
    token: int = 0
    attempt: int = 0
    stopped: bool = False


APPROVED = "(cur.s_approved_version = cur.v_version OR cur.v_approved_at IS NOT NULL)"
"""The claim's approval condition when the task needs approval (else ``TRUE``)."""


@cache
def _claim_sql(
    check_task: bool, permission: str, approval: str = "TRUE", slot: str = ""
) -> Statement:
    task = "AND o.task = %(task)s" if check_task else ""
    return _constants(
        """
WITH cur AS (
    SELECT {o_cols}, {s_cols}, {v_cols}
    FROM "{occ}" o JOIN "{sched}" s ON s.id = o.schedule_id {s_join}
        LEFT JOIN "{ver}" v ON v.id = o.schedule_version_id
    WHERE o.id = %(id)s {slot}
), won AS (
    UPDATE "{occ}" o SET state = %(running)s, fencing_token = o.fencing_token + 1,
        attempts = o.attempts + 1, lease_owner = %(owner)s,
        lease_expires_at = %(lease_until)s, started_at = %(now)s
    FROM cur
    WHERE o.id = %(id)s AND o.scheduled_for = cur.o_scheduled_for {slot}
        AND o.fencing_token = cur.o_fencing_token
        AND o.state IN (%(pending)s, %(dispatched)s, %(retrying)s) {task}
        AND o.cancel_requested_at IS NULL
        AND (o.deadline_at IS NULL OR o.deadline_at > %(now)s)
        AND (o.not_before IS NULL OR o.not_before <= %(early)s
            OR (o.state <> %(retrying)s AND o.not_before <= o.scheduled_for))
        AND (o.state <> %(pending)s OR o.publish_lease_until IS NOT NULL)
        AND cur.s_status NOT IN (%(s_cancelled)s, %(s_awaiting)s)
        AND ({approval})
        AND ({permission})
    RETURNING o.id, o.fencing_token, o.attempts, o.scheduled_for
), attempt AS (
    INSERT INTO "{att}" (occurrence_id, scheduled_for, kind, number, worker, started_at,
        outcome, error, "by", note)
    SELECT won.id, won.scheduled_for, %(run)s, won.attempts, %(worker)s, %(now)s,
        '', '', '', '' FROM won
)
SELECT cur.*, won.fencing_token, won.attempts,
    won.attempts IS NOT NULL AND EXISTS (
        SELECT 1 FROM "{kill}" k WHERE k.enabled AND (
            k.scope = %(global)s
            OR (k.scope = %(tenant)s AND k.target = cur.s_tenant)
            OR (k.scope = %(by_task)s AND k.target = cur.o_task)))
FROM cur LEFT JOIN won ON TRUE
""".format(
            o_cols=columns(Occurrence, "o", "o"),
            s_cols=columns(Schedule, "s", "s"),
            s_join=parents_joined(Schedule, "s"),
            v_cols=columns(ScheduleVersion, "v", "v"),
            task=task,
            permission=permission,
            approval=approval,
            slot=slot,
            **_tables(),
        )
    )


def permission_predicate(*, decided: bool, default_check: bool, require_owner: bool) -> str:
    """The claim's permission condition: ``decided`` (checked in Python already), or what the
    default check says without Python (no owner: allowed unless an owner is required)."""
    if decided:
        return "TRUE"
    if not default_check:
        return "FALSE"
    if require_owner:
        return "cur.s_owner_id IS NULL AND cur.s_origin = %(code)s"
    return "cur.s_owner_id IS NULL"


def claim(
    occurrence_id: str,
    *,
    owner: str,
    now: datetime,
    lease: timedelta,
    early: timedelta,
    task: str | None,
    permission: str,
    code_origin: str,
    approval: str = "TRUE",
    scheduled_for: datetime | None = None,
) -> Claimed | None:
    """One statement; None when the occurrence does not exist.

    ``scheduled_for``: the slot the message names (the partition key), or None. A slot that
    no row with this id has (a forged or stale message) costs a second statement, by the
    id alone: the claim never depends on the message's slot being true."""
    params: dict[str, Any] = {
        "id": occurrence_id,
        "slot": scheduled_for,
        "owner": owner,
        "worker": owner[:200],
        "now": now,
        "lease_until": now + lease,
        "early": now + early,
        "task": task,
        "code": code_origin,
    }
    check_task = task is not None
    row = fetch_one(_claim_sql(check_task, permission, approval, _slot("o", scheduled_for)), params)
    if row is None and scheduled_for is not None:
        row = fetch_one(_claim_sql(check_task, permission, approval), params)
    if row is None:
        return None
    return _claimed(row)


def _claimed(row: tuple[Any, ...]) -> Claimed:
    o_end = width(Occurrence)
    s_end = o_end + width(Schedule)
    v_end = s_end + width(ScheduleVersion)
    db = connections[DEFAULT_DB_ALIAS]  # looked up once for the three rows
    occurrence = build(Occurrence, row[:o_end], db)
    occurrence.schedule = build(Schedule, row[o_end:s_end], db)
    if row[s_end] is not None:
        occurrence.schedule_version = build(ScheduleVersion, row[s_end:v_end], db)
    token, attempt, stopped = row[v_end:]
    if token is None:
        return Claimed(occurrence, won=False)
    return Claimed(occurrence, won=True, token=token, attempt=attempt, stopped=bool(stopped))


@dataclass(frozen=True)
class Ended:
    """The occurrence as the outcome left it and its schedule as locked by the statement."""

    occurrence: Occurrence
    schedule: Schedule
    buffered: bool
    """A buffered occurrence of the schedule existed when the statement began."""


def _stored_sql() -> str:
    """The result backend's row, inserted (or updated, as its manager's ``store_result``
    does) only when the outcome ended the attempt: ``worker.results``."""
    names = ", ".join(results.COLUMNS)
    values = ", ".join(f"%(r_{name})s" for name in results.COLUMNS)
    updated = ", ".join(f"{name} = EXCLUDED.{name}" for name in results.COLUMNS[1:])
    return f""", stored AS (
    INSERT INTO "{results.table()}" ({names}, date_created, date_done)
    SELECT {values}, %(now)s, %(now)s WHERE EXISTS (SELECT 1 FROM ended)
    ON CONFLICT (task_id) DO UPDATE SET {updated}, date_done = EXCLUDED.date_done
)"""


@cache
def _finish_sql(with_error: bool, succeeded: bool, with_result: bool = False) -> Statement:
    # The slot is the one the claim read from the row: always known here. ``locked.*`` and
    # ``ended.*`` are the columns in the order the CTEs list them (the models' field order);
    # ``locked.*`` is the schedule as it was before ``noted`` (a success) wrote it.
    # A success clears the error a lost or retried attempt left (its attempt row keeps it).
    last_error = ", last_error = %(error)s" if with_error or succeeded else ""
    noted = (
        """, noted AS (
    UPDATE "{sched}" s SET last_success_at = GREATEST(s.last_success_at, %(now)s)
    WHERE s.id = %(schedule_id)s AND EXISTS (SELECT 1 FROM ended)
)""".format(**_tables())
        if succeeded
        else ""
    ) + (_stored_sql() if with_result else "")
    return _constants(
        """
WITH locked AS (
    SELECT {s_cols} FROM "{sched}" s {s_join} WHERE s.id = %(schedule_id)s FOR UPDATE
), ended AS (
    UPDATE "{occ}" o SET state = %(state)s, reason = %(reason)s, finished_at = %(now)s,
        lease_expires_at = NULL {last_error}
    FROM locked
    WHERE o.id = %(id)s AND o.scheduled_for = %(slot)s AND o.state = %(running)s
        AND o.fencing_token = %(token)s
    RETURNING {o_cols}
), closed AS (
    UPDATE "{att}" a SET finished_at = %(now)s, outcome = %(state)s, error = %(error)s
    WHERE a.occurrence_id = %(id)s AND a.scheduled_for = %(slot)s AND a.kind = %(run)s
        AND a.finished_at IS NULL AND EXISTS (SELECT 1 FROM ended)
){noted}
SELECT locked.*, ended.*, EXISTS (
    SELECT 1 FROM "{occ}" b WHERE b.schedule_id = %(schedule_id)s AND b.state = %(buffered)s)
FROM locked JOIN ended ON TRUE
""".format(
            s_cols=columns(Schedule, "s"),
            s_join=parents_joined(Schedule, "s"),
            o_cols=columns(Occurrence, "o"),
            last_error=last_error,
            noted=noted,
            **_tables(),
        )
    )


def finish(
    occurrence_id: str,
    *,
    scheduled_for: datetime,
    schedule_id: Any,
    token: int,
    state: str,
    reason: str,
    now: datetime,
    error: str,
    result: Mapping[str, Any] | None = None,
) -> Ended | None:
    """End a running attempt that still holds ``token``: one statement that locks the schedule
    (first, as the beat does), ends the occurrence, closes its attempt and, for a success,
    moves the schedule's ``last_success_at`` forward and writes ``result`` (the result
    backend's row, ``worker.results``) when given. None when the attempt lost its lease."""
    params: dict[str, Any] = {
        "id": occurrence_id,
        "slot": scheduled_for,
        "schedule_id": schedule_id,
        "token": token,
        "state": state,
        "reason": reason,
        "now": now,
        "error": storable_error(error),
    }
    succeeded = state == OccurrenceState.SUCCEEDED
    if result is not None:
        params.update((f"r_{name}", result[name]) for name in results.COLUMNS)
    row = fetch_one(_finish_sql(bool(error), succeeded, result is not None), params)
    if row is None:
        return None
    s_end = width(Schedule)
    o_end = s_end + width(Occurrence)
    db = connections[DEFAULT_DB_ALIAS]
    schedule = build(Schedule, row[:s_end], db)
    if succeeded:
        schedule.note_success(now)
    occurrence = build(Occurrence, row[s_end:o_end], db)
    occurrence.schedule = schedule
    return Ended(occurrence, schedule, buffered=bool(row[o_end]))


@cache
def _retry_sql(slot: str) -> Statement:
    return _constants(
        """
WITH moved AS (
    UPDATE "{occ}" o SET state = %(retrying)s, not_before = %(at)s, reason = %(reason)s,
        last_error = %(error)s, lease_expires_at = NULL, dispatched_at = NULL,
        publish_lease_until = NULL
    WHERE o.id = %(id)s {slot} AND o.state = %(running)s AND o.fencing_token = %(token)s
    RETURNING o.id
), closed AS (
    UPDATE "{att}" a SET finished_at = %(now)s, outcome = %(retrying)s, error = %(error)s
    WHERE a.occurrence_id = %(id)s {attempt_slot} AND a.kind = %(run)s
        AND a.finished_at IS NULL AND EXISTS (SELECT 1 FROM moved)
)
SELECT count(*) FROM moved
""".format(slot=slot, attempt_slot=slot.replace("o.", "a.", 1), **_tables())
    )


def retry_later(
    occurrence_id: str,
    *,
    scheduled_for: datetime | None,
    token: int,
    at: datetime,
    now: datetime,
    error: str,
) -> bool:
    """``running -> retrying`` and the attempt closed, in one statement."""
    params: dict[str, Any] = {
        "id": occurrence_id,
        "slot": scheduled_for,
        "token": token,
        "at": at,
        "now": now,
        "error": storable_error(error),
        "reason": "retry",
    }
    row = fetch_one(_retry_sql(_slot("o", scheduled_for)), params)
    moved = row[0] if row is not None else 0
    return bool(moved)
