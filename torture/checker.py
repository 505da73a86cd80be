"""The checker: the intended slots from the rules alone, compared with what happened.

Intended slots are computed here, independently of ``scheduler_app.timing``:

- interval (fixed rate): ``anchor + k * every``, by integer arithmetic;
- interval (fixed delay): the first fixed-rate slot, then each recorded completion + every,
  counted from the slot if the completion reads earlier (a clock stepped back). Completions
  are only known from the run: (``scheduled_for``, ``finished_at``) of ended occurrences. A
  next slot the stopped beats never materialized must be the schedule's ``next_run_at``;
- once: the instant itself;
- rrule: python-dateutil's ``rrule`` on UTC instants (the workload only uses SECONDLY and
  MINUTELY rules in fixed-offset zones, where local and UTC arithmetic agree);
- cron: every UTC minute is converted to local wall time with ``zoneinfo`` and matched
  against the minute/hour fields; nonexistent local times never appear (policy ``skip``),
  and an ambiguous wall time counts by the spec's ``dst_ambiguous`` (first / last / both).

What happened is read from the sink tables written by the task (``torture_effect``: one row
per idempotency key, with the slot taken from the message) and, for the outcome of slots
without an effect, from the occurrence rows and the schedule's misfire counter.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from dateutil import rrule as du
from django.db import connection

from scheduler_app.models import Occurrence, OccurrenceState, Schedule
from torture.workload import Spec

TERMINAL = {
    OccurrenceState.SUCCEEDED,
    OccurrenceState.FAILED,
    OccurrenceState.EXPIRED,
    OccurrenceState.SKIPPED,
    OccurrenceState.CANCELLED,
}
RECORDED_SKIPS = {OccurrenceState.SKIPPED, OccurrenceState.EXPIRED, OccurrenceState.CANCELLED}


def _field_matches(field_text: str, value: int) -> bool:
    if field_text == "*":
        return True
    if field_text.startswith("*/"):
        return value % int(field_text[2:]) == 0
    if "-" in field_text:
        low, high = (int(part) for part in field_text.split("-"))
        return low <= value <= high
    return value in {int(part) for part in field_text.split(",")}


def _ambiguous(local: datetime) -> bool:
    return local.replace(fold=0).utcoffset() != local.replace(fold=1).utcoffset()


def intended_slots(
    spec: Spec, until: datetime, completions: list[tuple[datetime, datetime]] | None = None
) -> list[datetime]:
    """Every slot of ``spec`` in [starts_at, until], as UTC instants (a fixed-delay interval
    needs the (slot, finished_at) ``completions`` of its ended occurrences)."""
    start = spec.starts_at.astimezone(UTC)
    until = until.astimezone(UTC)
    if spec.interval_mode == "fixed_delay":
        every = timedelta(seconds=int(spec.rule.rstrip("s")))
        fixed_rate = Spec(spec.kind, spec.rule, spec.timezone, spec.starts_at, spec.anchor)
        first = intended_slots(fixed_rate, until)[:1]
        after = [max(slot, done).astimezone(UTC) + every for slot, done in completions or []]
        return sorted({*first, *(slot for slot in after if slot <= until)})
    if spec.kind == "once":
        at = datetime.fromisoformat(spec.rule).astimezone(UTC)
        return [at] if start <= at <= until else []
    if spec.kind == "interval":
        assert spec.anchor is not None
        every = int(spec.rule.rstrip("s"))
        anchor = spec.anchor.astimezone(UTC)
        first = max(0, -(-int((start - anchor).total_seconds()) // every))
        slots = []
        k = first
        while (slot := anchor + timedelta(seconds=k * every)) <= until:
            if slot >= start:
                slots.append(slot)
            k += 1
        return slots
    if spec.kind == "rrule":
        assert spec.anchor is not None
        parts = dict(part.split("=") for part in spec.rule.split(";"))
        freq = {"SECONDLY": du.SECONDLY, "MINUTELY": du.MINUTELY}[parts["FREQ"]]
        rule = du.rrule(freq, interval=int(parts.get("INTERVAL", 1)), dtstart=spec.anchor)
        return [s.astimezone(UTC) for s in rule.between(start, until, inc=True)]
    if spec.kind == "cron":
        minute, hour, *_ = spec.rule.split()
        zone = ZoneInfo(spec.timezone)
        slots = []
        instant = (start + timedelta(seconds=59)).replace(second=0, microsecond=0)
        while instant <= until:
            local = instant.astimezone(zone)
            if _field_matches(minute, local.minute) and _field_matches(hour, local.hour):
                keep = True
                if _ambiguous(local):
                    keep = spec.dst_ambiguous == "both" or (
                        (spec.dst_ambiguous == "first") == (local.fold == 0)
                    )
                if keep:
                    slots.append(instant)
            instant += timedelta(minutes=1)
        return slots
    raise ValueError(f"unknown kind {spec.kind}")


@dataclass
class Verdict:
    scenario: str
    slots_expected: int = 0
    occurrences: int = 0
    effects: int = 0
    executions: int = 0
    duplicates_absorbed: int = 0
    skipped_by_policy: int = 0
    lost: int = 0
    duplicated_effects: int = 0
    outside_rules: int = 0
    not_terminal: int = 0
    dead_letters: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (
            self.lost
            or self.duplicated_effects
            or self.outside_rules
            or self.not_terminal
            or self.dead_letters
            or self.executions < self.effects
        )

    def line(self) -> str:
        faults = ", ".join(f"{name} {count}" for name, count in sorted(self.faults.items()))
        return (
            f"{'PASS' if self.ok else 'FAIL'} {self.scenario}: slots expected "
            f"{self.slots_expected}, occurrences {self.occurrences}, effects {self.effects}, "
            f"executions {self.executions}, duplicates absorbed {self.duplicates_absorbed}, "
            f"skipped by policy {self.skipped_by_policy}, lost {self.lost}, duplicated effects "
            f"{self.duplicated_effects}, outside rules {self.outside_rules}, not terminal "
            f"{self.not_terminal}, dead letters {self.dead_letters}; faults: {faults or 'none'}"
        )


def check(
    scenario: str, specs: list[Spec], until: datetime, *, clock_steps: bool = False
) -> Verdict:
    verdict = Verdict(scenario)
    by_id = {spec.schedule_id: spec for spec in specs}
    with connection.cursor() as cursor:
        cursor.execute("SELECT schedule_id::text, scheduled_for FROM torture_effect")
        effects = cursor.fetchall()
        cursor.execute("SELECT count(*), count(*) FILTER (WHERE absorbed) FROM torture_execution")
        verdict.executions, verdict.duplicates_absorbed = cursor.fetchone()
    verdict.effects = len(effects)
    effect_slots: dict[str, Counter[datetime]] = defaultdict(Counter)
    for schedule_id, slot in effects:
        effect_slots[schedule_id][slot.astimezone(UTC)] += 1
    rows = defaultdict(list)
    for occurrence in Occurrence.objects.filter(schedule_id__in=list(by_id)).only(
        "schedule_id", "scheduled_for", "state", "reason", "deadline_at", "finished_at"
    ):
        rows[str(occurrence.schedule_id)].append(occurrence)
    counters = {
        str(pk): (skipped, next_run_at)
        for pk, skipped, next_run_at in Schedule.objects.filter(id__in=list(by_id)).values_list(
            "id", "skipped_count", "next_run_at"
        )
    }
    for schedule_id, spec in by_id.items():
        occurrences = rows.get(schedule_id, [])
        completions = [
            (o.scheduled_for, o.finished_at)
            for o in occurrences
            if o.state in TERMINAL and o.finished_at is not None
        ]
        intended = set(intended_slots(spec, until, completions))
        verdict.slots_expected += len(intended)
        verdict.occurrences += len(occurrences)
        seen = effect_slots.get(schedule_id, Counter())
        for slot, count in seen.items():
            if slot not in intended:
                verdict.outside_rules += count
                verdict.problems.append(f"{schedule_id} {spec.rule}: effect at {slot} not a slot")
            if count > 1:
                verdict.duplicated_effects += count - 1
                verdict.problems.append(f"{schedule_id}: {count} effects for slot {slot}")
        recorded = {o.scheduled_for.astimezone(UTC): o for o in occurrences}
        for occurrence in occurrences:
            if occurrence.state not in TERMINAL:
                verdict.not_terminal += 1
                verdict.problems.append(
                    f"{schedule_id}: occurrence {occurrence.scheduled_for} is {occurrence.state}"
                )
            elif _ended_by_deadline(occurrence):
                pass  # its deadline passed: not retried late; a recorded, policy outcome
            elif occurrence.state == OccurrenceState.FAILED:
                verdict.dead_letters += 1
                verdict.problems.append(
                    f"{schedule_id}: occurrence {occurrence.scheduled_for} failed: "
                    f"{occurrence.reason}"
                )
            if occurrence.scheduled_for.astimezone(UTC) not in intended:
                verdict.outside_rules += 1
                verdict.problems.append(
                    f"{schedule_id} {spec.rule}: occurrence at {occurrence.scheduled_for} "
                    "not a slot"
                )
        missing = [slot for slot in intended if slot not in seen]
        unrecorded = 0
        skipped_count, next_run_at = counters.get(schedule_id, (0, None))
        for slot in missing:
            row = recorded.get(slot)
            if row is None and spec.interval_mode == "fixed_delay" and slot == next_run_at:
                verdict.slots_expected -= 1  # the chain's next slot, stored, not yet due
            elif row is None:
                unrecorded += 1
            elif row.state in RECORDED_SKIPS or _ended_by_deadline(row):
                verdict.skipped_by_policy += 1
            elif row.state == OccurrenceState.SUCCEEDED:
                verdict.lost += 1
                verdict.problems.append(f"{schedule_id}: {slot} succeeded without an effect")
        # Slots the misfire policy dropped have no row; the schedule counts them.
        counted = min(unrecorded, int(skipped_count))
        verdict.skipped_by_policy += counted
        if counted and spec.misfire_policy == "catch_up" and not clock_steps:
            # Downtime here is seconds, far inside the catch-up window: nothing may drop.
            verdict.lost += counted
            verdict.problems.append(f"{schedule_id}: catch_up schedule dropped {counted} slot(s)")
        if unrecorded > counted:
            verdict.lost += unrecorded - counted
            verdict.problems.append(
                f"{schedule_id} {spec.kind} {spec.rule} ({spec.misfire_policy}): "
                f"{unrecorded - counted} slot(s) without occurrence or recorded skip, e.g. "
                f"{sorted(s for s in missing if s not in recorded)[:3]}"
            )
    return verdict


def _ended_by_deadline(occurrence: Occurrence) -> bool:
    """A run the deadline forbids retrying late: its worker died after the deadline
    (``failed: lost``), or an injected fault failed it with no retry possible before the
    deadline (``failed: retry_past_deadline``). The workload's task fails only on faults."""
    if occurrence.state != OccurrenceState.FAILED or occurrence.deadline_at is None:
        return False
    if occurrence.reason == "retry_past_deadline":
        return True
    return (
        occurrence.reason == "lost"
        and occurrence.finished_at is not None
        and occurrence.finished_at >= occurrence.deadline_at
    )
