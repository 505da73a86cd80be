"""The schedule contract ``schedule.v1``: schedules as JSON documents, exported and imported.

See docs/contract.md for the format. Export reads the database; import parses every document,
collects every problem with its path (``schedules[3].timing.rule``), and applies nothing unless
the whole file is valid, in one transaction, through the service layer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from django.contrib.auth import get_user_model
from django.db import transaction

from scheduler_app import importing
from scheduler_app.clock import Clock, SystemClock
from scheduler_app.definitions import CHOICE_FIELDS, validate_definition
from scheduler_app.errors import SchedulerError, ScheduleStateError, ScheduleValidationError
from scheduler_app.importing import Desired, Plan, Problem
from scheduler_app.models import SEMANTIC_FIELDS, Schedule
from scheduler_app.services import DEFAULTS, normalize_definition
from scheduler_app.timing import get_zone, parse_duration

CONTRACT = "schedule.v1"
TIMING_FIELDS = {  # contract name -> model field
    "kind": "kind",
    "rule": "rule",
    "timezone": "timezone",
    "anchor": "anchor",
    "starts_at": "starts_at",
    "ends_at": "ends_at",
    "max_count": "max_count",
    "interval_mode": "interval_mode",
}
DST_FIELDS = {"nonexistent": "dst_nonexistent", "ambiguous": "dst_ambiguous"}
POLICY_FIELDS = {
    "misfire": "misfire_policy",
    "max_lateness": "max_lateness",
    "catch_up_window": "catch_up_window",
    "catch_up_limit": "catch_up_limit",
    "overlap": "overlap_policy",
    "on_pause": "on_pause",
    "deadline": "deadline",
    "jitter": "jitter",
    "max_attempts": "max_attempts",
    "retry_delay": "retry_delay",
    "cancel_grace": "cancel_grace",
    "mode": "mode",
    "expected_every": "expected_every",
}
SECONDS_POLICIES = (
    "max_lateness",
    "catch_up_window",
    "deadline",
    "jitter",
    "retry_delay",
    "cancel_grace",
    "expected_every",
)
NULLABLE_SECONDS = ("deadline", "expected_every")
COUNT_POLICIES = ("catch_up_limit", "max_attempts")
INFORMATIONAL = ("version", "next_run_at", "created_at", "updated_at")
TOP_FIELDS = {
    "contract",
    "schedule_id",
    "tenant_id",
    "owner_ref",
    "target",
    "timing",
    "policies",
    "objective",
    "name",
    "key",
    "status",
    *INFORMATIONAL,
}
# Model field (or engine sub-field) -> where it lives in a document, for error paths.
FIELD_PATHS = {
    **{model: f"timing.{name}" for name, model in TIMING_FIELDS.items()},
    **{model: f"timing.dst.{name}" for name, model in DST_FIELDS.items()},
    **{model: f"policies.{name}" for name, model in POLICY_FIELDS.items()},
    "task": "target.task",
    "kwargs": "target.kwargs",
    "cron": "timing.rule",
    "rrule": "timing.rule",
    "every": "timing.rule",
    "at": "timing.rule",
    "dst": "timing.dst",
    "tenant": "tenant_id",
    "owner": "owner_ref",
}


# -- export ----------------------------------------------------------------------------------


def export_document(schedule: Schedule) -> dict[str, Any]:
    """One schedule as a ``schedule.v1`` document (keys in a fixed, documented order)."""
    return {
        "contract": CONTRACT,
        "schedule_id": str(schedule.pk),
        "tenant_id": schedule.tenant,
        "owner_ref": schedule.owner.get_username() if schedule.owner else None,
        "key": schedule.key,
        "name": schedule.name,
        "objective": schedule.objective,
        "target": {"type": "task", "task": schedule.task, "kwargs": _sorted(schedule.kwargs)},
        "timing": {
            **{name: _json(getattr(schedule, model)) for name, model in TIMING_FIELDS.items()},
            "dst": {name: getattr(schedule, model) for name, model in DST_FIELDS.items()},
        },
        "policies": {name: getattr(schedule, model) for name, model in POLICY_FIELDS.items()},
        "status": schedule.status,
        **{name: _json(getattr(schedule, name)) for name in INFORMATIONAL},
    }


def export_file(schedules: Iterable[Schedule]) -> str:
    """The whole file: stable order (creation, then id) and formatting, one trailing newline."""
    ordered = sorted(schedules, key=lambda s: (s.created_at, str(s.pk)))
    body = {"contract": CONTRACT, "schedules": [export_document(s) for s in ordered]}
    return json.dumps(body, indent=2, ensure_ascii=False) + "\n"


def export_all() -> str:
    return export_file(Schedule.objects.select_related("owner"))


def _json(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
    return value


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


# -- import: parsing -------------------------------------------------------------------------


class ContractError(SchedulerError):
    """A file that is not valid ``schedule.v1``; ``problems`` lists every error with its path."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


