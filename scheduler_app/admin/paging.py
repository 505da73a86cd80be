"""A paginator that does not count ten million rows to draw page 1."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from django.core.paginator import Paginator
from django.db import connections

ESTIMATE_ABOVE = 100_000
"""Unfiltered tables with more rows than this (by the planner's estimate) are not counted."""


class EstimatedCountPaginator(Paginator):
    """On PostgreSQL an unfiltered list takes its row count from the planner's statistics
    (``pg_class.reltuples``, summed over the partitions of a partitioned table) when that is
    large; filtered lists are counted exactly."""

    @cached_property
    def count(self) -> int:
        objects: Any = self.object_list
        query = getattr(objects, "query", None)
        if query is not None and not query.where:
            estimate = _estimate(objects.db, objects.model._meta.db_table)
            if estimate > ESTIMATE_ABOVE:
                return estimate
        return int(super().count)


def _estimate(alias: str, table: str) -> int:
    connection = connections[alias]
    if connection.vendor != "postgresql":
        return -1
    with connection.cursor() as cursor:
        # A partitioned table (the ledger, migration 0014) has no rows of its own: its
        # partitions' estimates add up (never analysed: -1, counted as none).
        cursor.execute(
            "SELECT CASE WHEN bool_or(c.reltuples >= 0) "
            "THEN sum(greatest(c.reltuples, 0))::bigint ELSE -1 END "
            "FROM pg_partition_tree(%s::regclass) tree JOIN pg_class c ON c.oid = tree.relid "
            "WHERE tree.isleaf",
            [table],
        )
        row = cursor.fetchone()
    return int(row[0]) if row and row[0] is not None else -1
