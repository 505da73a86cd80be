"""A batch's ids as one parameter: ``column = ANY(...)`` on PostgreSQL.

Django writes ``column IN (%s, %s, ...)``: one parameter per id, each adapted, and a
statement text as long as the batch (the beat filters by up to ``SCHEDULER_BATCH_SIZE`` ids).
``AnyOf`` sends the ids as one comma-separated text that PostgreSQL reads as an array (as
the outbox's ``mark_dispatched`` does), the same text for psycopg 3 and psycopg2. Elsewhere
it is Django's ``IN``.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Lookup
from django.db.models.lookups import In


class AnyOf(Lookup):
    """``AnyOf(F("schedule_id"), ids)``: the rows whose UUID column is one of ``ids``, usable
    in ``filter()`` as any condition. An empty ``ids`` matches nothing."""

    lookup_name = "any_of"
    prepare_rhs = False

    def as_sql(self, compiler: Any, connection: Any) -> Any:
        ids = [str(value) for value in self.rhs]
        if connection.vendor != "postgresql" or not ids:
            return In(self.lhs, ids).as_sql(compiler, connection)
        lhs, params = self.process_lhs(compiler, connection)
        return f"{lhs} = ANY(string_to_array(%s, ',')::uuid[])", [*params, ",".join(ids)]