def read_documents(text: str) -> list[Any]:
    """The documents of a file: a list, or ``{"contract": "schedule.v1", "schedules": [...]}``."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ContractError([Problem("file", "", f"not valid JSON: {exc}")]) from None
    except RecursionError:
        raise ContractError(
            [Problem("file", "", "JSON nested too deeply; a document is at most a few levels")]
        ) from None
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and isinstance(data.get("schedules"), list):
        if data.get("contract") != CONTRACT:
            raise ContractError([Problem("file", "contract", f"must be {CONTRACT!r}")])
        return list(data["schedules"])
    raise ContractError(
        [
            Problem(
                "file", "", f'expected a list or {{"contract": "{CONTRACT}", "schedules": [...]}}'
            )
        ]
    )


class _Collector:
    """Gathers the problems of one document instead of stopping at the first."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.problems: list[Problem] = []

    def add(self, path: str, message: str) -> None:
        self.problems.append(Problem(self.label, path, message))

    def section(self, doc: dict[str, Any], name: str, allowed: Iterable[str]) -> dict[str, Any]:
        value = doc.get(name, {})
        if not isinstance(value, dict):
            self.add(name, "must be an object")
            return {}
        for unknown in sorted(set(value) - set(allowed)):
            self.add(f"{name}.{_shown(unknown)}", "unknown field; see docs/contract.md")
        return value


def _shown(name: str) -> str:
    """A field name from the file, safe to print: short, and quoted when it is not plain text."""
    if name.isprintable() and len(name) <= 40 and name.strip() == name and name:
        return name
    return repr(name[:40]) + ("..." if len(name) > 40 else "")


def parse_document(doc: Any, label: str) -> tuple[Desired | None, list[Problem]]:
    """A document to a ``Desired`` schedule, or every structural problem found in it."""
    out = _Collector(label)
    if not isinstance(doc, dict):
        out.add("", "a document must be a JSON object")
        return None, out.problems
    for unknown in sorted(set(doc) - TOP_FIELDS):
        out.add(_shown(unknown), "unknown field; see docs/contract.md")
    if doc.get("contract", CONTRACT) != CONTRACT:
        out.add("contract", f"unsupported contract {doc.get('contract')!r}; expected {CONTRACT!r}")
    fields: dict[str, Any] = {}
    _target(doc, out, fields)
    _timing(doc, out, fields)
    _policies(doc, out, fields)
    _descriptive(doc, out, fields)
    schedule_id = _uuid(doc.get("schedule_id"), out)
    status = doc.get("status", "active")
    if status not in importing.SETTABLE_STATUSES:
        out.add("status", f"must be one of {', '.join(importing.SETTABLE_STATUSES)}")
    if out.problems:
        _check_the_rest(fields, out)
        return None, out.problems
    keep = frozenset() if "anchor" in doc.get("timing", {}) else frozenset({"anchor"})
    desired = Desired(
        label=label, fields=fields, status=status, schedule_id=schedule_id, keep_existing=keep
    )
    return desired, []


