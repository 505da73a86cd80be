"""The operator's view in a real headless browser: the schedule list on a 1366 px laptop screen
(no sideways scrolling, badges, no next run for what will not run) and the History page with
the audit trail. Screenshots: ``var/screenshots/10-schedule-list-1366.png`` and
``11-schedule-audit-trail.png``."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import django
import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from scheduler_app import services
from scheduler_app.models import (
    KillSwitch,
    KillSwitchEvent,
    KillSwitchScope,
    Schedule,
    ScheduleOrigin,
    ScheduleStatus,
)
from tests.acceptance.browser.conftest import SCREENSHOTS, log_in, wait_for
from tests.acceptance.browser.test_admin_browser import seed_last_day

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
LAPTOP = (1366, 768)


def switch_on(scope: str, target: str, reason: str) -> None:
    now = timezone.now()
    KillSwitch.objects.create(
        scope=scope, target=target, enabled=True, reason=reason, changed_by="ops", changed_at=now
    )
    KillSwitchEvent.objects.create(
        scope=scope, target=target, enabled=True, by="ops", at=now, reason=reason
    )


def a_busy_list(ops: User) -> None:
    """Schedules in every state the list distinguishes, with long names, rules and notes."""
    create = services.create_schedule
    seed_last_day(
        create(task="demo.ping", kind="cron", rule="*/15 * * * *", name="quarter-hourly sync")
    )
    create(
        task="demo.digest",
        kind="rrule",
        rule="FREQ=MONTHLY;BYDAY=-1SU;BYHOUR=3;BYMINUTE=0",
        name="Monthly invoice run for every customer of the northern region, with reminders",
        timezone="America/Argentina/Buenos_Aires",
        tenant="acme-corporation-international",
    )
    paused = create(
        task="demo.briefing", kind="cron", rule="30 7 * * MON-FRI", name="morning briefing"
    )
    services.pause_schedule(
        paused.pk,
        user=ops,
        note="waiting for the new bucket; resume once storage confirms the migration is over",
    )
    awaiting = create(task="demo.hourly_sync", kind="interval", rule="1h", name="hourly sync")
    Schedule.objects.filter(pk=awaiting.pk).update(status=ScheduleStatus.AWAITING_APPROVAL)
    create(task="demo.lead_reminder", kind="cron", rule="0 9 1 * *", tenant="globex")
    switch_on(KillSwitchScope.TENANT, "globex", "globex incident")
    declared = create(task="demo.infrastructure_check", kind="interval", rule="5m", name="infra")
    Schedule.objects.filter(pk=declared.pk).update(origin=ScheduleOrigin.CODE)


def no_sideways_scroll(driver: WebDriver) -> tuple[int, int]:
    """The page's width and the window's; and no box on it (the list's results, a table)
    scrolls sideways either."""
    overflowing = driver.execute_script(
        "return [...document.querySelectorAll('#content *')]"
        ".filter(e => e.scrollWidth > e.clientWidth + 1"
        " && ['auto', 'scroll'].includes(getComputedStyle(e).overflowX))"
        ".map(e => e.id || e.className)"
    )
    assert overflowing == [], overflowing
    return (
        int(driver.execute_script("return document.documentElement.scrollWidth")),
        int(driver.execute_script("return window.innerWidth")),
    )


def laptop_shot(driver: WebDriver, name: str) -> None:
    """The page at 1366 px wide, as tall as it is (back to the session's size afterwards)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    height = int(driver.execute_script("return document.body.scrollHeight"))
    driver.set_window_size(LAPTOP[0], min(max(height, LAPTOP[1]), 2400))
    driver.execute_script("window.scrollTo(0, 0);")
    driver.save_screenshot(str(SCREENSHOTS / f"{name}.png"))


@pytest.fixture
def laptop(driver: WebDriver) -> Iterator[WebDriver]:
    driver.set_window_size(*LAPTOP)
    yield driver
    driver.set_window_size(1920, 1080)


@pytest.mark.xfail(
    django.VERSION >= (6, 0),
    strict=True,
    reason="Django 6's admin (nav sidebar 276 px, the list's results box scrolling sideways) "
    "leaves the list 13 px short at 1366 px: its results box scrolls (issue 36, open)",
)
def test_the_list_fits_a_laptop_screen_and_never_misleads(
    driver: WebDriver, live_server: object, laptop: object
) -> None:
    base = str(live_server)
    ops = User.objects.create_superuser("ops", "ops@example.com", "pw")
    a_busy_list(ops)
    log_in(driver, base, "ops", "pw")
    driver.set_window_size(*LAPTOP)
    driver.get(f"{base}/admin/scheduler_app/schedule/")
    wait_for(driver, lambda d: d.find_elements(By.ID, "result_list"))
    scroll_width, inner_width = no_sideways_scroll(driver)
    assert scroll_width <= inner_width, (scroll_width, inner_width)

    rows = {
        row.find_element(By.CSS_SELECTOR, "td.field-name_text, th.field-name_text").text: row
        for row in driver.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")
    }
    paused = next(row for name, row in rows.items() if name.startswith("morning briefing"))
    assert "waiting for the new bucket" in paused.text
    assert paused.find_element(By.CSS_SELECTOR, "td.field-next_run_text").text == "-"
    unnamed = next(row for name, row in rows.items() if name.startswith("demo.lead_reminder:"))
    assert "kill switch" in unnamed.find_element(By.CSS_SELECTOR, "td.field-status_badge").text
    awaiting = next(row for name, row in rows.items() if name.startswith("hourly sync"))
    assert "awaiting approval" in awaiting.text
    assert awaiting.find_element(By.CSS_SELECTOR, "td.field-next_run_text").text == "-"
    laptop_shot(driver, "10-schedule-list-1366")


def test_the_history_page_shows_the_audit_trail(
    driver: WebDriver, live_server: object, laptop: object
) -> None:
    base = str(live_server)
    ops = User.objects.create_superuser("ops", "ops@example.com", "pw")
    schedule = services.create_schedule(
        task="demo.ping",
        kind="cron",
        rule="30 3 * * SUN",
        name="Sunday night export",
        timezone="Europe/Riga",
        tenant="acme",
        user=ops,
    )
    services.pause_schedule(schedule.pk, user=ops, note="waiting for the new bucket")
    services.resume_schedule(schedule.pk, user=ops, note="bucket is back")
    services.run_now(schedule.pk, user=ops, reason="customer asked for a fresh export")
    start = timezone.now() - timedelta(days=14)
    services.backfill(
        schedule.pk, start=start, end=timezone.now(), user=ops, reason="missed during outage"
    )
    switch_on(KillSwitchScope.TENANT, "acme", "acme broker maintenance")
    log_in(driver, base, "ops", "pw")
    driver.set_window_size(*LAPTOP)
    driver.get(f"{base}/admin/scheduler_app/schedule/{schedule.pk}/history/")
    wait_for(driver, lambda d: d.find_elements(By.ID, "sched-audit"))
    trail = driver.find_element(By.ID, "sched-audit").text
    for text in (
        "created",
        "paused",
        "waiting for the new bucket",
        "resumed",
        "run now",
        "customer asked for a fresh export",
        "backfill",
        "missed during outage",
    ):
        assert text in trail, text
    assert " EET (" in trail or " EEST (" in trail
    switches = driver.find_element(By.ID, "sched-switch-history").text
    assert "acme broker maintenance" in switches and "tenant acme" in switches
    assert driver.find_element(By.ID, "change-history")  # Django's own log, below
    scroll_width, inner_width = no_sideways_scroll(driver)
    assert scroll_width <= inner_width, (scroll_width, inner_width)
    laptop_shot(driver, "11-schedule-audit-trail")
