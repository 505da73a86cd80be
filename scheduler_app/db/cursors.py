"""Cursors for statements run over and over (the worker's claim and outcome, the beat's probe):
the values sent apart from the statement's text.

Django's PostgreSQL backend on psycopg 3 binds parameters on the client by default
(``OPTIONS["server_side_binding"]`` unset): every execute quotes each value into a new
statement string, Python work on every task, and PostgreSQL plans that new text each time.
The worker's claim and outcome statements are the same text on every task (and the beat's
probe on every tick), so they run on a server-binding cursor: the text and the values travel
apart (psycopg converts the text once and keeps it), and PostgreSQL can prepare them.

They are prepared by default (``SCHEDULER_PREPARED_STATEMENTS``, docs/deployment.md): on
its first run on a connection each is prepared on the server, and the connection is asked once
for ``plan_cache_mode = force_generic_plan``, so PostgreSQL plans each of them once per
connection instead of on every run (over the partitioned ledger it would otherwise plan the
claim and the outcome again on every task, their generic plans costed as if they read every
partition). Only these statements are prepared: Django's own queries keep client-side binding
and psycopg's ``prepare_threshold`` stays as the project set it (Django's default: ``None``,
never), so the plan mode touches no query of the project's. Where a transaction pooler sits in
front of PostgreSQL (``DISABLE_SERVER_SIDE_CURSORS = True``, as PgBouncer's transaction mode
needs) nothing is prepared unless the setting says ``True`` (PgBouncer 1.21 or later with
``max_prepared_statements``). A project that sets ``prepare_threshold`` itself keeps psycopg's
own choice for these statements too.

psycopg 2 and other databases get Django's ordinary cursor.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import tzinfo
from functools import cache, lru_cache
from typing import Any
from weakref import WeakSet

from django.db import DEFAULT_DB_ALIAS, connections

from scheduler_app.conf import get_settings

try:
    import psycopg
    import psycopg.adapt
    import psycopg.pq
except ImportError:  # psycopg 2, or no PostgreSQL driver at all
    psycopg = None  # type: ignore[assignment]
_compiled: Any
try:
    from psycopg._cmodule import _psycopg as _compiled
except ImportError:  # no psycopg 3
    _compiled = None
_django_psycopg: Any
try:  # Django's psycopg 3 adapters (its ``timestamptz`` loader): by name, the stubs lack it
    _django_psycopg = importlib.import_module("django.db.backends.postgresql.psycopg_any")
except ImportError:  # no PostgreSQL driver
    _django_psycopg = None

_PLACEHOLDER = re.compile(r"%\((\w+)\)s")
_CONSTANT = re.compile(r"[a-z_]{1,20}")
"""A constant of the code that may be written into a statement's text: a state, a status, a
kind, a target (lowercase letters and ``_``: nothing to escape)."""


@dataclass(frozen=True)
class Statement:
    """A statement's text with ``%(name)s`` placeholders, and the same text with PostgreSQL's
    own ``$n`` ones (a name used twice is one ``$n``), converted once."""

    text: str
    native: str
    names: tuple[str, ...]

    def values(self, params: Mapping[str, Any]) -> list[Any]:
        return [params[name] for name in self.names]


@cache
def statement(text: str) -> Statement:
    """``text`` as a ``Statement`` (cached: the worker's statements are a handful of texts)."""
    names: dict[str, int] = {}

    def number(match: re.Match[str]) -> str:
        return f"${names.setdefault(match.group(1), len(names) + 1)}"

    native = _PLACEHOLDER.sub(number, text)
    if "%" in _PLACEHOLDER.sub("", text):
        raise ValueError("a worker statement may hold no '%' but its %(name)s placeholders")
    return Statement(text, native, tuple(names))


def constant(value: object) -> str | None:
    """``value`` as an SQL literal when it is a constant of the code (``_CONSTANT``), else None.

    Constants go into the text, not among the values, so that a prepared statement's generic
    plan (planned once for any values) can still use a partial index whose predicate names
    them (``state = 'pending'``): a predicate on ``$n`` proves nothing about any index."""
    if isinstance(value, str) and _CONSTANT.fullmatch(value):
        return f"'{value}'"
    return None


def inline(text: str, constants: Mapping[str, str]) -> str:
    """``text`` with each ``%(name)s`` of ``constants`` written as its literal; ValueError for
    a value that is not a constant of the code (``constant``)."""

    def place(match: re.Match[str]) -> str:
        if match.group(1) not in constants:
            return match.group(0)
        literal = constant(constants[match.group(1)])
        if literal is None:
            raise ValueError(f"not a constant of the code: {constants[match.group(1)]!r}")
        return literal

    return _PLACEHOLDER.sub(place, text)


def fetch_one(sql: Statement, params: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """Run ``sql`` on the default connection and return its first row (or None).

    On psycopg 3.2+ (``RawCursor``) the ``$n`` text is sent as it is: psycopg does not parse
    it again on every call (it caches its own parse only for statements under 4 kB, and the
    claim is longer). While queries are logged (``DEBUG``, ``CaptureQueriesContext``) the
    named text goes through psycopg's parser, so Django's query log can show it. The
    statement is prepared when ``_prepares`` says so (the module's docstring).

    The connection's wrapper is looked up once (``django.db.connection`` looks it up again
    on every attribute read: a dozen reads a statement)."""
    db: Any = connections[DEFAULT_DB_ALIAS]  # the stubs type make_cursor's argument apart
    raw = _raw_connection(db)
    if raw is None:
        with db.cursor() as plain:
            plain.execute(sql.text, params)
            return plain.fetchone()
    db.validate_thread_sharing()
    raw_cursor = getattr(psycopg, "RawCursor", None)
    logged = db.queries_logged
    with db.wrap_database_errors:
        if logged or raw_cursor is None:
            text: str = sql.text
            values: Any = params
            cursor: Any = psycopg.Cursor(raw)
        else:
            text, values, cursor = sql.native, sql.values(params), raw_cursor(raw)
        _compiled_times(cursor, raw)
    # Prepared by this project (not while queries are logged: the log reads the text sent).
    own = not logged and raw.prepare_threshold is None and _prepares(raw, db)
    wrapped = db.make_debug_cursor(cursor) if logged else db.make_cursor(cursor)
    with wrapped:
        if not own:
            wrapped.execute(text, values)
            return _first(wrapped)
        raw.prepare_threshold = 0  # prepared at once, for this statement only: Django's
        try:  # queries stay unprepared
            wrapped.execute(text, values)
        finally:
            raw.prepare_threshold = None
        return _first(wrapped)


def _first(cursor: Any) -> tuple[Any, ...] | None:
    row: tuple[Any, ...] | None = cursor.fetchone()
    return row


def _compiled_times(cursor: Any, raw: Any) -> None:
    """Read ``timestamptz`` on ``cursor`` as the connection's loader does, parsed by psycopg's
    compiled loader (``_fast_times``): the same instants with the same ``tzinfo``."""
    oid = _timestamptz_oid(raw)
    if oid is None:
        return
    fast = _fast_times(raw.adapters.get_loader(oid, psycopg.pq.Format.TEXT))
    if fast is not None:
        cursor.adapters.register_loader(oid, fast)


def _timestamptz_oid(raw: Any) -> int | None:
    info = raw.adapters.types.get("timestamptz")
    return None if info is None else int(info.oid)


@lru_cache(maxsize=16)
def _fast_times(registered: Any) -> type[Any] | None:
    """A loader for the worker's ``timestamptz`` columns equal to ``registered`` (Django's:
    psycopg's loader written in Python, then ``replace(tzinfo=<the connection's zone>)``),
    with psycopg's compiled parser in place of its pure-Python one (a regular expression
    per value: ~9 µs, against ~1; the claim and the outcome read about thirty a delivery).
    None when the connection's loader is not Django's, or psycopg has no compiled module:
    the statement then reads them as every other query does."""
    compiled: Any = getattr(_compiled, "TimestamptzLoader", None)
    django_loader: Any = getattr(_django_psycopg, "BaseTzLoader", None)
    if (
        compiled is None
        or django_loader is None
        or not isinstance(registered, type)
        or not issubclass(registered, django_loader)
        or not _djangos_own(registered, django_loader)
    ):
        return None
    zone = getattr(registered, "timezone", None)

    class CompiledTzLoader(psycopg.adapt.Loader):
        timezone = zone

        def __init__(self, oid: int, context: Any = None) -> None:
            super().__init__(oid, context)
            self._parse = compiled(oid, context).load

        def load(self, data: Any) -> Any:
            return self._parse(data).replace(tzinfo=self.timezone)

    return CompiledTzLoader


def _djangos_own(registered: Any, django_loader: Any) -> bool:
    """Whether ``registered`` is the loader Django's ``register_tzloader`` makes: a direct
    subclass of ``BaseTzLoader`` that sets ``timezone`` (a zone or None) and nothing else
    (its namespace holds no name a class made the same way lacks). A subclass that changes
    anything else (its ``__init__``, psycopg's ``_load_method``, a ``timezone`` computed per
    instance) would not read what the compiled parser reads."""
    if registered.__bases__ != (django_loader,):
        return False
    zone = vars(registered).get("timezone")
    if zone is not None and not isinstance(zone, tzinfo):
        return False
    return set(vars(registered)) <= _plain_names(django_loader)


@cache
def _plain_names(django_loader: Any) -> frozenset[str]:
    """The names in the namespace of a subclass of ``django_loader`` that sets only
    ``timezone`` (as ``register_tzloader``'s does: the class machinery's, and ``timezone``)."""

    class Plain(django_loader):
        timezone = None

    return frozenset(vars(Plain))


_GENERIC: WeakSet[Any] = WeakSet()
"""Connections that were asked for ``plan_cache_mode = force_generic_plan``."""


def _prepares(raw: Any, db: Any) -> bool:
    """Whether this project prepares its own statements on ``raw`` (the setting, or by default
    unless a transaction pooler sits in front); the first time, on a connection outside any
    transaction (a ``SET`` inside one would end with it), ask it for generic plans. ``db``:
    the default connection's wrapper (``raw``'s)."""
    if not _wanted(db):
        return False
    if raw not in _GENERIC and not db.in_atomic_block:
        with db.cursor() as cursor:
            cursor.execute("SET plan_cache_mode = force_generic_plan")
        _GENERIC.add(raw)
    return True


def _raw_connection(db: Any) -> Any:
    """The psycopg 3 connection under ``db`` (the default connection's wrapper), opened (and
    health-checked) as ``db.cursor()`` would; None for any other driver."""
    if psycopg is None or db.vendor != "postgresql":
        return None
    db.close_if_health_check_failed()
    db.ensure_connection()
    raw = db.connection
    return raw if isinstance(raw, psycopg.Connection) else None


def prepares() -> bool:
    """Whether the default connection prepares the worker's statements (by default, or the
    project's own ``prepare_threshold``)."""
    db = connections[DEFAULT_DB_ALIAS]
    raw = _raw_connection(db)
    if raw is None:
        return False
    return raw.prepare_threshold is not None or _wanted(db)


def _wanted(db: Any) -> bool:
    """``SCHEDULER_PREPARED_STATEMENTS``; when None, yes unless a transaction pooler sits in
    front of ``db`` (``DISABLE_SERVER_SIDE_CURSORS``)."""
    wanted = get_settings().PREPARED_STATEMENTS
    if wanted is None:
        return not db.settings_dict.get("DISABLE_SERVER_SIDE_CURSORS", False)
    return bool(wanted)
