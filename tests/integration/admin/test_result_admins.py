"""The task-result admins the occurrence page links to are scoped by tenant: a tenant user
sees the result rows of their tenant's occurrences (list, change page, search) and another
tenant's row answers 404; a user of all tenants sees every row."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import reverse
from django.utils import timezone
from django_celery_results.models import GroupResult, TaskResult
from django_tasks_db.models import DBTaskResult
from django_webtest import DjangoTestApp

from scheduler_app.models import Occurrence
from tests.integration.admin.support import staff, with_history

pytestmark = pytest.mark.django_db

CELERY_LIST = reverse("admin:django_celery_results_taskresult_changelist")
TASKS_LIST = reverse("admin:django_tasks_database_dbtaskresult_changelist")
GROUPS_LIST = reverse("admin:django_celery_results_groupresult_changelist")
GROUP = str(uuid.uuid4())


def reader(name: str, *tenants: str) -> User:
    user = staff(name, "view_occurrence", tenants=tenants)
    for app, codename in (
        ("django_celery_results", "view_taskresult"),
        ("django_celery_results", "view_groupresult"),
        ("django_tasks_database", "view_dbtaskresult"),
    ):
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app, codename=codename)
        )
    return user


def with_results(tenant: str) -> tuple[Occurrence, TaskResult, DBTaskResult]:
    """An occurrence of ``tenant`` with a Celery result row and a django-tasks-db job row."""
    _, occurrence = with_history(tenant=tenant, name=f"{tenant} job")
    celery = TaskResult.objects.create(
        task_id=str(occurrence.pk), task_name=f"{tenant}.secret_task", status="SUCCESS"
    )
    job = DBTaskResult.objects.create(
        args_kwargs={"args": [], "kwargs": {}},
        task_path=f"{tenant}.secret_job",
        backend_name="default",
        run_after=timezone.now(),
        exception_class_path="",
        traceback="",
    )
    Occurrence.objects.filter(pk=occurrence.pk).update(handoff_id=str(job.pk))
    return occurrence, celery, job


@pytest.fixture
def rows() -> dict[str, tuple[Occurrence, TaskResult, DBTaskResult]]:
    GroupResult.objects.create(group_id=GROUP, result="globex.group")
    return {tenant: with_results(tenant) for tenant in ("acme", "globex")}


def test_a_tenant_user_lists_only_their_tenants_results(
    django_app: DjangoTestApp, rows: dict[str, tuple[Occurrence, TaskResult, DBTaskResult]]
) -> None:
    acme = reader("acme_ops", "acme")
    celery = django_app.get(CELERY_LIST, user=acme).text
    assert "acme.secret_task" in celery and "globex.secret_task" not in celery
    tasks = django_app.get(TASKS_LIST, user=acme).text
    assert str(rows["acme"][2].pk) in tasks and str(rows["globex"][2].pk) not in tasks
    searched = django_app.get(CELERY_LIST + "?q=secret_task", user=acme).text
    assert "globex.secret_task" not in searched
    assert GROUP not in django_app.get(GROUPS_LIST, user=acme).text  # no occurrence's


def test_another_tenants_result_page_answers_404(
    django_app: DjangoTestApp, rows: dict[str, tuple[Occurrence, TaskResult, DBTaskResult]]
) -> None:
    acme = reader("acme_ops", "acme")
    _, celery, job = rows["globex"]
    for name, pk in (
        ("django_celery_results_taskresult_change", celery.pk),
        ("django_tasks_database_dbtaskresult_change", job.pk),
    ):
        url = reverse(f"admin:{name}", args=[pk])
        assert django_app.get(url, user=acme, expect_errors=True).status_code == 404
    own_celery, own_job = rows["acme"][1:]
    url = reverse("admin:django_tasks_database_dbtaskresult_change", args=[own_job.pk])
    assert "acme.secret_job" in django_app.get(url, user=acme).text
    url = reverse("admin:django_celery_results_taskresult_change", args=[own_celery.pk])
    assert "acme.secret_task" in django_app.get(url, user=acme).text


def test_the_occurrence_page_links_a_result_the_user_can_open(
    django_app: DjangoTestApp, rows: dict[str, tuple[Occurrence, TaskResult, DBTaskResult]]
) -> None:
    acme = reader("acme_ops", "acme")
    occurrence = rows["acme"][0]
    page = django_app.get(
        reverse("admin:scheduler_app_occurrence_change", args=[occurrence.pk]), user=acme
    )
    result = page.click(href=r"/taskresult/\d+/change/")
    assert "acme.secret_task" in result.text


def test_a_user_of_every_tenant_sees_every_row(
    django_app: DjangoTestApp, rows: dict[str, tuple[Occurrence, TaskResult, DBTaskResult]]
) -> None:
    root = User.objects.create_superuser("root", "root@example.com", "pw")
    celery = django_app.get(CELERY_LIST, user=root).text
    assert "acme.secret_task" in celery and "globex.secret_task" in celery
    tasks = django_app.get(TASKS_LIST, user=root).text
    assert all(str(job.pk) in tasks for _, _, job in rows.values())
    assert GROUP in django_app.get(GROUPS_LIST, user=root).text
