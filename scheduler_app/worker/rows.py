"""Model instances from the columns of a hand-written statement, converted as the ORM would."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Any, TypeVar, cast

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import Model
from django.db.models.base import ModelState

from scheduler_app.db.rows import has_init_receivers

M = TypeVar("M", bound=Model)
Converter = Callable[[Any, Any, Any], Any]


def columns(model: type[Model], alias: str, prefix: str = "") -> str:
    """``alias."col", ...``: every concrete column of ``model``, in field order (named
    ``<prefix>_col`` when a prefix is given: several tables' columns in one row). A column
    inherited from a parent model (multi-table inheritance: the schedule's runtime) is read
    from that parent's table, joined by ``parents_joined`` as ``<alias>_<parent model>``; a
    column whose attribute has another name (the parent link) is named after the attribute."""
    return ", ".join(
        f'{_table_alias(model, field, alias)}."{field.column}"' + _named(field, prefix)
        for field in model._meta.concrete_fields
    )


def parents_joined(model: type[Model], alias: str) -> str:
    """``JOIN "parent" <alias>_<parent> ON ...`` for each parent table of ``model`` (none for a
    model without multi-table inheritance), for the columns that ``columns`` reads there."""
    joins = []
    for parent, link in model._meta.parents.items():
        if link is None:  # pragma: no cover - an abstract or proxy parent has no table
            continue
        joined = f"{alias}_{parent._meta.model_name}"
        joins.append(
            f'JOIN "{parent._meta.db_table}" {joined} '
            f'ON {joined}."{parent._meta.pk.column}" = {alias}."{link.column}"'
        )
    return " ".join(joins)


def _table_alias(model: type[Model], field: Any, alias: str) -> str:
    owner = field.model
    return alias if owner is model else f"{alias}_{owner._meta.model_name}"


def _named(field: Any, prefix: str) -> str:
    if prefix:
        return f' AS "{prefix}_{field.column if field.column == field.attname else field.attname}"'
    return "" if field.column == field.attname else f' AS "{field.attname}"'


def width(model: type[Model]) -> int:
    return len(model._meta.concrete_fields)


def build(model: type[M], values: Sequence[Any], db: Any = None) -> M:
    """``model`` as loaded from the database, from its columns in ``columns`` order.

    ``db``: the default connection's wrapper when the caller has it already (each read of
    ``django.db.connection`` looks the wrapper up again: a few µs each, several per row).

    What ``Model.from_db`` makes, without ``Model.__init__`` (a descriptor call per field:
    three quarters of a 71-column schedule's build): the instance's ``__dict__`` filled at
    once, as ``db.rows.loaded`` does for the beat. A model with ``pre_init``/``post_init``
    receivers, or its own ``__init__``/``from_db``, is built the ordinary way."""
    if db is None:
        db = connections[DEFAULT_DB_ALIAS]
    names, converting = _plan(model, db.vendor)
    converted = list(values)
    for index, expression, converters in converting:  # only the columns that convert
        value = converted[index]
        for convert in converters:
            value = convert(value, expression, db)
        converted[index] = value
    if not _plain(model) or has_init_receivers(model):
        return model.from_db(db.alias, names, converted)
    row = model.__new__(model)
    row.__dict__.update(zip(names, converted, strict=True))
    state = row._state = ModelState()
    state.adding = False
    state.db = db.alias
    return row


@cache
def _plain(model: type[Model]) -> bool:
    """Whether ``model`` is built by Django's own ``from_db`` and ``__init__``."""
    return (
        model.__init__ is Model.__init__
        and cast(Any, model.from_db).__func__ is cast(Any, Model.from_db).__func__
    )


@cache
def _plan(
    model: type[Model], vendor: str
) -> tuple[list[str], list[tuple[int, Any, list[Converter]]]]:
    """The field names in column order, and the columns that have converters (JSON decoding,
    SQLite dates, ...) with the ORM's converters for them, per backend: worked out once."""
    names = [field.attname for field in model._meta.concrete_fields]
    converting = []
    for index, field in enumerate(model._meta.concrete_fields):
        field = cast(Any, field)
        expression = field.get_col(model._meta.db_table)
        converters = [
            *connection.ops.get_db_converters(expression),
            *field.get_db_converters(connection),
        ]
        if converters:
            converting.append((index, expression, converters))
    return names, converting
