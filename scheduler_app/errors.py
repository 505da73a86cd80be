"""The project's exceptions: one root, so callers can catch everything we raise on purpose.

Every message says what was wrong and how to fix it.
"""

from __future__ import annotations


class SchedulerError(Exception):
    """Root of every error this project raises on purpose."""


class ScheduleValidationError(SchedulerError):
    """Bad input: a rule, zone, policy, payload or datetime that cannot be accepted.

    ``field`` names the offending input (``"cron.minute"``, ``"timezone"``, ``"rrule.FREQ"`` ...).
    """

    def __init__(self, field: str, message: str, *, code: str = "invalid") -> None:
        self.field = field
        self.message = message
        self.code = code
        super().__init__(f"{field}: {message}")


class InvalidRule(ScheduleValidationError):
    """A cron expression, RRULE, interval or one-time instant that is malformed."""


class SearchExhausted(InvalidRule):
    """A search for a slot used up its budget (``timing/budget.py``) without finding one.

    ``exhausted`` says what ran out: ``"candidates"`` (``SCHEDULER_SEARCH_CANDIDATES``),
    ``"span"`` (``SCHEDULER_SEARCH_SPAN_DAYS``) or ``"window"`` (a skip window the rule stopped
    meeting, asked by validation). Raised by validation
    (the rule is refused on ``rule``) and at run time (the beat parks the schedule with it).
    """

    def __init__(
        self, message: str, *, exhausted: str, field: str = "rule", code: str = "never_fires"
    ) -> None:
        self.exhausted = exhausted
        super().__init__(field, message, code=code)


class UnknownTimezone(ScheduleValidationError):
    """A zone name that is not in the IANA database."""


class NaiveDatetime(ScheduleValidationError):
    """A datetime without tzinfo where an aware instant is needed."""


class StaleVersion(SchedulerError):
    """An update based on an old version of a schedule (someone else changed it first)."""


class ScheduleStateError(SchedulerError):
    """An operation that the schedule's current status does not allow."""


class PermanentTaskError(SchedulerError):
    """Raise from a task to fail its occurrence at once, without retries."""


class OccurrenceCancelled(SchedulerError):
    """Raised inside a task that was asked to stop (``cancel_previous``, an operator)."""


class DuplicateKey(ScheduleValidationError):
    """A schedule with this key exists already (keys are unique)."""


class OperatorPermissionDenied(SchedulerError, PermissionError):
    """The acting user lacks the model permission an action needs."""


ERROR_LENGTH = 4000
"""Characters of an error kept in ``last_error`` and an attempt's ``error``."""


def storable_error(text: str, limit: int = ERROR_LENGTH) -> str:
    """``text`` as an error column can hold it: at most ``limit`` characters, NUL (which
    PostgreSQL's text refuses) and lone surrogates (not UTF-8) replaced. An error comes from
    code and servers nobody here controls: a task's exception, an endpoint's answer."""
    kept = text[:limit].replace("\x00", "\ufffd")
    return kept.encode("utf-8", "replace").decode("utf-8")