def _check_the_rest(fields: dict[str, Any], out: _Collector) -> None:
    """A document already has problems: still validate its other fields, to report them all."""
    reported = {problem.path for problem in out.problems}
    bad = {model for model, path in FIELD_PATHS.items() if path in reported}
    usable = {k: v for k, v in fields.items() if k in SEMANTIC_FIELDS and k not in bad}
    if usable.get("kind") in (None, "") or usable.get("rule") in (None, ""):
        return
    values = {**DEFAULTS, **usable}
    try:
        validate_definition(normalize_definition(values, _PLACEHOLDER_NOW))
    except ScheduleValidationError as exc:
        path = FIELD_PATHS.get(exc.field.split(".", 1)[0], exc.field)
        if path not in reported:
            message = exc.message if "." not in exc.field else f"{exc.field}: {exc.message}"
            out.add(path, message)


_PLACEHOLDER_NOW = datetime(2000, 1, 1, tzinfo=UTC)
"""Only fills a missing anchor while checking a document that is rejected anyway."""


def _target(doc: dict[str, Any], out: _Collector, fields: dict[str, Any]) -> None:
    target = out.section(doc, "target", ("type", "task", "kwargs"))
    if "target" not in doc:
        out.add("target", "required: {'type': 'task', 'task': '<celery task name>'}")
    if target.get("type", "task") != "task":
        out.add("target.type", "only 'task' targets exist in schedule.v1")
    task = target.get("task")
    if "target" in doc and (not isinstance(task, str) or not task.strip()):
        out.add("target.task", "a Celery task name is required, e.g. 'reports.daily'")
    kwargs = target.get("kwargs", {})
    if not isinstance(kwargs, dict):
        out.add("target.kwargs", "must be a JSON object of keyword arguments")
    fields.update(task=task, kwargs=kwargs)


def _timing(doc: dict[str, Any], out: _Collector, fields: dict[str, Any]) -> None:
    timing = out.section(doc, "timing", (*TIMING_FIELDS, "dst"))
    for name in ("kind", "rule"):
        if timing.get(name) in (None, ""):
            out.add(f"timing.{name}", "required")
    for name in ("kind", "rule", "timezone", "interval_mode"):
        value = timing.get(name)
        if value is not None and not (
            isinstance(value, str) or (name == "rule" and _is_int(value))
        ):
            out.add(f"timing.{name}", f"must be a string, got {value!r}")
    if isinstance(timing.get("timezone"), str):
        try:
            get_zone(timing["timezone"])
        except ScheduleValidationError as exc:
            out.add("timing.timezone", exc.message)
    for name in ("anchor", "starts_at", "ends_at"):
        if timing.get(name) is not None:
            fields[name] = _instant(timing[name], f"timing.{name}", out)
    max_count = timing.get("max_count")
    if max_count is not None and (not _is_int(max_count) or max_count < 1):
        out.add("timing.max_count", f"must be a whole number >= 1 or null, got {max_count!r}")
    for name, model in TIMING_FIELDS.items():
        if name in timing and model not in fields:
            fields[model] = str(timing[name]) if name == "rule" else timing[name]
    dst = out.section(timing, "dst", DST_FIELDS) if "dst" in timing else {}
    for name, model in DST_FIELDS.items():
        if name in dst:
            fields[model] = dst[name]


def _policies(doc: dict[str, Any], out: _Collector, fields: dict[str, Any]) -> None:
    policies = out.section(doc, "policies", POLICY_FIELDS)
    for name, model in POLICY_FIELDS.items():
        if name not in policies:
            continue
        value = policies[name]
        if name in SECONDS_POLICIES:
            value = _seconds(value, f"policies.{name}", out, nullable=name in NULLABLE_SECONDS)
        elif name in COUNT_POLICIES and (not _is_int(value) or value < 1):
            out.add(f"policies.{name}", f"must be a whole number >= 1, got {value!r}")
        elif name not in COUNT_POLICIES and not isinstance(value, str):
            out.add(f"policies.{name}", f"must be a string, got {value!r}")
        fields[model] = value
    _choices(fields, out)


def _choices(fields: dict[str, Any], out: _Collector) -> None:
    for model, choices in CHOICE_FIELDS.items():
        value = fields.get(model)
        if isinstance(value, str) and value not in choices.values:
            allowed = ", ".join(choices.values)
            out.add(FIELD_PATHS[model], f"unknown value {value!r}; use one of: {allowed}")


