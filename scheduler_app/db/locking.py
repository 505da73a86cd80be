"""One rule for writing several occurrence rows at once: lock them in primary-key order.

A multi-row UPDATE locks rows in whatever order its plan meets them, so two of them (say
the beat marking a batch dispatched and a ``cancel_previous`` stop request) can each hold a
row the other waits for: a deadlock. Taking the row locks first, ordered by primary key, in
every writer of several rows makes that cycle impossible. Writers of one row, and the
SKIP LOCKED claims, need nothing more.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.db import connection, transaction
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL

from scheduler_app.models import Occurrence


def lock_in_order(queryset: QuerySet[Occurrence]) -> list[UUID]:
    """Lock the matching rows in primary-key order (call inside a transaction)."""
    return list(
        queryset.select_for_update(of=("self",)).order_by("pk").values_list("pk", flat=True)
    )


def update_in_order(queryset: QuerySet[Occurrence], **changes: Any) -> int:
    """``queryset.update(**changes)``, with the row locks taken in primary-key order.

    On PostgreSQL one statement: ``UPDATE ... WHERE id IN (SELECT id ... ORDER BY id FOR
    UPDATE)`` (the sub-select locks in order before the update touches a row); elsewhere a
    locking read, then the update, in one transaction.
    """
    if connection.vendor == "postgresql":
        return Occurrence.objects.filter(pk__in=_locked_in_order(queryset)).update(**changes)
    with transaction.atomic():
        locked = lock_in_order(queryset)
        if not locked:
            return 0
        return Occurrence.objects.filter(pk__in=locked).update(**changes)


def _locked_in_order(queryset: QuerySet[Occurrence]) -> RawSQL:
    """The sub-select that locks ``queryset``'s rows in primary-key order (PostgreSQL).

    The filter stays on the locked table itself, so that PostgreSQL re-checks it on the
    newest version of a row it had to wait for (a row another transaction moved on while we
    waited no longer matches and is left alone).
    """
    sql, params = queryset.order_by().values("pk").query.sql_with_params()
    table = connection.ops.quote_name(Occurrence._meta.db_table)
    column = connection.ops.quote_name(Occurrence._meta.pk.column)
    return RawSQL(f"{sql} ORDER BY {table}.{column} FOR UPDATE OF {table}", params)
