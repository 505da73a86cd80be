"""Random POSTs to the admin's action and confirmation pages: no answer is an HTTP 500.

Action names, selections, dates (year 1 to 9999), reasons, versions and JSON text are drawn at
random, posted by a superuser and by a limited staff user of one tenant, to the object pages,
the list's bulk actions, the add form and the kill switch and quota pages; every bulk action of
every admin list is posted with selections it cannot act on (not ids, ids of another tenant,
ids of rows deleted meanwhile).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from scheduler_app import services
from scheduler_app.admin.actions import OBJECT_ACTIONS
from scheduler_app.models import KillSwitch, Occurrence, OccurrenceState, Schedule, TenantQuota
from tests.integration.admin.support import staff, with_history
from tests.integration.support import admin_form

pytestmark = pytest.mark.django_db


def fuzz(examples: int) -> Any:
    """About 100 examples over the three tests, a few seconds on SQLite."""
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


LIST = reverse("admin:scheduler_app_schedule_changelist")
OCCURRENCES = reverse("admin:scheduler_app_occurrence_changelist")
SWITCHES = reverse("admin:scheduler_app_killswitch_changelist")
QUOTAS = reverse("admin:scheduler_app_tenantquota_changelist")
ADD = reverse("admin:scheduler_app_schedule_add")
# What a browser (or a script) can post: no lone surrogates in the raw form text (a page
# never decodes to one); JSON text may still carry them escaped ("\ud800").
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
DATES = st.one_of(
    st.datetimes().map(lambda value: value.strftime("%Y-%m-%dT%H:%M").rjust(16, "0")),
    st.sampled_from(["0001-01-01T00:00", "9999-12-31T23:59", "2026-03-29T02:30", "", "x"]),
    TEXT,
)
JSON_TEXT = st.one_of(
    st.sampled_from(['{"a": "\\ud800"}', '{"\\udfff": 1}', "[1]", '{"queue": {"a": 1}}', "{"]),
    st.recursive(
        st.none() | st.booleans() | st.integers() | TEXT,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
        max_leaves=6,
    ).map(json.dumps),
    TEXT,
)
BULK = ["pause_selected", "resume_selected", "cancel_selected", "approve_selected"]


@contextmanager
def rolled_back() -> Iterator[None]:
    """One example: undo its writes, so that each starts from the same schedules."""
    with transaction.atomic():
        yield
        transaction.set_rollback(True)


@pytest.fixture
def world(settings: Any) -> dict[str, Any]:
    settings.SCHEDULER_APPROVAL_TASKS = ("demo.briefing",)
    settings.SCHEDULER_ALLOWED_TASKS = ("demo.*",)
    root = User.objects.create_superuser("root", "root@example.com", "pw")
    limited = staff(
        "acme_ops",
        "view_schedule",
        "change_schedule",
        "add_schedule",
        "pause_schedule",
        "run_schedule",
        "approve_schedule",
        "view_occurrence",
        "replay_occurrence",
        "add_killswitch",
        "change_killswitch",
        "view_killswitch",
        "view_tenantquota",
        "change_tenantquota",
        tenants=("acme",),
    )
    schedules = [
        services.create_schedule(task="demo.ping", kind="cron", rule="0 8 * * *", tenant="acme"),
        services.create_schedule(task="demo.briefing", kind="cron", rule="0 9 * * *"),
        services.create_schedule(task="demo.ping", kind="interval", rule="1h", tenant="globex"),
    ]
    services.pause_schedule(schedules[2].pk)
    clients = []
    for user in (root, limited):
        client = Client(raise_request_exception=False)
        client.force_login(user)
        clients.append(client)
    return {"clients": clients, "schedules": schedules}


def form_data(draw: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        draw(st.sampled_from(["confirm", "plan", "other"])): "1",
        "note": draw(TEXT),
        "reason": draw(TEXT),
        "expected": draw(st.one_of(st.integers(-5, 10**12).map(str), TEXT)),
        "start": draw(DATES),
        "end": draw(DATES),
        "window_start": draw(DATES),
        "window_end": draw(DATES),
        "overlap": draw(st.sampled_from(["buffer_all", "skip", "nope", ""])),
        "confirm_over_max": draw(st.sampled_from(["on", ""])),
    }
    return data


@st.composite
def posts(draw: Any) -> dict[str, Any]:
    data = form_data(draw)
    return {
        "client": draw(st.integers(0, 1)),
        "schedule": draw(st.integers(0, 2)),
        "page": draw(st.sampled_from([*OBJECT_ACTIONS, "bulk"])),
        "bulk": draw(st.one_of(st.sampled_from(BULK), TEXT)),
        "selection": draw(st.sampled_from(["own", "nope", "", "several", "gone"])),
        "version": draw(st.one_of(st.integers(-1, 5).map(str), TEXT)),
        "data": data,
    }


def url_and_data(post: dict[str, Any], schedules: list[Schedule]) -> tuple[str, dict[str, Any]]:
    target = schedules[post["schedule"]]
    data = {**post["data"], f"version_{target.pk}": post["version"]}
    if post["page"] != "bulk":
        return reverse(f"admin:scheduler_app_schedule_{post['page']}", args=[target.pk]), data
    selection = {
        "own": [str(target.pk)],
        "nope": ["nope"],
        "": [],
        "several": [str(s.pk) for s in schedules],
        "gone": [str(uuid.uuid4())],
    }[post["selection"]]
    return LIST, {**data, "action": post["bulk"], "_selected_action": selection}


@fuzz(55)
@given(post=posts())
@example(
    post={
        "client": 0,
        "schedule": 0,
        "page": "backfill",
        "bulk": "",
        "selection": "",
        "version": "1",
        "data": {"plan": "1", "start": "0001-01-01T00:00", "end": "0001-01-02T00:00"},
    }
)
@example(
    post={
        "client": 0,
        "schedule": 0,
        "page": "bulk",
        "bulk": "pause_selected",
        "selection": "nope",
        "version": "1",
        "data": {"confirm": "1"},
    }
)
@example(  # another tenant's schedule, approved from the list by a tenant user
    post={
        "client": 1,
        "schedule": 2,
        "page": "bulk",
        "bulk": "approve_selected",
        "selection": "own",
        "version": "1",
        "data": {"confirm": "1"},
    }
)
@example(  # a schedule deleted meanwhile
    post={
        "client": 0,
        "schedule": 1,
        "page": "bulk",
        "bulk": "approve_selected",
        "selection": "gone",
        "version": "1",
        "data": {"other": "1"},
    }
)
def test_action_and_confirmation_pages_never_answer_500(
    world: dict[str, Any], post: dict[str, Any]
) -> None:
    url, data = url_and_data(post, world["schedules"])
    with rolled_back():
        response = world["clients"][post["client"]].post(url, data)
    assert response.status_code in (200, 302, 403, 404), (url, data, response.status_code)


@fuzz(25)
@given(
    client=st.integers(0, 1),
    kwargs=JSON_TEXT,
    options=JSON_TEXT,
    args=st.one_of(st.none(), JSON_TEXT),
)
@example(client=0, kwargs='{"a": "\\ud800"}', options="{}", args=None)
@example(client=0, kwargs="{}", options='{"\\ud800": 1}', args=None)
@example(client=1, kwargs="[1]", options="{}", args="[1]")
@example(client=0, kwargs='{"a": "\\u0000"}', options='{"queue": "\\u0000"}', args=None)
def test_the_schedule_form_never_answers_500(
    world: dict[str, Any], client: int, kwargs: str, options: str, args: str | None
) -> None:
    data = admin_form(kwargs=kwargs, options=options, args=args, tenant="acme")
    with rolled_back():
        response = world["clients"][client].post(ADD, data)
    assert response.status_code in (200, 302), (data, response.status_code)


@fuzz(20)
@given(
    client=st.integers(0, 1),
    scope=st.one_of(st.sampled_from(["global", "tenant", "task"]), TEXT),
    target=st.one_of(st.sampled_from(["acme", "globex", "demo.ping", ""]), TEXT),
    enabled=st.sampled_from(["on", ""]),
    reason=TEXT,
    selection=st.sampled_from(["nope", "1", ""]),
)
def test_the_kill_switch_and_quota_pages_never_answer_500(
    world: dict[str, Any],
    client: int,
    scope: str,
    target: str,
    enabled: str,
    reason: str,
    selection: str,
) -> None:
    browser = world["clients"][client]
    form = {"scope": scope, "target": target, "enabled": enabled, "reason": reason}
    quota = {"tenant": target, "max_active_schedules": reason, "max_occurrences_per_hour": ""}
    pages = [
        (reverse("admin:scheduler_app_killswitch_add"), form),
        (reverse("admin:scheduler_app_tenantquota_add"), quota),
        (
            reverse("admin:scheduler_app_tenantquota_changelist"),
            {"action": "delete_selected", "_selected_action": [selection]},
        ),
    ]
    with rolled_back():
        for url, data in pages:
            response = browser.post(url, data)
            assert response.status_code in (200, 302, 403), (url, data, response.status_code)


GONE = "987654321"
"""An integer id no row has (kill switches and quotas); schedules and occurrences get a UUID."""


def bulk_pages(world: dict[str, Any]) -> list[tuple[str, list[str], list[str], str]]:
    """Every admin list with its bulk actions, the ids of rows the tenant user cannot see and
    an id of a row deleted meanwhile."""
    theirs = with_history(tenant="globex")[1]
    Occurrence.objects.filter(pk=theirs.pk).update(state=OccurrenceState.FAILED)
    switch = KillSwitch.objects.create(
        scope="tenant", target="globex", enabled=False, changed_at=timezone.now()
    )
    quota = TenantQuota.objects.create(tenant="globex", max_active_schedules=5)
    return [
        (LIST, BULK, [str(s.pk) for s in world["schedules"]], str(uuid.uuid4())),
        (OCCURRENCES, ["replay"], [str(theirs.pk)], str(uuid.uuid4())),
        (SWITCHES, ["delete_selected"], [str(switch.pk)], GONE),
        (QUOTAS, ["delete_selected"], [str(quota.pk)], GONE),
    ]


@fuzz(20)
@given(
    client=st.integers(0, 1),
    pick=st.integers(0, 11),
    selection=st.sampled_from(["listed", "gone", "both", "nope", "mixed"]),
    stage=st.sampled_from(["confirm", "post", "", "index"]),
    reason=TEXT,
)
@example(client=1, pick=3, selection="listed", stage="", reason="")  # approve_selected
@example(client=0, pick=3, selection="gone", stage="confirm", reason="")
def test_every_bulk_action_answers_a_selection_it_cannot_act_on_with_a_message(
    world: dict[str, Any], client: int, pick: int, selection: str, stage: str, reason: str
) -> None:
    with rolled_back():
        pages = bulk_pages(world)
        url, choices, ids, gone = pages[0] if pick < 4 else pages[1 + pick % 3]
        chosen = {
            "listed": ids,
            "gone": [gone],
            "both": [*ids, gone],
            "nope": ["nope"],
            "mixed": [ids[0], "nope"],
        }[selection]
        data = {"action": choices[pick % len(choices)], "_selected_action": chosen}
        data.update({stage: "yes"} if stage else {}, reason=reason, note=reason)
        response = world["clients"][client].post(url, data)
    assert response.status_code in (200, 302, 403), (url, data, response.status_code)