def _descriptive(doc: dict[str, Any], out: _Collector, fields: dict[str, Any]) -> None:
    for name, model, limit in (
        ("name", "name", 200),
        ("key", "key", 200),
        ("tenant_id", "tenant", 100),
    ):
        value = doc.get(name)
        if value is not None and (not isinstance(value, str) or len(value) > limit):
            out.add(name, f"must be a string of at most {limit} characters")
        fields[model] = value if name == "key" else (value or "")
    if doc.get("key") == "":
        fields["key"] = None
    objective = doc.get("objective", "")
    if not isinstance(objective, str) and objective is not None:
        out.add("objective", "must be a string")
    fields["objective"] = objective or ""
    fields["owner"] = _owner(doc.get("owner_ref"), out)


def _owner(ref: Any, out: _Collector) -> Any:
    if ref in (None, ""):
        return None
    user_model = get_user_model()
    owner = user_model._default_manager.filter(**{user_model.USERNAME_FIELD: ref}).first()
    if owner is None:
        out.add("owner_ref", f"no user {ref!r}; create the user first or drop owner_ref")
    return owner


def _uuid(value: Any, out: _Collector) -> UUID | None:
    if value in (None, ""):
        return None
    try:
        return UUID(str(value))
    except ValueError:
        out.add("schedule_id", f"{value!r} is not a UUID")
        return None


def _instant(value: Any, path: str, out: _Collector) -> datetime | None:
    text = value.strip() if isinstance(value, str) else None
    try:
        parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text and text[-1] in "Zz" else text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        out.add(path, f"{value!r} is not an ISO 8601 instant, e.g. 2026-03-29T02:30:00Z")
        return None
    if parsed.tzinfo is None:
        out.add(path, f"{value!r} has no UTC offset; add one, e.g. Z or +02:00")
        return None
    return parsed


def _seconds(value: Any, path: str, out: _Collector, *, nullable: bool) -> Any:
    if value is None and nullable:
        return None
    if _is_int(value) and value >= 0:
        return value
    if isinstance(value, str):
        try:
            return int(parse_duration(value, path).total_seconds())
        except ScheduleValidationError as exc:
            out.add(path, exc.message)
            return None
    out.add(path, f"must be a whole number of seconds >= 0 or a duration like '15m', got {value!r}")
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# -- import: planning and applying ------------------------------------------------------------


@dataclass(frozen=True)
class ImportResult:
    plan: Plan
    applied: bool


def plan_import(text: str, now: datetime) -> Plan:
    """Parse and compare every document; the plan's problems list every error of the file."""
    documents = read_documents(text)
    desired: list[Desired] = []
    problems: list[Problem] = []
    for index, doc in enumerate(documents):
        item, found = parse_document(doc, f"schedules[{index}]")
        problems.extend(found)
        if item is not None:
            desired.append(item)
    result = importing.plan(desired, now, field_paths=FIELD_PATHS)
    all_problems = sorted([*problems, *result.problems], key=_problem_order)
    return Plan(result.changes, tuple(all_problems))


def _problem_order(problem: Problem) -> tuple[int, str]:
    index = problem.label.removeprefix("schedules[").rstrip("]")
    return (int(index) if index.isdigit() else -1, problem.path)


def import_text(text: str, *, dry_run: bool = False, clock: Clock | None = None) -> ImportResult:
    """Import a file: all of it, or (on any problem) none of it. Raises ``ContractError``."""
    clock = clock or SystemClock()
    with transaction.atomic():
        result = plan_import(text, clock.now())
        if result.problems:
            raise ContractError(result.problems)
        if dry_run:
            return ImportResult(result, applied=False)
        try:
            importing.apply(result.changes, clock=clock)
        except (ScheduleValidationError, ScheduleStateError) as exc:
            # The plan was checked; a failure here (a race) still rolls everything back.
            raise ContractError([Problem("file", "", str(exc))]) from exc
    return ImportResult(result, applied=True)
