"""``schedule.v1`` documents (either style, or a mix) to ``Desired`` schedules.

Every problem of a document is collected with its path (``schedules[3].timing.rule``) instead of
stopping at the first, so one run of the importer shows everything to fix.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from scheduler_app.authoring.importing import Desired, Problem, field_message
from scheduler_app.contract import readers
from scheduler_app.contract.export import looks_like_uuid
from scheduler_app.contract.fields import (
    BOOLEAN_POLICIES,
    CONTRACT,
    COUNT_POLICIES,
    DST_FIELDS,
    ENUM_FIELDS,
    FIELD_PATHS,
    INFORMATIONAL,
    NULLABLE_COUNTS,
    NULLABLE_SECONDS,
    ORIGINS,
    POLICY_FIELDS,
    SPEC_TOP_POLICIES,
    TIMING_FIELDS,
    TOP_FIELDS,
    enum_value,
)
from scheduler_app.contract.readers import Collector, shown
from scheduler_app.contract.targets import parse_target
from scheduler_app.definition.canonical import SECONDS_FIELDS
from scheduler_app.definition.parsed import parse_definition
from scheduler_app.definition.schedule import CHOICE_FIELDS
from scheduler_app.errors import SchedulerError, ScheduleValidationError
from scheduler_app.models import SEMANTIC_FIELDS, LatenessClass
from scheduler_app.policies.lateness import apply_class_defaults
from scheduler_app.policies.limits import check_text
from scheduler_app.timing import Ambiguous, Kind, Nonexistent, get_zone

OTHER_CHOICES: dict[str, list[str]] = {
    "kind": [k.value for k in Kind],
    "dst_nonexistent": [v.value for v in Nonexistent],
    "dst_ambiguous": [v.value for v in Ambiguous],
    "window_policy": ["defer", "skip"],
    "lateness_class": ["", *LatenessClass.values],
}


class ContractError(SchedulerError):
    """A file that is not valid ``schedule.v1``; ``problems`` lists every error with its path."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


def read_documents(text: str) -> list[Any]:
    """The documents of a file: a list, or ``{"contract": "schedule.v1", "schedules": [...]}``."""
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise file_error(f"not valid JSON: {exc}") from None
    except _NotJSON as exc:
        raise file_error(str(exc)) from None
    except RecursionError:
        raise file_error("JSON nested too deeply; a document is at most a few levels") from None
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and isinstance(data.get("schedules"), list):
        if data.get("contract") != CONTRACT:
            raise file_error(f"must be {CONTRACT!r}", "contract")
        return list(data["schedules"])
    if isinstance(data, dict) and "target" in data and "timing" in data:
        return [data]  # one document on its own, as the specification shows it
    raise file_error(f'expected a list or {{"contract": "{CONTRACT}", "schedules": [...]}}')


def file_error(message: str, path: str = "") -> ContractError:
    """A problem of the file as a whole rather than of one of its documents."""
    return ContractError([Problem("file", path, message)])


class _NotJSON(ValueError):
    """What Python's parser accepts and JSON does not."""


def _refuse_constant(name: str) -> Any:
    raise _NotJSON(f"not valid JSON: {name} is not a JSON number; use a number or null")


def parse_document(
    doc: Any, label: str, memo: dict[Any, Any] | None = None
) -> tuple[Desired | None, list[Problem]]:
    """A document to a ``Desired`` schedule, or every problem found in it.

    ``memo``: share one dict across the documents of a file, so the allowlist and the
    job-type registry are asked once per name, not once per document.
    """
    out = Collector(label, memo)
    if not isinstance(doc, dict):
        out.add("", "a document must be a JSON object")
        return None, out.problems
    for unknown in sorted(set(doc) - TOP_FIELDS):
        out.add(shown(unknown), "unknown field; see docs/contract.md")
    if doc.get("contract", CONTRACT) != CONTRACT:
        out.add("contract", f"unsupported contract {doc.get('contract')!r}; expected {CONTRACT!r}")
    fields: dict[str, Any] = {}
    parse_target(doc, out, fields)
    _timing(doc, out, fields)
    _policies(doc, out, fields)
    _descriptive(doc, out, fields)
    schedule_id = _identity(doc, out, fields)
    expected_version = _informational(doc, out)
    status = readers.status(doc.get("status", "active"), out)
    if out.problems:
        _check_the_rest(fields, out)
        return None, out.problems
    timing = doc.get("timing", {})
    keep = frozenset() if "anchor" in timing else frozenset({"anchor"})
    desired = Desired(
        label=label,
        fields=fields,
        status=status,
        schedule_id=schedule_id,
        keep_existing=keep,
        expected_version=expected_version,
    )
    return desired, []


