"""The live preview view answers 200 (or 403 with a message), never 500: for a view-only user,
for a code-declared schedule, for a chosen start date, and for whatever a client POSTs."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler_app import services
from scheduler_app.models import Schedule
from tests.integration.admin.support import client_for, staff

pytestmark = pytest.mark.django_db

URL = reverse("admin:scheduler_app_schedule_preview")


def weekly(**fields: Any) -> Schedule:
    values = {
        "task": "demo.ping",
        "kind": "cron",
        "rule": "0 9 * * MON",
        "timezone": "Europe/Riga",
        **fields,
    }
    return services.create_schedule(**values)


def test_a_view_only_user_previews_a_stored_schedule() -> None:
    schedule = weekly()
    viewer = client_for(staff("viewer", "view_schedule"))
    response = viewer.post(URL, {"_object_id": str(schedule.pk)})
    assert response.status_code == 200
    answer = response.json()
    assert answer["ok"] is True
    assert answer["description"] == "At 09:00, on Monday, Europe/Riga"
    assert answer["slots"][0]["local"].startswith("Mon ")


def test_a_code_declared_schedule_previews_as_stored() -> None:
    schedule = weekly()
    Schedule.objects.filter(pk=schedule.pk).update(origin="code")
    admin = client_for(User.objects.create_superuser("admin", "a@example.com", "pw"))
    response = admin.post(URL, {"_object_id": str(schedule.pk), "rule": "0 10 * * *"})
    assert response.status_code == 200
    answer = response.json()
    # Code owns the definition: the preview shows the stored rule, not a posted one.
    assert (answer["ok"], answer["rule"]) == (True, "0 9 * * MON")


def test_a_user_without_view_permission_gets_403_with_a_message() -> None:
    schedule = weekly()
    stranger = client_for(staff("stranger"))
    for data in ({"_object_id": str(schedule.pk)}, {"repeat": "daily", "at_times": "09:00"}):
        response = stranger.post(URL, data)
        assert response.status_code == 403
        assert "permission" in response.json()["error"]


def test_a_view_only_user_may_not_preview_a_new_schedule() -> None:
    viewer = client_for(staff("viewer", "view_schedule"))
    response = viewer.post(URL, {"repeat": "daily", "at_times": "09:00"})
    assert response.status_code == 403
    assert "add_schedule" in response.json()["error"]


def test_the_preview_starts_at_the_chosen_local_date() -> None:
    admin = client_for(User.objects.create_superuser("admin", "a@example.com", "pw"))
    form = {"repeat": "weekly", "weekdays": ["SU"], "at_times": "03:30"}
    answer = admin.post(
        URL, {**form, "timezone": "Europe/Riga", "_preview_from": "2027-03-20T00:00"}
    ).json()
    assert answer["ok"] is True
    assert answer["from"] == {"local": "Sat 2027-03-20 00:00 EET", "utc": "2027-03-19 22:00 UTC"}
    first, second = answer["slots"][:2]
    assert first["local"] == "Sun 2027-03-21 03:30 EET"
    assert second["local"] == "Sun 2027-03-28 04:00 EEST"  # the spring-forward Sunday
    assert "does not exist" in second["note"]


def test_a_slot_exactly_at_the_chosen_start_is_shown() -> None:
    admin = client_for(User.objects.create_superuser("admin", "a@example.com", "pw"))
    answer = admin.post(
        URL,
        {
            "repeat": "daily",
            "at_times": "09:00",
            "timezone": "UTC",
            "_preview_from": "2027-01-01T09:00",
        },
    ).json()
    assert answer["slots"][0]["local"] == "Fri 2027-01-01 09:00 UTC"


def test_the_builder_page_has_the_preview_from_input() -> None:
    schedule = weekly()
    admin = client_for(User.objects.create_superuser("admin", "a@example.com", "pw"))
    for url in (
        reverse("admin:scheduler_app_schedule_add"),
        reverse("admin:scheduler_app_schedule_change", args=[schedule.pk]),
    ):
        page = admin.get(url).content.decode()
        assert 'name="_preview_from"' in page and 'type="datetime-local"' in page


def test_a_stored_row_with_a_broken_rule_is_a_field_error() -> None:
    schedule = weekly()
    Schedule.objects.filter(pk=schedule.pk).update(rule="61 * * * *", timezone="Mars/Base")
    viewer = client_for(staff("viewer", "view_schedule"))
    response = viewer.post(URL, {"_object_id": str(schedule.pk)})
    assert response.status_code == 200
    assert response.json()["ok"] is False


def test_another_tenants_schedule_is_a_json_404() -> None:
    schedule = weekly(tenant="b")
    viewer = client_for(staff("viewer", "view_schedule", tenants=("a",)))
    response = viewer.post(URL, {"_object_id": str(schedule.pk)})
    assert (response.status_code, response["Content-Type"]) == (404, "application/json")


@pytest.mark.parametrize(
    "text", ["tomorrow", "2027-02-30T00:00", "9999-12-31T23:59", "0001-01-01T00:00", "\x00"]
)
def test_a_bad_start_is_a_field_error(text: str) -> None:
    admin = client_for(User.objects.create_superuser("admin", "a@example.com", "pw"))
    response = admin.post(
        URL, {"repeat": "daily", "at_times": "09:00", "timezone": "UTC", "_preview_from": text}
    )
    assert response.status_code == 200
    answer = response.json()
    assert answer["ok"] is False
    assert "preview_from" in answer["errors"]


FIELDS = [
    "_object_id",
    "_preview_from",
    "repeat",
    "every",
    "at_times",
    "weekdays",
    "monthly_on",
    "month_day",
    "nth",
    "nth_weekday",
    "once_at",
    "kind",
    "rule",
    "timezone",
    "anchor_0",
    "anchor_1",
    "dst_nonexistent",
    "dst_ambiguous",
    "starts_at_0",
    "starts_at_1",
    "ends_at_0",
    "ends_at_1",
    "max_count",
    "active_window",
    "window_policy",
    "expected_version",
    "owner",
    "tenant",
    "kwargs",
    "options",
]
VALUES = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        [
            "",
            "cron",
            "rrule",
            "interval",
            "once",
            "advanced",
            "daily",
            "weekly",
            "monthly",
            "minutes",
            "hours",
            "FREQ=MONTHLY;BYDAY=-1SU",
            "*/5 * * * *",
            "2030-03-31",
            "03:30:00",
            "2030-03-31T03:30",
            "9999-12-31",
            "0001-01-01",
            "MON-FRI 09:00-18:00",
            "skip",
            "Europe/Riga",
            "-1",
            "99999999999999999999",
        ]
    ),
    st.integers(min_value=-(10**20), max_value=10**20).map(str),
)


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    data=st.dictionaries(st.sampled_from(FIELDS), st.lists(VALUES, max_size=2), max_size=8),
    who=st.sampled_from(["editor", "viewer"]),
    which=st.sampled_from(["new", "stored", "code", "posted"]),
)
def test_no_post_makes_it_answer_500(data: dict[str, list[str]], who: str, which: str) -> None:
    stored = Schedule.objects.filter(key="stored").first() or weekly(key="stored")
    code = Schedule.objects.filter(origin="code").first() or _code_declared()
    users = {user.username: user for user in User.objects.filter(username__in=USERS)}
    for name, codenames in USERS.items():
        if name not in users:
            users[name] = staff(name, *codenames)
    posted = {name: values for name, values in data.items() if values}
    if which != "posted":
        posted["_object_id"] = [{"new": "", "stored": str(stored.pk), "code": str(code.pk)}[which]]
    response = client_for(users[who]).post(URL, posted)
    assert response.status_code in (200, 403, 404), response.content[:300]
    assert response["Content-Type"] == "application/json"


USERS = {
    "editor": ("view_schedule", "change_schedule", "add_schedule"),
    "viewer": ("view_schedule",),
}


def _code_declared() -> Schedule:
    schedule = weekly(name="declared")
    Schedule.objects.filter(pk=schedule.pk).update(origin="code")
    return Schedule.objects.get(pk=schedule.pk)
