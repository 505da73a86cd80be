"""docs/performance.md, "The hot rows' indexes", names every index of the ledger and of the
schedules with the query that reads it: an index added or dropped without its row there fails
here, and so does a row left for an index that is gone. The schedules are two tables: the
definition's and the runtime's (``models.runtime``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.db import models

from scheduler_app.models import Occurrence, Schedule, ScheduleRuntime

PAGE = Path(__file__).resolve().parents[2] / "docs" / "performance.md"
SECTION = "## The hot rows' indexes"
NAMED = re.compile(r"^\| `(?P<name>[a-z_]+)`")
FIELD = re.compile(r"^\| the `(?P<field>[a-z_]+)` (?:column|foreign key)'s")


def tables() -> list[list[str]]:
    """The section's tables, each as its body rows (header and rule left out)."""
    text = PAGE.read_text(encoding="utf-8")
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    found: list[list[str]] = []
    rows: list[str] = []
    for line in [*section.splitlines(), ""]:
        if line.startswith("|"):
            rows.append(line)
        elif rows:
            found.append(rows[2:])
            rows = []
    return found


def documented(rows: list[str]) -> tuple[set[str], set[str]]:
    """Index and constraint names, and the fields whose own index a row describes."""
    names = {match["name"] for row in rows if (match := NAMED.match(row))}
    fields = {match["field"] for row in rows if (match := FIELD.match(row))}
    return names, fields


def indexed(model: type[models.Model]) -> tuple[set[str], set[str]]:
    """The model's named indexes and unique constraints, and the fields indexed on their own
    (foreign keys and ``unique=True``; the primary key aside)."""
    meta = model._meta
    names = {index.name for index in meta.indexes if index.name}
    names |= {c.name for c in meta.constraints if isinstance(c, models.UniqueConstraint)}
    fields = {
        field.name
        for field in meta.concrete_fields
        if not field.primary_key and (field.unique or field.db_index)
    }
    return names, fields


@pytest.mark.parametrize(
    ("position", "model"), [(0, Occurrence), (1, Schedule), (2, ScheduleRuntime)]
)
def test_every_index_has_its_row_and_every_row_its_index(
    position: int, model: type[models.Model]
) -> None:
    rows = tables()[position]
    assert any(row.startswith("| primary key |") for row in rows)
    assert documented(rows) == indexed(model)


def test_the_check_sees_the_indexes() -> None:
    """Guards the test itself: a parser that found nothing would pass an empty model."""
    names, fields = indexed(Occurrence)
    assert {"occ_outbox_idx", "occ_unique_rule_slot"} <= names
    assert fields == {"schedule_version"}
    assert indexed(Schedule)[1] == {"key", "owner"}
    assert indexed(ScheduleRuntime)[0] == {"sched_due_idx", "sched_next_run_idx"}
