"""A paginator that does not count ten million rows to draw page 1."""

from __future__ import annotations

import json
from functools import cached_property
from typing import Any

from django.core.paginator import EmptyPage, Page, Paginator
from django.db import connections

ESTIMATE_ABOVE = 100_000
"""Unfiltered tables with more rows than this (by the planner's estimate) are not counted."""
COUNT_UP_TO = 10_000
"""Filtered lists are counted exactly up to this many rows; beyond, the planner's estimate."""


class EstimatedCountPaginator(Paginator):
    """On PostgreSQL an unfiltered list takes its row count from the planner's statistics
    (``pg_class.reltuples``, summed over the partitions of a partitioned table) when that is
    large; a filtered list is counted exactly up to ``COUNT_UP_TO`` rows, and beyond takes
    the planner's estimate of the filtered query (at least ``COUNT_UP_TO + 1``): the count
    of one schedule's occurrences does not grow with its history.

    An estimate can be short of the real count: then a page past the last one it gives is
    still served, full, by its number (the admin's ``?p=N``), not refused as out of range."""

    estimated = False
    """Whether ``count`` is the planner's estimate rather than a count."""

    @cached_property
    def count(self) -> int:
        objects: Any = self.object_list
        query = getattr(objects, "query", None)
        if query is None or connections[objects.db].vendor != "postgresql":
            return int(super().count)
        if not query.where:
            estimate = _estimate(objects.db, objects.model._meta.db_table)
            if estimate > ESTIMATE_ABOVE:
                self.estimated = True
                return estimate
            return int(super().count)
        unordered = objects.order_by()
        counted = int(unordered[: COUNT_UP_TO + 1].count())
        if counted <= COUNT_UP_TO:
            return counted
        self.estimated = True
        return max(counted, _planned_rows(unordered))

    def validate_number(self, number: Any) -> int:
        try:
            return int(super().validate_number(number))
        except EmptyPage:
            if self.estimated and int(number) > 1:
                return int(number)
            raise

    def page(self, number: Any) -> Page:
        number = self.validate_number(number)
        if not self.estimated:
            return super().page(number)
        bottom = (number - 1) * self.per_page  # not clipped to the estimate
        return Page(self.object_list[bottom : bottom + self.per_page], number, self)


def _planned_rows(objects: Any) -> int:
    """The planner's estimate of the rows ``objects`` returns (``EXPLAIN``, not run)."""
    plan = json.loads(objects.explain(format="json"))
    return int(plan[0]["Plan"]["Plan Rows"])


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
