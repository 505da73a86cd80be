"""The ``target`` of a schedule.v1 document: a Celery or django.tasks task, a JOB type resolved
to its task, or an event (``event_type``, ``endpoint``; docs/events.md); then its payload."""

from __future__ import annotations

from typing import Any

from scheduler_app.authoring import jobtypes
from scheduler_app.authoring.options import MAX_PAYLOAD_REF_LENGTH, ROUTING_OPTIONS
from scheduler_app.contract.fields import (
    EVENT_FIELDS,
    TARGET_FIELDS,
    enum_value,
)
from scheduler_app.contract.readers import Collector, shown
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.handoff.allowlist import EVENT_PREFIX, check_event_type, check_target


def parse_target(doc: dict[str, Any], out: Collector, fields: dict[str, Any]) -> None:
    target = out.section(doc, "target", ("type", *TARGET_FIELDS, *EVENT_FIELDS))
    if "target" not in doc:
        out.add(
            "target",
            "required: {'type': 'task', 'task': '<celery task name>'} or "
            "{'type': 'JOB', 'job_type': '<job type>'}",
        )
        return
    kind = enum_value(target.get("type", "job" if "job_type" in target else "task"))
    if kind == "event":
        _event_target(target, out, fields)
        return
    if kind == "job":
        task = _job_task(target, out)
        fields["job_type"] = target.get("job_type")
    elif kind == "task":
        task = target.get("task")
        if not isinstance(task, str) or not task.strip():
            out.add("target.task", "a Celery task name is required, e.g. 'reports.daily'")
            task = None
        if target.get("job_type"):
            out.add("target.job_type", "belongs to JOB targets; use type 'JOB' without 'task'")
        fields["job_type"] = ""
    else:
        out.add(
            "target.type",
            f"unknown target type {target.get('type')!r}; use 'task', 'JOB' or 'event'",
        )
        return
    if isinstance(task, str):
        _allowed(task, out, "target.job_type" if kind == "job" else "target.task")
    fields["task"] = task
    for name in EVENT_FIELDS:
        if name in target:
            out.add(f"target.{name}", "belongs to event targets; use type 'event'")
    fields["options"] = _options(target.get("options", {}), out)
    _payload(target, out, fields)


def _payload(target: dict[str, Any], out: Collector, fields: dict[str, Any]) -> None:
    fields["payload_ref"] = _payload_ref(target.get("payload_ref"), out)
    kwargs = target.get("kwargs", {})
    if not isinstance(kwargs, dict):
        out.add("target.kwargs", "must be a JSON object of keyword arguments")
    fields["kwargs"] = kwargs
    args = target.get("args", [])
    if not isinstance(args, list):
        out.add("target.args", 'must be a JSON list of positional arguments, e.g. [1, "eu"]')
    fields["args"] = args


def _event_target(target: dict[str, Any], out: Collector, fields: dict[str, Any]) -> None:
    """``{"type": "event", "event_type": "contract.deadline_reached", "endpoint": "billing"}``:
    the task ``event:<type>``, the endpoint stored as ``options.endpoint`` (docs/events.md)."""
    for name in ("task", "job_type", "options"):
        if name in target:
            out.add(f"target.{name}", "an event target takes event_type and endpoint instead")
    event_type = target.get("event_type")
    task = None
    if not isinstance(event_type, str) or not event_type:
        out.add("target.event_type", "required: the event type, e.g. 'contract.deadline_reached'")
    else:
        try:
            task = EVENT_PREFIX + event_type
            check_event_type(task)
        except ScheduleValidationError as exc:
            out.add("target.event_type", exc.message)
            task = None
    endpoint = target.get("endpoint")
    if endpoint is not None and (not isinstance(endpoint, str) or not endpoint):
        out.add("target.endpoint", "must be the name of an entry of SCHEDULER_EVENT_ENDPOINTS")
    out.paths["task"] = "target.event_type"
    out.paths["options"] = "target.endpoint"
    fields["task"] = task
    fields["job_type"] = ""
    fields["options"] = {"endpoint": endpoint} if isinstance(endpoint, str) and endpoint else {}
    _payload(target, out, fields)


def _job_task(target: dict[str, Any], out: Collector) -> str | None:
    if "task" in target:
        out.add("target.task", "a JOB target names a job_type, not a task; drop 'task'")
    job_type = target.get("job_type")
    question = ("job_type", job_type if isinstance(job_type, str) else repr(job_type))
    task, refusal = out.answer(question, lambda: jobtypes.resolve(job_type))
    if refusal is not None:
        out.add("target.job_type", refusal)
    return task


def _allowed(task: str, out: Collector, path: str) -> None:
    _, refusal = out.answer(("target", task), lambda: check_target(task))
    if refusal is not None:
        out.add(path, refusal if path == "target.task" else f"task {task!r}: {refusal}")


def _payload_ref(value: Any, out: Collector) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > MAX_PAYLOAD_REF_LENGTH or not value.isprintable():
        out.add(
            "target.payload_ref",
            f"must be a printable string of at most {MAX_PAYLOAD_REF_LENGTH} characters, "
            "e.g. 'state://sync-source-42'",
        )
        return ""
    return value


def _options(value: Any, out: Collector) -> dict[str, Any]:
    if not isinstance(value, dict):
        out.add("target.options", "must be an object of routing options, e.g. {'queue': 'io'}")
        return {}
    for name, option in sorted(value.items()):
        expected = ROUTING_OPTIONS.get(name)
        if expected is None:
            allowed = ", ".join(ROUTING_OPTIONS)
            out.add(f"target.options.{shown(name)}", f"unknown routing option; use {allowed}")
        elif not isinstance(option, expected) or isinstance(option, bool):
            kind = "a whole number" if expected is int else "a string"
            out.add(f"target.options.{name}", f"must be {kind}, got {option!r}")
        elif name == "priority" and isinstance(option, int) and not 0 <= option <= 255:
            out.add("target.options.priority", f"must be 0-255, got {option!r}")
    return value