def _check_the_rest(fields: dict[str, Any], out: Collector) -> None:
    """A document already has problems: still validate its other fields, to report them all."""
    reported = {problem.path for problem in out.problems}
    if "target.job_type" in reported:  # no task resolved: "task is required" says nothing new
        reported.add("target.task")
    paths = {**FIELD_PATHS, **out.paths}
    bad = {model for model, path in paths.items() if path in reported}
    usable = {k: v for k, v in fields.items() if k in SEMANTIC_FIELDS and k not in bad}
    if usable.get("kind") in (None, "") or usable.get("rule") in (None, ""):
        return
    usable.pop("lateness_class", None)
    try:
        parse_definition(usable, now=_PLACEHOLDER_NOW)
    except ScheduleValidationError as exc:
        path = paths.get(exc.field.split(".", 1)[0], exc.field)
        if path not in reported:
            out.add(path, field_message(exc))


_PLACEHOLDER_NOW = datetime(2000, 1, 1, tzinfo=UTC)
"""Only fills a missing anchor while checking a document that is rejected anyway."""


def _timing(doc: dict[str, Any], out: Collector, fields: dict[str, Any]) -> None:
    timing = out.section(doc, "timing", (*TIMING_FIELDS, "dst"))
    for name in ("kind", "rule"):
        if timing.get(name) in (None, ""):
            out.add(f"timing.{name}", "required")
    strings = ("kind", "rule", "timezone", "interval_mode", "active_window", "window_policy")
    for name in (*strings, "exclude_holidays"):
        value = timing.get(name)
        # required, or "" means none
        nullable = name in ("kind", "rule", "active_window", "exclude_holidays")
        if (value is not None or (name in timing and not nullable)) and not (
            isinstance(value, str) or (name == "rule" and readers.is_int(value))
        ):
            out.add(f"timing.{name}", f"must be a string, got {value!r}")
    if isinstance(timing.get("timezone"), str):
        try:
            get_zone(timing["timezone"])
        except ScheduleValidationError as exc:
            out.add("timing.timezone", exc.message)
    for name in ("anchor", "starts_at", "ends_at"):
        if timing.get(name) is not None:
            fields[name] = readers.instant(timing[name], f"timing.{name}", out)
    max_count = timing.get("max_count")
    if max_count is not None and (not readers.is_int(max_count) or max_count < 1):
        out.add("timing.max_count", f"must be a whole number >= 1 or null, got {max_count!r}")
    for name, model in TIMING_FIELDS.items():
        if name in timing and model not in fields:
            value = timing[name]
            fields[model] = str(value) if name == "rule" else value
    for name in ("active_window", "exclude_holidays"):
        if fields.get(name) is None and name in fields:
            fields[name] = ""
    dst = out.section(timing, "dst", DST_FIELDS) if "dst" in timing else {}
    for name, model in DST_FIELDS.items():
        if name in dst:
            fields[model] = dst[name]
            if not isinstance(dst[name], str):
                out.add(f"timing.dst.{name}", f"must be a string, got {dst[name]!r}")


# -- policies --------------------------------------------------------------------------------


def _policies(doc: dict[str, Any], out: Collector, fields: dict[str, Any]) -> None:
    policies = dict(out.section(doc, "policies", POLICY_FIELDS))
    for top, inner in SPEC_TOP_POLICIES.items():
        if top not in doc:
            continue
        if inner in policies and _same(policies[inner], doc[top]) is False:
            out.add(top, f"given twice, as {top} and policies.{inner}, with different values")
        policies[inner] = doc[top]
    given = doc.get("policies")
    nested: dict[str, Any] = given if isinstance(given, dict) else {}
    for name, model in POLICY_FIELDS.items():
        if name not in policies:
            continue
        path = f"policies.{name}" if name in nested else _top_path(name)
        out.paths[model] = path
        fields[model] = _policy(name, policies[name], path, out)
    for model in ENUM_FIELDS:
        if model in fields:
            fields[model] = enum_value(fields[model], model)
    _choices(fields, out)


def _top_path(name: str) -> str:
    return next((top for top, inner in SPEC_TOP_POLICIES.items() if inner == name), name)


def _same(inner: Any, top: Any) -> bool | None:
    """Whether two spellings of one policy agree (``"SKIP"`` and ``"skip"``, 900 and ``"15m"``)."""
    if isinstance(inner, str) and isinstance(top, str) and enum_value(inner) == enum_value(top):
        return True
    try:
        return readers.as_seconds(inner) == readers.as_seconds(top)
    except (ScheduleValidationError, TypeError, ValueError):
        return inner == top


