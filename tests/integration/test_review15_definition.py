"""Review 15: a definition parsed once (``parse_definition`` -> ``Definition``, stored by the
services without checking it again). Each test states the behaviour expected of the change and
attacks one of its promises."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from types import MappingProxyType, SimpleNamespace
from typing import Any

import pytest
from django.contrib.auth.models import User
from django_webtest import DjangoTestApp

from scheduler_app.admin import forms as admin_forms
from scheduler_app.clock import FakeClock
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.models import Schedule
from scheduler_app.services import create_schedule, parse_definition, update_schedule
from tests.integration.admin.support import (
    A_NEW_SCHEDULE,
    ADD_URL,
    change_url,
    page_errors,
    schedule_form,
    submit,
)
from tests.integration.support import START, TASK

pytestmark = pytest.mark.django_db

SECONDS = 43
"""The seconds of the moment the add page is saved: nobody chose them."""


@pytest.fixture
def saved_at(monkeypatch: pytest.MonkeyPatch) -> datetime:
    """The admin form's clock, at a moment with seconds (the services keep the real clock)."""
    at = datetime(2030, 3, 4, 10, 15, SECONDS, 250_000, tzinfo=UTC)
    monkeypatch.setattr(admin_forms.ScheduleForm, "_now", lambda self: at)
    return at


@pytest.mark.parametrize(
    "typed",
    [
        A_NEW_SCHEDULE,  # cron, advanced mode
        {"name": "built", "task": "demo.ping", "repeat": "daily", "at_times": "09:30"},
        {**A_NEW_SCHEDULE, "kind": "once", "rule": "2031-01-01T10:00:00+00:00"},
    ],
    ids=["cron", "builder", "once"],
)
def test_admin_add_stores_no_anchor_nobody_chose(
    django_app: DjangoTestApp, saved_at: datetime, typed: dict[str, object]
) -> None:
    """A cron or one-time schedule added on the admin's add page, its anchor left empty, is
    stored without an anchor, as before the change (and as every other way in stores it): the
    form's own stand-in anchor (the moment of the check, seconds included) is only for the
    check, never the stored definition."""
    admin = User.objects.create_superuser("admin", "admin@example.com", "pw")
    response = submit(schedule_form(django_app, ADD_URL, admin), "_save", **typed)
    assert response.status_code == 302, page_errors(response)
    assert Schedule.objects.get().anchor is None


def test_a_cron_added_in_the_admin_then_made_an_interval_runs_on_whole_minutes(
    django_app: DjangoTestApp, saved_at: datetime
) -> None:
    """The consequence: a cron schedule added on the admin page and later changed there to
    "every hour" runs on whole minutes (the anchor the form picks has no seconds, "a 17:00 rule
    must not run at 17:00:43"), not at the seconds of the moment it was first added."""
    admin = User.objects.create_superuser("admin", "admin@example.com", "pw")
    added = submit(schedule_form(django_app, ADD_URL, admin), "_save", **A_NEW_SCHEDULE)
    assert added.status_code == 302, page_errors(added)
    row = Schedule.objects.get()
    form = schedule_form(django_app, change_url(row), admin)
    changed = submit(form, "_save", repeat="advanced", kind="interval", rule="3600")
    assert changed.status_code == 302, page_errors(changed)
    row.refresh_from_db()
    assert row.kind == "interval"
    assert row.anchor is not None and row.anchor.second == 0, row.anchor
    assert row.next_run_at is not None and row.next_run_at.second == 0, row.next_run_at


def _forged_by_replace(checked: Any) -> Any:
    bad = {**checked.columns, "task": "celery.backend_cleanup", "rule": "* * * * *"}
    return dataclasses.replace(checked, _fields=MappingProxyType(bad))


def _look_alike(checked: Any) -> Any:
    bad = {**checked.columns, "task": "celery.backend_cleanup", "rule": "* * * * *"}
    return SimpleNamespace(columns=bad, timing=checked.timing)


