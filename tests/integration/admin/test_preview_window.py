"""The preview's description says the active window and what happens outside it, as typed on
the add page (the form as rendered, sent as the page's script sends it), and the list's rule
column says it too."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from django_webtest import DjangoTestApp  # type: ignore[import-untyped]

from scheduler_app import services
from scheduler_app.admin.display import rule_sentence
from tests.integration.admin.support import A_NEW_SCHEDULE, ADD_URL, fill, schedule_form

pytestmark = pytest.mark.django_db

PREVIEW = reverse("admin:scheduler_app_schedule_preview")


@pytest.mark.parametrize(
    ("policy", "outside"),
    [("skip", "slots outside skipped"), ("defer", "slots outside deferred to the next opening")],
)
def test_the_live_preview_describes_the_window(
    django_app: DjangoTestApp, policy: str, outside: str
) -> None:
    root = User.objects.create_superuser("root", "r@example.com", "pw")
    form = schedule_form(django_app, ADD_URL, root)
    fill(form, **A_NEW_SCHEDULE)
    fill(form, rule="0 * * * *", timezone="Europe/Riga", active_window="MON-FRI 08:00-18:00")
    fill(form, window_policy=policy)
    answer = django_app.post(PREVIEW, form.submit_fields(), user=root).json
    assert answer["ok"] is True, answer
    assert answer["description"] == (
        "At minute 0 of every hour, Europe/Riga, only MON-FRI 08:00-18:00 (Europe/Riga), " + outside
    )


def test_the_rule_column_says_the_window() -> None:
    schedule = services.create_schedule(
        task="demo.ping",
        kind="cron",
        rule="0 * * * *",
        timezone="Europe/Riga",
        active_window="mon-fri 8:00-18:00",
        window_policy="skip",
    )
    assert rule_sentence(schedule) == (
        "At minute 0 of every hour, only MON-FRI 08:00-18:00 (Europe/Riga), slots outside skipped"
    )
