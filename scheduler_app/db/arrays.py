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
    """``AnyOf(F("schedule_id"), ids)``: the rows whose id column (a UUID or a number) is one
    of ``ids``, usable in ``filter()`` as any condition. ``None`` matches nothing (as with
    ``IN``); an empty ``ids`` matches nothing. Each id is read as the column reads it (a
    malformed UUID is refused, as Django's ``IN`` refuses it)."""

    lookup_name = "any_of"
    prepare_rhs = False

    def __init__(self, lhs: Any, rhs: Any) -> None:
        super().__init__(lhs, list(rhs))  # an iterator would be used up by the first compile

    def as_sql(self, compiler: Any, connection: Any) -> Any:
        ids = [value for value in self.rhs if value is not None]  # as ``In`` drops None
        if connection.vendor != "postgresql" or not ids:
            return In(self.lhs, ids).as_sql(compiler, connection)
        field = self.lhs.output_field
        texts = [str(field.get_db_prep_value(value, connection)) for value in ids]
        if any("," in text for text in texts):  # a UUID or a number never holds one
            raise ValueError(f"AnyOf takes ids, not text with a comma: {texts!r:.200}")
        lhs, params = self.process_lhs(compiler, connection)
        array = field.cast_db_type(connection)
        return f"{lhs} = ANY(string_to_array(%s, ',')::{array}[])", [*params, ",".join(texts)]
