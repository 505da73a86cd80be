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
from scheduler_app.models import SEMANTIC_FIELDS
from scheduler_app.policies.lateness import apply_class_defaults
from scheduler_app.timing import Timing

_PARSED = object()
"""Held by every ``Definition`` that ``parse_definition`` built (and by no other)."""


@dataclass(frozen=True)
class Definition:
    """A checked definition: its stored fields in canonical form, and the timing they make.

    Only ``parse_definition`` builds one (built otherwise it raises ``TypeError``: the
    services store it unchecked), and nothing changes it after the checks: ``columns`` is a
    copy each time it is read, nested payloads included."""

    _fields: Mapping[str, Any] = field(repr=False)
    timing: Timing
    """The rule, zone, DST choices, bounds, window and calendar, evaluated."""
    _token: object = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self._token is not _PARSED:
            raise TypeError("a Definition is built by parse_definition(...), which checks it")

    @property
    def columns(self) -> dict[str, Any]:
        """Every definition field given or defaulted (``SEMANTIC_FIELDS``), as it is stored:
        a copy, so that changing it changes nothing that was checked."""
        return copy.deepcopy(dict(self._fields))


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
    return normalize_definition({**(DEFAULTS if current is None else current), **requested}, now)


def parse_definition(
    given: Mapping[str, Any],
    *,
    now: datetime,
    current: Mapping[str, Any] | None = None,
    kept: Mapping[str, Any] | None = None,
) -> Definition:
    """``canonical_fields``, checked, with its timing; ``ScheduleValidationError`` names the
    first field that is wrong. Fields that are not part of a definition are left out."""
    columns = canonical_fields(given, now=now, current=current, kept=kept)
    timing = validate_definition(columns)
    return Definition(MappingProxyType(copy.deepcopy(columns)), timing, _PARSED)
