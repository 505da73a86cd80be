"""A schedule definition, parsed once.

Every way a definition comes in (the services' keywords, ``@scheduled`` through the sync, a
schedule.v1 file, the importers) builds it with ``parse_definition``: the defaults of its
lateness class, the store's defaults, the one canonical form, every check, then the timing,
in that order and in this one place. ``create_schedule(definition=...)`` stores a
``Definition`` as it is: nothing after it validates the fields again. An error names the field
as it was given (``ScheduleValidationError.field``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any

from scheduler_app.definition.canonical import DEFAULTS, normalize_definition
from scheduler_app.definition.schedule import validate_definition
from scheduler_app.definition.text import fields_from_text
from scheduler_app.definition.typed import Policies, policies_of
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.models import SEMANTIC_FIELDS
from scheduler_app.policies.lateness import apply_class_defaults
from scheduler_app.timing import Timing

_PARSED = object()
"""Held by every ``Definition`` that ``parse_definition`` built (and by no other)."""


@dataclass(frozen=True)
class Definition:
    """A checked definition: its stored fields in canonical form, the timing they make and
    its policies, each typed (``policies.misfire``, ``policies.retry``, ...).

    Only ``parse_definition`` builds one: a call of the class raises ``TypeError``, and so does
    ``dataclasses.replace`` (which calls it), since the services store a definition unchecked
    (``stored_as_parsed`` refuses anything else, a look-alike object or a pickled copy
    included). Nothing changes it after the checks: ``columns`` is a copy each time it is
    read, nested payloads included."""

    _fields: Mapping[str, Any] = field(repr=False)
    timing: Timing
    """The rule, zone, DST choices, bounds, window and calendar, evaluated."""
    policies: Policies = field(init=False)
    """Misfire, overlap, retry, deadline, window, DST, routing, payload and safety, typed."""
    _token: object = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        raise TypeError("a Definition is built by parse_definition(...), which checks it")

    def __copy__(self) -> Definition:
        return self  # immutable: a copy is the same checked definition

    def __deepcopy__(self, memo: dict[int, Any]) -> Definition:
        return self

    @property
    def columns(self) -> dict[str, Any]:
        """Every definition field given or defaulted (``SEMANTIC_FIELDS``), as it is stored:
        a copy, so that changing it changes nothing that was checked."""
        return copy.deepcopy(dict(self._fields))


def _built(columns: Mapping[str, Any], timing: Timing) -> Definition:
    """The one way a ``Definition`` is made (by ``parse_definition``, after its checks)."""
    definition = object.__new__(Definition)
    object.__setattr__(definition, "_fields", columns)
    object.__setattr__(definition, "timing", timing)
    object.__setattr__(definition, "policies", policies_of(columns))
    object.__setattr__(definition, "_token", _PARSED)
    return definition


def stored_as_parsed(definition: object) -> Definition:
    """``definition`` when ``parse_definition`` built it; ``TypeError`` otherwise (the services
    store what it holds without checking it again)."""
    if type(definition) is not Definition or definition._token is not _PARSED:
        raise TypeError(
            "definition= takes what parse_definition(...) returned, unchanged; got "
            f"{type(definition).__name__}"
        )
    return definition


def canonical_fields(
    given: Mapping[str, Any],
    *,
    now: datetime,
    current: Mapping[str, Any] | None = None,
    kept: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The definition fields of ``given`` over ``current`` (the stored definition an edit
    starts from) or the defaults, in canonical form, not yet checked.

    The lateness class fills in the policies ``given`` leaves out (on an edit only when the
    class changes); ``kept`` fields are taken as they are, after it. ``now`` picks the anchor
    an RRULE or interval rule leaves out."""
    semantic = {name: value for name, value in given.items() if name in SEMANTIC_FIELDS}
    requested = {**apply_class_defaults(semantic, current=current), **(kept or {})}
    values = {**(DEFAULTS if current is None else current), **requested}
    for required in ("kind", "rule"):  # named as create_schedule names them, not a KeyError
        if values.get(required) in (None, ""):
            raise ScheduleValidationError(required, f"{required} is required", code="required")
    return normalize_definition(values, now)


def parse_definition(
    given: Mapping[str, Any],
    *,
    now: datetime,
    current: Mapping[str, Any] | None = None,
    kept: Mapping[str, Any] | None = None,
) -> Definition:
    """What a person gave, read as ``create_schedule`` reads it (``text=`` in words, the zone
    of an RRULE's ``DTSTART;TZID`` when no ``timezone`` is given), then ``canonical_fields``,
    checked, with its timing; ``ScheduleValidationError`` names the first field that is wrong.
    Fields that are not part of a definition are left out."""
    columns = canonical_fields(fields_from_text(dict(given)), now=now, current=current, kept=kept)
    timing = validate_definition(columns)
    return _built(MappingProxyType(copy.deepcopy(columns)), timing)
