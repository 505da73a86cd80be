"""A schedule's policies as small typed values: ``misfire=CatchUp(window="24h", limit=12)``.

Each policy is a frozen dataclass that stands for the flat keywords it sets (the stored
fields): ``CatchUp(window="24h", limit=12)`` is ``misfire="catch_up", catch_up_window="24h",
catch_up_limit=12``. ``@scheduled`` and ``declare_event`` accept either spelling, from one
signature; ``flat_policies`` turns the typed one into the flat one, refuses a value given both
ways, and says under which name (``misfire.window``) a flat keyword's error is shown, so that
an error names what the person wrote. Nothing here validates a value: the flat keywords' own
checks do, once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import timedelta
from typing import Any, ClassVar

from scheduler_app.errors import ScheduleValidationError

Duration = timedelta | int | str
"""A ``timedelta``, a whole number of seconds or a text such as ``"15m"``, ``"1h30m"``."""


@dataclass(frozen=True, kw_only=True)
class Policy:
    """A policy value: ``keyword`` is the option it is given to; ``choice`` the stored choice it
    sets on that option (if any); each field sets the flat keyword named in ``flat``."""

    keyword: ClassVar[str]
    choice: ClassVar[str | None] = None
    choice_keyword: ClassVar[str | None] = None
    """The flat keyword that holds ``choice`` (``misfire`` for the misfire policies)."""
    flat: ClassVar[Mapping[str, str]] = {}

    def flat_keywords(self) -> dict[str, Any]:
        """The flat keywords this value stands for (fields left at None are not set)."""
        values: dict[str, Any] = {}
        if self.choice is not None and self.choice_keyword is not None:
            values[self.choice_keyword] = self.choice
        for field in fields(self):
            value = getattr(self, field.name)
            if value is not None:
                values[self.flat[field.name]] = value
        return values

    def path_of(self, flat: str) -> str:
        """How the person wrote the flat keyword ``flat``: ``misfire.window``."""
        for name, keyword in self.flat.items():
            if keyword == flat:
                return f"{self.keyword}.{name}"
        return self.keyword


@dataclass(frozen=True, kw_only=True)
class Misfire(Policy):
    """What the misfire policies share: a slot later than ``max_lateness`` counts as missed."""

    keyword = "misfire"
    choice_keyword = "misfire"
    flat = {"max_lateness": "max_lateness"}
    max_lateness: Duration | None = None


@dataclass(frozen=True, kw_only=True)
class Skip(Misfire):
    """Misfire: a missed slot is skipped (the next on-time slot runs)."""

    choice = "skip"


@dataclass(frozen=True, kw_only=True)
class FireOnce(Misfire):
    """Misfire: the missed slots run once, as one catch-up run."""

    choice = "fire_once"


@dataclass(frozen=True, kw_only=True)
class CatchUp(Misfire):
    """Misfire: each missed slot within ``window`` runs, at most ``limit`` of them."""

    choice = "catch_up"
    flat = {"window": "catch_up_window", "limit": "catch_up_limit", "max_lateness": "max_lateness"}
    window: Duration | None = None
    limit: int | None = None


@dataclass(frozen=True, kw_only=True)
class Overlap(Policy):
    """Overlap: what a slot does while the previous run is active (``allow``, ``skip``,
    ``buffer_one``, ``buffer_all``); ``CancelPrevious`` stops the running one instead."""

    keyword = "overlap"
    flat = {"policy": "overlap"}
    policy: str | None = None


@dataclass(frozen=True, kw_only=True)
class CancelPrevious(Policy):
    """Overlap: a new slot asks the running one to stop, and ends it after ``grace``."""

    keyword = "overlap"
    choice = "cancel_previous"
    choice_keyword = "overlap"
    flat = {"grace": "cancel_grace"}
    grace: Duration | None = None


@dataclass(frozen=True, kw_only=True)
class Retry(Policy):
    """Retries: ``max_attempts`` in all, the first retry after ``delay`` (doubling after)."""

    keyword = "retry"
    flat = {"max_attempts": "max_attempts", "delay": "retry_delay"}
    max_attempts: int | None = None
    delay: Duration | None = None


@dataclass(frozen=True, kw_only=True)
class Deadline(Policy):
    """An occurrence not started within ``after`` of its slot ends ``expired``."""

    keyword = "deadline"
    flat = {"after": "deadline"}
    after: Duration | None = None


@dataclass(frozen=True, kw_only=True)
class Window(Policy):
    """An active window (``"Mon-Fri 09:00-17:00"``) and what a slot outside it does."""

    keyword = "window"
    flat = {"hours": "window", "policy": "window_policy"}
    hours: str | None = None
    policy: str | None = None


POLICY_KEYWORDS: dict[str, tuple[type[Policy], ...]] = {
    "misfire": (Skip, FireOnce, CatchUp),
    "overlap": (CancelPrevious, Overlap),
    "retry": (Retry,),
    "deadline": (Deadline,),
    "window": (Window,),
}
"""The options that take a policy value, and the types each one takes."""
POLICY_ONLY = frozenset({"retry"})
"""The options that take nothing but a policy value (the others also take a plain one)."""


@dataclass(frozen=True)
class Flattened:
    options: dict[str, Any]
    """The options with every policy value replaced by its flat keywords."""
    paths: dict[str, str]
    """Flat keyword -> how it was written (``catch_up_window`` -> ``misfire.window``)."""

    def renamed(self, error: ScheduleValidationError) -> ScheduleValidationError:
        """``error`` naming what the person wrote, when it was about a flat keyword a policy
        value set."""
        path = self.paths.get(error.field)
        if path is not None:
            error.field = path
            error.args = (f"{path}: {error.message}",)
        return error


def flat_policies(options: Mapping[str, Any]) -> Flattened:
    """Replace each policy value by its flat keywords; a keyword given both ways, or a policy
    value given to an option that does not take it, is refused."""
    flat = dict(options)
    paths: dict[str, str] = {}
    for name, value in options.items():
        if isinstance(value, type) and issubclass(value, Policy):
            raise ScheduleValidationError(
                name,
                f"write {value.__name__}(...) with its settings, not the class {value.__name__}",
            )
    for keyword, types in POLICY_KEYWORDS.items():
        value = options.get(keyword)
        # Exactly these types: a subclass could carry other fields or route them elsewhere.
        if isinstance(value, Policy) and type(value) not in types:
            takes = ", ".join(f"{kind.__name__}(...)" for kind in types)
            raise ScheduleValidationError(
                keyword, f"{keyword}= takes {takes}, not {type(value).__name__}(...)"
            )
        if not isinstance(value, Policy):
            if value is not None and keyword in POLICY_ONLY:
                raise ScheduleValidationError(
                    keyword, f"{keyword}= takes {types[0].__name__}(...), got {value!r}"
                )
            continue
        del flat[keyword]
        for name, setting in value.flat_keywords().items():
            path = value.path_of(name) if name != value.choice_keyword else keyword
            if name != keyword and options.get(name) is not None:
                raise ScheduleValidationError(
                    name,
                    f"given twice, as {name}= and as {path}; pass it once",
                    code="given_twice",
                )
            flat[name] = setting
            paths[name] = path
    for name, value in options.items():
        if name not in POLICY_KEYWORDS and isinstance(value, Policy):
            raise ScheduleValidationError(
                name, f"{type(value).__name__}(...) is given to {value.keyword}=, not to {name}="
            )
    return Flattened(flat, paths)
