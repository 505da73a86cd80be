"""Importing and exporting ``schedule.v1`` files: all or nothing, through the service layer.

Import parses every document (either style), collects every problem with its path
(``schedules[3].timing.rule``), and applies nothing unless the whole file is valid, in one
transaction. Export renders either style (docs/contract.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction

from scheduler_app.authoring import importing
from scheduler_app.authoring.importing import Desired, Plan, Problem
from scheduler_app.clock import Clock, SystemClock
from scheduler_app.contract.export import Refusal, ordered_schedules, render_file
from scheduler_app.contract.fields import FIELD_PATHS, Style
from scheduler_app.contract.parse import ContractError, parse_document, read_documents
from scheduler_app.errors import ScheduleStateError, ScheduleValidationError
from scheduler_app.models import Schedule

ProgressFactory = Callable[[str, int], Any]
"""``factory(description, total)`` -> an object with ``update(n)`` and ``close()`` (tqdm)."""


@dataclass(frozen=True)
class ImportResult:
    plan: Plan
    applied: bool
    schedule_ids: dict[str, str] = field(default_factory=dict)
    """Document label -> id of the schedule it created or updated (after a real import)."""


def export_file(
    schedules: Iterable[Schedule], style: Style = "native", refused: list[Refusal] | None = None
) -> str:
    """The whole file: stable order (creation, then id) and formatting, one trailing newline.

    A row that cannot be written is added to ``refused`` when given; otherwise the export
    raises ``ContractError`` naming every such row.
    """
    ordered = sorted(schedules, key=lambda s: (s.created_at, str(s.pk)))
    return _rendered(ordered, style, refused)


def export_all(style: Style = "native") -> str:
    """Every schedule as one file (raises ``ContractError`` for rows that cannot be written)."""
    return _rendered(ordered_schedules(), style, None)


def _rendered(schedules: Iterable[Schedule], style: Style, refused: list[Refusal] | None) -> str:
    bad: list[Refusal] = [] if refused is None else refused
    text = "".join(render_file(schedules, style, bad))
    if refused is None and bad:
        raise ContractError([Problem(f"schedule {r.item_id}", "", r.reason) for r in bad])
    return text


def plan_import(
    text: str,
    now: datetime,
    *,
    check_versions: bool = False,
    progress: ProgressFactory | None = None,
) -> Plan:
    """Parse and compare every document; the plan's problems list every error of the file."""
    documents = read_documents(text)
    desired: list[Desired] = []
    problems: list[Problem] = []
    bar = progress("checking", len(documents)) if progress else None
    memo: dict[Any, Any] = {}
    for index, doc in enumerate(documents):
        item, found = parse_document(doc, f"schedules[{index}]", memo)
        problems.extend(found)
        if item is not None:
            desired.append(item)
        elif bar is not None:
            bar.update(1)  # a refused document is not planned: count it here
    result = importing.plan(
        desired,
        now,
        field_paths=FIELD_PATHS,
        check_versions=check_versions,
        progress=bar.update if bar is not None else None,
    )
    if bar is not None:
        bar.close()
    all_problems = sorted([*problems, *result.problems], key=_problem_order)
    return Plan(result.changes, tuple(all_problems))


def _problem_order(problem: Problem) -> tuple[int, str]:
    index = problem.label.removeprefix("schedules[").rstrip("]")
    return (int(index) if index.isdigit() else -1, problem.path)


def import_text(
    text: str,
    *,
    dry_run: bool = False,
    clock: Clock | None = None,
    check_versions: bool = False,
    progress: ProgressFactory | None = None,
) -> ImportResult:
    """Import a file: all of it, or (on any problem) none of it. Raises ``ContractError``.

    ``check_versions``: documents carrying ``version`` must match the stored schedule's
    version (optimistic concurrency); by default read-only fields are ignored.
    """
    clock = clock or SystemClock()
    with transaction.atomic():
        result = plan_import(text, clock.now(), check_versions=check_versions, progress=progress)
        if result.problems:
            raise ContractError(result.problems)
        if dry_run:
            return ImportResult(result, applied=False)
        writes = [change for change in result.changes if change.action != "unchanged"]
        bar = progress("importing", len(writes)) if progress and writes else None
        try:
            done = importing.apply(
                writes,
                clock=clock,
                progress=bar.update if bar is not None else None,
            )
        except (ScheduleValidationError, ScheduleStateError) as exc:
            # The plan was checked; a failure here (a race) still rolls everything back.
            raise ContractError([Problem("file", "", str(exc))]) from exc
        finally:
            if bar is not None:
                bar.close()
    ids = {c.desired.label: str(s.pk) for c, s in zip(writes, done, strict=True)}
    return ImportResult(result, applied=True, schedule_ids=ids)
