"""A checked definition's policies, each as its own small type: ``definition.policies``.

``parse_definition`` reads the stored fields once into these values, so code that works with a
definition (a form of your own, a dry run, a review) reads ``policies.misfire.window`` as a
``timedelta`` instead of a column name and a number of seconds. The misfire, overlap, retry,
deadline and window values are the ones ``@scheduled`` takes (``misfire=CatchUp(...)``), so a
value read here can be given back; the DST, routing, payload and safety values are read only
(``@scheduled`` takes their flat keywords). Nothing here checks a value: ``parse_definition``
checked the fields before they are read.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from types import MappingProxyType
from typing import Any

from scheduler_app.definition.policies import (
    CancelPrevious,
    CatchUp,
    Deadline,
    FireOnce,
    Overlap,
    Retry,
    Skip,
    Window,
)


@dataclass(frozen=True)
class Dst:
    """What a wall time that does not exist (``nonexistent``) or exists twice (``ambiguous``)
    on a DST change does."""

    nonexistent: str
    ambiguous: str


@dataclass(frozen=True)
class Routing:
    """Where the messages go: Celery's ``send_task`` options (None: the task's own routing)."""

    queue: str | None = None
    routing_key: str | None = None
    exchange: str | None = None
    priority: int | None = None


@dataclass(frozen=True)
class Payload:
    """What the task is called with: ``args`` and ``kwargs`` (copies), or a ``ref`` it reads."""

    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    ref: str


@dataclass(frozen=True)
class Safety:
    """How far a schedule may run: ``mode`` (live, shadow, dry_run), a daily cap, a pause after
    consecutive failures, and what a pause does to slots already made."""

    mode: str
    max_per_day: int | None
    pause_after_failures: int | None
    on_pause: str


@dataclass(frozen=True)
class Policies:
    """Every policy of one checked definition, typed."""

    misfire: Skip | FireOnce | CatchUp
    overlap: Overlap | CancelPrevious
    retry: Retry
    deadline: Deadline | None
    """None: an occurrence has no deadline."""
    window: Window | None
    """None: no active window, every slot runs when it falls."""
    dst: Dst
    routing: Routing
    payload: Payload
    safety: Safety


def _seconds(value: Any) -> timedelta | None:
    return None if value is None else timedelta(seconds=int(value))


def _misfire(columns: Mapping[str, Any]) -> Skip | FireOnce | CatchUp:
    lateness = _seconds(columns["max_lateness"])
    policy = columns["misfire_policy"]
    if policy == CatchUp.choice:
        return CatchUp(
            window=_seconds(columns["catch_up_window"]),
            limit=columns["catch_up_limit"],
            max_lateness=lateness,
        )
    return (
        FireOnce(max_lateness=lateness)
        if policy == FireOnce.choice
        else Skip(max_lateness=lateness)
    )


def policies_of(columns: Mapping[str, Any]) -> Policies:
    """The typed policies of a checked definition's stored fields (``Definition.columns``)."""
    overlap = columns["overlap_policy"]
    options = columns.get("options") or {}
    deadline = _seconds(columns.get("deadline"))
    return Policies(
        misfire=_misfire(columns),
        overlap=(
            CancelPrevious(grace=_seconds(columns["cancel_grace"]))
            if overlap == CancelPrevious.choice
            else Overlap(policy=overlap)
        ),
        retry=Retry(max_attempts=columns["max_attempts"], delay=_seconds(columns["retry_delay"])),
        deadline=None if deadline is None else Deadline(after=deadline),
        window=(
            Window(hours=columns["active_window"], policy=columns["window_policy"])
            if columns.get("active_window")
            else None
        ),
        dst=Dst(nonexistent=columns["dst_nonexistent"], ambiguous=columns["dst_ambiguous"]),
        routing=Routing(**{name: options.get(name) for name in Routing.__dataclass_fields__}),
        payload=Payload(
            args=tuple(copy.deepcopy(columns.get("args") or [])),
            kwargs=MappingProxyType(copy.deepcopy(dict(columns.get("kwargs") or {}))),
            ref=columns.get("payload_ref") or "",
        ),
        safety=Safety(
            mode=columns["mode"],
            max_per_day=columns.get("max_per_day"),
            pause_after_failures=columns.get("pause_after_failures"),
            on_pause=columns["on_pause"],
        ),
    )