@pytest.mark.parametrize("forge", [_forged_by_replace, _look_alike], ids=["replace", "duck"])
@pytest.mark.parametrize("service", ["create", "update"])
def test_only_a_parsed_definition_is_stored_unchecked(forge: Any, service: str) -> None:
    """Only ``parse_definition`` makes one (docs/scheduling.md): a Definition copied with
    ``dataclasses.replace`` (which carries the parsed token over) or any object with
    ``columns`` and ``timing`` is refused with ``TypeError`` (the copy when it is made, the
    look-alike by ``create_schedule`` and ``update_schedule``), and nothing is stored.
    Otherwise ``celery.*`` (never schedulable) and a rule whose columns and timing disagree
    are stored with no check at all."""
    clock = FakeClock(START)
    row = create_schedule(clock=clock, task=TASK, kind="cron", rule="0 9 * * *")
    checked = parse_definition({"task": TASK, "kind": "cron", "rule": "0 10 * * *"}, now=START)
    with pytest.raises(TypeError):
        forged = forge(checked)  # replace() is refused here already
        if service == "create":
            create_schedule(definition=forged, clock=clock)
        else:
            update_schedule(row.pk, expected_version=1, definition=forged, clock=clock)
    assert not Schedule.objects.filter(task__startswith="celery.").exists()
    row.refresh_from_db()
    assert (row.rule, row.version) == ("0 9 * * *", 1)


RRULE_IN_PARIS = "DTSTART;TZID=Europe/Paris:20260105T090000\nRRULE:FREQ=DAILY"


def test_parse_definition_reads_the_zone_of_an_rrule_as_create_schedule_does() -> None:
    """``parse_definition`` "does everything ``create_schedule`` does to a definition"
    (docs/scheduling.md): an RRULE whose DTSTART names a zone and no ``timezone`` beside it is
    accepted by ``create_schedule(**fields)`` (the zone is the DTSTART's), so it is accepted by
    ``parse_definition`` too, and the definition stored is the same."""
    given = {"task": TASK, "kind": "rrule", "rule": RRULE_IN_PARIS}
    by_keywords = create_schedule(clock=FakeClock(START), **given)
    assert by_keywords.timezone == "Europe/Paris"
    definition = parse_definition(given, now=START)
    assert definition.columns["timezone"] == "Europe/Paris"
    stored = create_schedule(clock=FakeClock(START), definition=definition)
    assert (stored.timezone, stored.next_run_at) == ("Europe/Paris", by_keywords.next_run_at)


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({"task": TASK, "rule": "0 9 * * *"}, "kind"),
        ({"task": TASK, "kind": "cron"}, "rule"),
    ],
    ids=["no-kind", "no-rule"],
)
def test_parse_definition_names_a_missing_field(given: dict[str, Any], field: str) -> None:
    """``parse_definition`` is public, for "a form of your own, a file importer or a dry run"
    to show errors before saving: a missing ``kind`` or ``rule`` is a
    ``ScheduleValidationError`` naming it (code ``required``, as ``create_schedule`` says),
    never a ``KeyError``."""
    with pytest.raises(ScheduleValidationError) as caught:
        parse_definition(given, now=START)
    assert (caught.value.field, caught.value.code) == (field, "required")


def test_parse_definition_reads_text_as_create_schedule_does() -> None:
    """``create_schedule(text="every weekday at 9:00")`` is documented; ``parse_definition``,
    which "does everything ``create_schedule`` does to a definition", reads the text the same
    way (not a ``KeyError``)."""
    given = {"task": TASK, "text": "every weekday at 9:00"}
    by_keywords = create_schedule(clock=FakeClock(START), **given)
    definition = parse_definition(given, now=START)
    assert (definition.columns["kind"], definition.columns["rule"]) == (
        by_keywords.kind,
        by_keywords.rule,
    )
