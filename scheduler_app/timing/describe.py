"""English descriptions of timing rules ("At 08:30, Monday through Friday, Europe/Paris")."""

from __future__ import annotations

import calendar

from scheduler_app.timing.calendars.solar import SolarEvent, SolarRule
from scheduler_app.timing.cron import CronExpr
from scheduler_app.timing.durations import format_duration
from scheduler_app.timing.rrule_words import and_list, describe_rrule
from scheduler_app.timing.rules import CronRule, IntervalRule, OnceRule, RRuleRule, Timing

_DAY_NAMES = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]


def describe(timing: Timing) -> str:
    """One English sentence for the rule, ending with the zone."""
    rule = timing.rule
    if isinstance(rule, CronRule):
        text = describe_cron(rule.expr)
    elif isinstance(rule, RRuleRule):
        text = describe_rrule(rule.spec) + _dates(len(rule.spec.rdates), len(rule.spec.exdates))
    elif isinstance(rule, IntervalRule):
        anchor = rule.anchor.strftime("%Y-%m-%d %H:%M:%S UTC")
        text = f"Every {format_duration(rule.every)} (fixed rate, from {anchor})"
    elif isinstance(rule, SolarRule):
        text = describe_solar(rule)
    else:
        text = _describe_once(rule)
    if timing.holidays is not None:
        text = f"{text}, except public holidays in {timing.holidays.code}"
    return f"{text}, {timing.zone.key}"


def _dates(added: int, removed: int) -> str:
    """RDATE and EXDATE counts ("plus 2 dates, except 1 date")."""
    parts = [
        f"{word} {n} date{'s' if n > 1 else ''}"
        for word, n in (("plus", added), ("except", removed))
        if n
    ]
    return "".join(", " + part for part in parts)


def describe_solar(rule: SolarRule) -> str:
    """``At sunrise at 56.9496, 24.1052`` (civil dawn/dusk, solar noon)."""
    event = {SolarEvent.DAWN: "civil dawn", SolarEvent.DUSK: "civil dusk"}.get(
        rule.event, "solar noon" if rule.event is SolarEvent.NOON else rule.event.value
    )
    return f"At {event} at {rule.latitude:g}, {rule.longitude:g}"


def _describe_once(rule: OnceRule) -> str:
    if rule.at.tzinfo is not None:
        return f"Once at {rule.at.strftime('%Y-%m-%d %H:%M:%S UTC')}"
    return f"Once at {rule.at.isoformat(sep=' ')} local time"


def describe_cron(expr: CronExpr) -> str:
    fields = expr.fields
    parts = [_cron_time(expr, fields)]
    day_text = _cron_days(expr, fields)
    if day_text:
        parts.append(day_text)
    if fields[3] != "*":
        parts.append("in " + and_list([calendar.month_name[m] for m in expr.months]))
    return ", ".join(parts)


def _cron_time(expr: CronExpr, fields: list[str]) -> str:
    minute, hour = fields[0], fields[1]
    if minute == "*" and hour == "*":
        return "Every minute"
    if expr.fixed_time and len(expr.minutes) * len(expr.hours) <= 6:
        times = [f"{h:02d}:{m:02d}" for h in expr.hours for m in expr.minutes]
        return "At " + and_list(times)
    if minute.startswith("*/") and hour == "*":
        return f"Every {minute[2:]} minutes"
    if minute == "0" and hour.startswith("*/"):
        return f"Every {hour[2:]} hours"
    minute_text = (
        "every minute" if minute == "*" else f"at minute {and_list([str(m) for m in expr.minutes])}"
    )
    if hour == "*":
        return minute_text[0].upper() + minute_text[1:] + " of every hour"
    hours = and_list([f"{h:02d}" for h in expr.hours])
    return f"{minute_text[0].upper()}{minute_text[1:]} past hour {hours}"


def _cron_days(expr: CronExpr, fields: list[str]) -> str:
    dom = "on day " + and_list([str(d) for d in expr.days]) + " of the month"
    if not expr.dom_star and not expr.dow_star:
        return f"{dom} or {_weekdays(expr.weekdays)}"  # Vixie: either day field matches
    # Otherwise both must match; mention each field that restricts anything.
    parts = []
    if fields[2] != "*":
        parts.append(dom)
    if fields[4] != "*":
        parts.append(_weekdays(expr.weekdays))
    return " and ".join(parts)


def _weekdays(days: tuple[int, ...]) -> str:
    if days == (1, 2, 3, 4, 5):
        return "Monday through Friday"
    if days == (0, 6):
        return "on Saturday and Sunday"
    # Cron counts from Sunday (0), people and the phrase reader from Monday: SUN-TUE is no
    # "Sunday through Tuesday" (that range would run backwards) but a list.
    if len(days) > 2 and days[0] != 0 and days == tuple(range(days[0], days[-1] + 1)):
        return f"{_DAY_NAMES[days[0]]} through {_DAY_NAMES[days[-1]]}"
    monday_first = sorted((d - 1) % 7 for d in days)  # FRI-SUN reads Friday through Sunday
    if len(days) > 2 and monday_first == list(range(monday_first[0], monday_first[-1] + 1)):
        return f"{_DAY_NAMES[days[1]]} through Sunday"  # a range that wraps ends on Sunday (0)
    return "on " + and_list([_DAY_NAMES[d] for d in days])
