"""Which tenants a user may see and change: one swappable hook, used everywhere.

``SCHEDULER_TENANT_RESOLVER`` names a function ``resolver(user) -> set[str] | None``:
``None`` means every tenant (superusers), a set the tenants the user may see. The default,
``tenants_for_user``, reads Django groups named ``tenant:<name>``; a user in no such group
gets ``{""}``, the schedules without a tenant (so a project without tenants needs nothing).

The admin (querysets, pages, the JSON preview), and the operator services
(``run_now``, ``backfill``, ``restore_schedule``) all ask ``allowed_tenants`` and answer a
schedule of another tenant as if it did not exist (HTTP 404 / ``TenantForbidden``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from typing import Any, TypeVar, cast

from django.db.models import Model, QuerySet
from django.utils.module_loading import import_string

from scheduler_app.conf import get_settings
from scheduler_app.errors import SchedulerError
from scheduler_app.safety.actors import is_system

GROUP_PREFIX = "tenant:"
M = TypeVar("M", bound=Model)


class TenantForbidden(SchedulerError):
    """The user may not see or change this schedule (another tenant's)."""


def tenants_for_user(user: Any) -> set[str] | None:
    """Default resolver: superusers see all; others the tenants of their ``tenant:*`` groups."""
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return set()
    if user.is_superuser:
        return None
    names = user.groups.filter(name__startswith=GROUP_PREFIX).values_list("name", flat=True)
    tenants = {name[len(GROUP_PREFIX) :] for name in names}
    return tenants or {""}


def _resolver() -> Callable[[Any], set[str] | None]:
    resolver: Callable[[Any], set[str] | None] = import_string(get_settings().TENANT_RESOLVER)
    return resolver


def allowed_tenants(user: Any) -> set[str] | None:
    """The tenants ``user`` may act on (``None``: all), from the configured resolver.

    The answer is cached on the user object for the length of a request. A system actor
    (``scheduler_app.safety.actors``) acts on every tenant.
    """
    if is_system(user):
        return None
    cached: Any = getattr(user, "_scheduler_tenants", _MISSING)
    if cached is not _MISSING:
        return cast("set[str] | None", cached)
    tenants = _resolver()(user)
    result = None if tenants is None else {str(t) for t in tenants}
    if user is not None:
        with suppress(AttributeError):  # a user object with __slots__ is asked every time
            user._scheduler_tenants = result
    return result


_MISSING = object()


def scope(queryset: QuerySet[M], user: Any, field: str = "tenant") -> QuerySet[M]:
    """Only the rows of ``user``'s tenants; ``field`` is the path to the tenant column."""
    tenants = allowed_tenants(user)
    if tenants is None:
        return queryset
    return queryset.filter(**{f"{field}__in": sorted(tenants)})


def may_access(user: Any, tenant: str) -> bool:
    tenants = allowed_tenants(user)
    return tenants is None or tenant in tenants


def check_access(user: Any, schedule: Any) -> None:
    """Raise ``TenantForbidden`` unless ``user`` (or a system actor) may act on it."""
    if is_system(user):
        return
    if not may_access(user, schedule.tenant):
        raise TenantForbidden(
            f"schedule {schedule.pk} belongs to a tenant you are not a member of; ask an "
            "administrator to add you to its tenant group"
        )