def _policy(name: str, value: Any, path: str, out: Collector) -> Any:
    if name in SECONDS_FIELDS:
        return readers.seconds(value, path, out, nullable=name in NULLABLE_SECONDS)
    if name in COUNT_POLICIES or name in NULLABLE_COUNTS:
        if value is None and name in NULLABLE_COUNTS:
            return None
        if not readers.is_int(value) or value < 1:
            nullable = " or null" if name in NULLABLE_COUNTS else ""
            out.add(path, f"must be a whole number >= 1{nullable}, got {value!r}")
        return value
    if name in BOOLEAN_POLICIES:
        if not isinstance(value, bool):
            out.add(path, f"must be true or false, got {value!r}")
        return value
    if name == "lateness_class" and value is None:
        return ""
    if not isinstance(value, str):
        out.add(path, f"must be a string, got {value!r}")
    return value


def _choices(fields: dict[str, Any], out: Collector) -> None:
    choices = {model: list(enum.values) for model, enum in CHOICE_FIELDS.items()}
    for model, allowed in {**choices, **OTHER_CHOICES}.items():
        value = fields.get(model)
        if model == "lateness_class" and value == "real_time":
            try:
                apply_class_defaults({"lateness_class": value})
            except ScheduleValidationError as exc:
                out.add(out.paths.get(model, FIELD_PATHS[model]), exc.message)
        elif isinstance(value, str) and value not in allowed:
            shown = ", ".join(v for v in allowed if v)
            where = out.paths.get(model, FIELD_PATHS[model])
            out.add(where, f"unknown value {value!r}; use one of: {shown}")


# -- who, what, which ------------------------------------------------------------------------


def _descriptive(doc: dict[str, Any], out: Collector, fields: dict[str, Any]) -> None:
    for name, model, limit in (("name", "name", 200), ("tenant_id", "tenant", 100)):
        value = doc.get(name)
        if value is not None and (not isinstance(value, str) or len(value) > limit):
            out.add(name, f"must be a string of at most {limit} characters")
        fields[model] = value or ""
    objective = doc.get("objective", "")
    if not isinstance(objective, str) and objective is not None:
        out.add("objective", "must be a string")
    fields["objective"] = objective or ""
    fields["owner"] = readers.owner(doc.get("owner_ref"), out)
    origin = enum_value(doc.get("origin") or "api")
    if origin not in ORIGINS:
        out.add("origin", f"unknown origin {doc.get('origin')!r}; use one of: {', '.join(ORIGINS)}")
    fields["origin"] = origin


def _identity(doc: dict[str, Any], out: Collector, fields: dict[str, Any]) -> UUID | None:
    """``schedule_id`` (a UUID, or an external id: the key), ``uuid`` and ``key``."""
    raw_id, key = doc.get("schedule_id"), doc.get("key")
    if key is not None and (not isinstance(key, str) or len(key) > 200):
        out.add("key", "must be a string of at most 200 characters")
        key = None
    schedule_id = readers.uuid(doc.get("uuid"), "uuid", out)
    if raw_id not in (None, ""):
        if not isinstance(raw_id, str | int) or isinstance(raw_id, bool) or len(str(raw_id)) > 200:
            out.add("schedule_id", "must be a UUID or an external id of at most 200 characters")
        elif looks_like_uuid(str(raw_id)):
            from_id = UUID(str(raw_id))
            if schedule_id is not None and schedule_id != from_id:
                out.add("uuid", f"disagrees with schedule_id {raw_id!r}; drop one of them")
            schedule_id = from_id
        elif key not in (None, "") and key != str(raw_id):
            out.add("key", f"{key!r} disagrees with schedule_id {raw_id!r}, which is the key")
        else:
            key = str(raw_id)
    try:  # NUL or a lone surrogate: no database can look it up, let alone store it
        check_text("key", key)
    except ScheduleValidationError as exc:
        out.add("schedule_id" if key == raw_id else "key", exc.message)
        key = None
    fields["key"] = key or None
    return schedule_id


def _informational(doc: dict[str, Any], out: Collector) -> int | None:
    """Read-only fields: checked for shape, never stored; ``version`` kept for the
    optional optimistic-concurrency check."""
    version = doc.get("version")
    if version is not None and (not readers.is_int(version) or version < 1):
        out.add("version", f"must be a whole number >= 1 or null, got {version!r}")
        version = None
    for name in INFORMATIONAL[1:]:
        if doc.get(name) is not None:
            readers.instant(doc[name], name, out)
    return version
