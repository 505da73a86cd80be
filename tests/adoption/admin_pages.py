"""Every page of the scheduler's admin in a new user's project, through its runserver.

The pages are not listed by hand: a script run in the project's ``manage.py shell`` walks the
URL patterns of every model admin of ``scheduler_app`` (the custom ones included: monitoring,
preview, the confirmation pages of the actions) and fills their object id with a real row, so
a page added later is opened too. The test then logs in as a user would and GETs each.
"""

from __future__ import annotations

import http.cookiejar
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

ENUMERATE = """
import json
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.test import RequestFactory
from django.urls import URLPattern, URLResolver, reverse
from django.utils import timezone
from scheduler_app.models import Occurrence, TenantQuota
from scheduler_app.safety.killswitch import set_kill_switch

# A row for the pages that need one: a quota and a kill switch (a tenant no schedule has).
TenantQuota.objects.get_or_create(tenant="acme", defaults={"max_active_schedules": 10})
set_kill_switch(
    "tenant", "acme", enabled=True, reason="adoption test", now=timezone.now(),
    user=get_user_model().objects.get(username="admin"),
)


def walk(patterns):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from walk(pattern.url_patterns)
        elif pattern.name:
            yield pattern


def row(model):
    if model is Occurrence:  # the latest run: the one a result belongs to
        return Occurrence.objects.order_by("-scheduled_for").first()
    return model._default_manager.order_by("pk").first()


request = RequestFactory().get("/admin/")
request.user = get_user_model().objects.get(username="admin")
pages, missing, refused = [], [], []
for model, model_admin in admin.site._registry.items():
    if model._meta.app_label != "scheduler_app":
        continue
    found = row(model)
    for pattern in walk(model_admin.urls):
        # An add or delete page the admin refuses (a read-only model) has no link to it.
        if pattern.name.endswith("_add") and not model_admin.has_add_permission(request):
            refused.append(pattern.name)
            continue
        if pattern.name.endswith("_delete") and not model_admin.has_delete_permission(request):
            refused.append(pattern.name)
            continue
        params = set(getattr(pattern.pattern, "converters", {}))
        params |= set(pattern.pattern.regex.groupindex)
        if params - {"object_id"} or (params and found is None):
            missing.append(pattern.name)
            continue
        kwargs = {"object_id": found.pk} if params else {}
        pages.append([pattern.name, reverse("admin:" + pattern.name, kwargs=kwargs)])
print("PAGES=" + json.dumps({"pages": pages, "missing": missing, "refused": refused}))
"""

MUST_OPEN = {
    *(f"scheduler_app_schedule_{p}" for p in ("changelist", "add", "change", "history")),
    "scheduler_app_occurrence_changelist",
    "scheduler_app_occurrence_change",
    "scheduler_app_monitoring",
    "scheduler_app_killswitch_changelist",
    "scheduler_app_killswitch_change",
    "scheduler_app_tenantquota_changelist",
    "scheduler_app_tenantquota_change",
    "scheduler_app_beatheartbeat_changelist",
    "scheduler_app_beatheartbeat_change",
}
"""The pages the issue names; every other page the admin has is opened as well."""


def admin_pages(shell_output: str) -> tuple[list[tuple[str, str]], list[str]]:
    """(name, path) of every page, and the names no row could fill, from ENUMERATE's output."""
    (line,) = [x for x in shell_output.splitlines() if x.startswith("PAGES=")]
    found = json.loads(line.removeprefix("PAGES="))
    return [(name, path) for name, path in found["pages"]], found["missing"]


@dataclass
class Browser:
    """A logged-in session against the project's runserver."""

    base: str
    opener: urllib.request.OpenerDirector

    @classmethod
    def login(cls, base: str, username: str, password: str, timeout: float = 30) -> Browser:
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        browser = cls(base, opener)
        page = browser.wait_for("/admin/login/", timeout)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        assert token, page[:2000]
        form = {"csrfmiddlewaretoken": token.group(1), "username": username}
        form |= {"password": password, "next": "/admin/"}
        request = urllib.request.Request(
            base + "/admin/login/?next=/admin/",
            data=urllib.parse.urlencode(form).encode(),
            headers={"Referer": base + "/admin/login/"},
        )
        with opener.open(request, timeout=30) as response:
            assert response.url.rstrip("/").endswith("/admin"), f"login failed: {response.url}"
        return browser

    def wait_for(self, path: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self.get(path)[1]
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def get(self, path: str) -> tuple[int, str]:
        try:
            with self.opener.open(self.base + path, timeout=30) as response:
                return response.status, response.read().decode(errors="replace")
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace")

    def open_all(self, pages: list[tuple[str, str]]) -> dict[str, tuple[int, str]]:
        """name -> (status, body) of each page (200 for the test to pass)."""
        return {name: self.get(path) for name, path in pages}
