"""Each schedule's latest occurrence, as one subquery of a schedule queryset that reads the
ledger's recent partitions instead of all of them (issue 22).

On PostgreSQL the ledger is partitioned by ``scheduled_for``. "The newest row of this schedule"
(``ORDER BY scheduled_for DESC LIMIT 1``) is a Merge Append that starts an index scan in every
partition, and one subquery per column read it again for each: at 10,000,000 rows in 30
partitions, the monitor pass and the admin's schedule list took 2-2.5 times what they took at
1,000,000. Here:

- the columns wanted come back together, as one JSON object (``latest``), so the ledger is
  searched once per schedule, not once per column;
- the search starts at ``recent`` (an instant, so PostgreSQL prunes the older partitions when
  it plans the statement: the current and the previous month's, with ``RECENT``);
- only when no matching row is there does a second, unbounded subquery run (``COALESCE``
  evaluates it only then), so the answer is always the unbounded search's.

``decoded`` turns the JSON back into Python values (instants are text in JSON).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.db.models import DateTimeField, F, JSONField, OuterRef, Subquery
from django.db.models.functions import Coalesce, JSONObject
from django.utils.dateparse import parse_datetime

from scheduler_app.models.ledger import Occurrence

RECENT = timedelta(days=35)
"""Where a search looks first (``recent = now - RECENT``: the current and the previous month's
partitions); the whole ledger only for a schedule with nothing there."""


def latest(fields: tuple[str, ...], *, recent: datetime, **filters: Any) -> Coalesce:
    """``fields`` of the outer schedule's newest occurrence matching ``filters``, as a JSON
    object, or NULL when it has none."""
    rows = Occurrence.objects.filter(schedule=OuterRef("pk"), **filters).order_by("-scheduled_for")
    row = JSONObject(**{name: F(name) for name in fields})
    near = rows.filter(scheduled_for__gte=recent)
    return Coalesce(
        Subquery(near.values_list(row)[:1]),
        Subquery(rows.values_list(row)[:1]),
        output_field=JSONField(),
    )


def decoded(value: dict[str, Any] | None) -> dict[str, Any]:
    """The columns of a ``latest`` value, instants as aware datetimes; {} for NULL."""
    out = dict(value or {})
    for name, text in out.items():
        if isinstance(text, str) and isinstance(Occurrence._meta.get_field(name), DateTimeField):
            instant = parse_datetime(text)
            if instant is not None and instant.tzinfo is None:
                instant = instant.replace(tzinfo=UTC)  # SQLite's stored text is UTC
            out[name] = instant
    return out
