"""The task-result admins the occurrence page links to, scoped by tenant.

django-celery-results' ``TaskResult`` (``task_id`` is the occurrence's id) and django-tasks-db's
``DBTaskResult`` (``id`` is the occurrence's latest ``handoff_id``) come with admins that list
every row. A tenant user (``allowed_tenants`` is not None) sees only the rows of occurrences of
their tenants, in the list, the change page, the filters and the search; another row answers
404, like another tenant's schedule. A user of all tenants sees every row, as before.

The packages' own admin classes are kept (subclassed), and replace theirs in the admin site:
their admin module is imported here first, so the order of ``INSTALLED_APPS`` does not matter.
"""

from __future__ import annotations

import importlib
from typing import Any

from django.apps import apps
from django.contrib import admin
from django.db.models import Exists, F, OuterRef, QuerySet, TextField, Value
from django.db.models.functions import Cast, Lower, Replace
from django.http import HttpRequest

from scheduler_app.admin.base import MissingIs404
from scheduler_app.models import Occurrence
from scheduler_app.safety.tenancy import allowed_tenants

CELERY = ("django_celery_results", "django_celery_results.admin", "django_celery_results")
TASKS_DB = ("django_tasks_db", "django_tasks_db.admin", "django_tasks_database")
PACKAGES = (
    # (app, its admin module, app label), model, its column, the occurrence field it holds
    (*CELERY, "TaskResult", "task_id", "id"),
    (*CELERY, "GroupResult", "group_id", None),
    (*TASKS_DB, "DBTaskResult", "id", "handoff_id"),
)
"""A ``None`` occurrence field: no row belongs to an occurrence (Celery's group results), so a
tenant user sees none."""


def _same_uuid(expression: Any) -> Any:
    """A UUID as lower-case hex without dashes, however the database stores it (PostgreSQL's
    ``uuid`` text has dashes, SQLite's ``char(32)`` has none, a task id is text)."""
    text: TextField[str, str] = TextField()
    return Replace(
        Lower(Cast(expression, text)), Value("-", text), Value("", text), output_field=text
    )


def of_tenants(
    queryset: QuerySet[Any], user: Any, column: str, occurrence_field: str | None
) -> Any:
    """Only the result rows of the occurrences of ``user``'s tenants (all for a user of all
    tenants)."""
    tenants = allowed_tenants(user)
    if tenants is None:
        return queryset
    if occurrence_field is None:
        return queryset.none()
    theirs = Occurrence.objects.filter(schedule__tenant__in=sorted(tenants)).annotate(
        key=_same_uuid(F(occurrence_field))
    )
    outer = queryset.annotate(_result_key=_same_uuid(F(column)))
    return outer.filter(Exists(theirs.filter(key=OuterRef("_result_key"))))


class TenantScopedResults(MissingIs404):
    """A mixin for a result admin: its queryset scoped as ``of_tenants`` says; another
    tenant's row answers like a missing one."""

    result_column = "id"
    occurrence_field: str | None = "id"
    missing = "no such task result"

    def get_queryset(self, request: HttpRequest) -> Any:
        queryset = super().get_queryset(request)  # type: ignore[misc]
        return of_tenants(queryset, request.user, self.result_column, self.occurrence_field)


def scoped(base: type[admin.ModelAdmin], column: str, occurrence_field: str | None) -> type:
    """``base`` with ``TenantScopedResults`` in front of it."""
    attrs = {"result_column": column, "occurrence_field": occurrence_field, "__module__": __name__}
    return type(f"TenantScoped{base.__name__}", (TenantScopedResults, base), attrs)


def install(site: admin.AdminSite = admin.site) -> list[str]:
    """Replace each installed package's result admin with its scoped subclass; the models
    done."""
    done = []
    for app, module, label, name, column, occurrence_field in PACKAGES:
        if not apps.is_installed(app):
            continue
        importlib.import_module(module)  # registers the package's admin now, once
        model = apps.get_model(label, name)
        base = type(site._registry[model]) if site.is_registered(model) else admin.ModelAdmin
        if issubclass(base, TenantScopedResults):
            continue
        if site.is_registered(model):
            site.unregister(model)
        site.register(model, scoped(base, column, occurrence_field))
        done.append(f"{label}.{name}")
    return done


INSTALLED = install()
