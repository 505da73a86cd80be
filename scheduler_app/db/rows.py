"""Rows of the hot path built without Django's model machinery.

A burst builds thousands of occurrence (and version) instances that are inserted with one
statement and published from memory: they are never saved through the ORM, so what
``Model.__init__`` does per field and per row (signals, a descriptor per attribute, each
default looked up again) is not needed. ``new_row`` fills the instance's ``__dict__`` at
once, the way a row read from the database ends up; ``relate`` gives a row its related
object (what ``row.schedule = schedule`` caches) without the descriptor's checks.
"""

from __future__ import annotations

from functools import cache
from typing import Any, TypeVar

from django.db.models import Model, QuerySet, signals
from django.db.models.base import ModelState

M = TypeVar("M", bound=Model)


@cache
def _field_defaults(model: type[Model]) -> dict[str, Any]:
    """Every concrete field's attribute name and default, in field order (never changed:
    ``dict.update`` copies it into each row)."""
    return {field.attname: field.get_default() for field in model._meta.concrete_fields}


def has_init_receivers(model: type[Model]) -> bool:
    """Whether ``pre_init`` or ``post_init`` has a receiver for ``model`` (its rows are then
    built the ordinary way, so that they still run)."""
    if not (signals.pre_init.receivers or signals.post_init.receivers):
        return False  # none connected at all, the usual case: no lookup by sender per row
    return bool(signals.pre_init.has_listeners(model) or signals.post_init.has_listeners(model))


def new_row(model: type[M], **values: Any) -> M:
    """``model(**values)`` without ``Model.__init__``: a field not given takes its default,
    computed once (so a mutable default such as ``kwargs``'s ``dict`` must be given: it always
    is on the hot path). A model with ``pre_init``/``post_init`` receivers is built the
    ordinary way, so that they still run."""
    defaults = _field_defaults(model)
    if has_init_receivers(model):
        return model(**defaults | values)
    row = model.__new__(model)
    state = row.__dict__
    state.update(defaults)
    state.update(values)
    state["_state"] = ModelState()
    return row


def relate(row: Model, name: str, related: Model) -> None:
    """``row.<name> = related`` for a foreign key whose id ``row`` already holds (the cache
    the descriptor would fill; the id is not touched)."""
    row._state.fields_cache[name] = related


def loaded(queryset: QuerySet[M]) -> list[M]:
    """``list(queryset)`` without ``Model.__init__`` per row: the rows as Django's own
    iterable reads them (the same statement, the same converters: JSON decoded, times made
    aware), each instance's ``__dict__`` filled at once, annotations included. For a plain
    query of one model (no ``select_related``); one whose model has ``pre_init``/``post_init``
    receivers is read the ordinary way, so that they still run. The beat's claim reads its
    batch of schedules through it (``Model.__init__`` was a third of the claim's time)."""
    model = queryset.model
    if has_init_receivers(model) or queryset.query.select_related:
        return list(queryset)
    database = queryset.db
    compiler = queryset.query.get_compiler(using=database)
    results = compiler.execute_sql()
    fields = compiler.klass_info["select_fields"] if compiler.klass_info else []
    start, end = fields[0], fields[-1] + 1
    names = [column[0].target.attname for column in compiler.select[start:end]]
    annotations = list(compiler.annotation_col_map.items())
    found: list[M] = []
    for values in compiler.results_iter(results):
        row = model.__new__(model)
        state = row.__dict__
        state.update(zip(names, values[start:end], strict=True))
        for name, position in annotations:
            state[name] = values[position]
        row._state = ModelState()
        row._state.adding = False
        row._state.db = database
        found.append(row)
    return found
