"""Every action page of a schedule, in a real browser, reached as an operator reaches it.

Each test opens the schedule's change page, follows its action link (pause, resume, run now,
backfill, cancel, undo cancel, approve), fills what a person fills, presses the page's button
and checks the row, the audit trail and the message the operator reads afterwards.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.conf import LazySettings
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from scheduler_app import services
from scheduler_app.models import (
    Occurrence,
    Schedule,
    ScheduleAuditEvent,
    ScheduleStatus,
    Trigger,
)
from tests.acceptance.browser.conftest import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
RIGA = ZoneInfo("Europe/Riga")


@pytest.fixture(scope="session")
def driver(django_db_setup: None, driver: WebDriver) -> WebDriver:
    """The browser, made after the test database: the database is then dropped after the
    browser and the live server are gone. Made first (the folder's ``driver`` alone, run on
    PostgreSQL), the live server's request threads still hold connections when the database
    is dropped: "database ... is being accessed by other users"."""
    return driver


def daily(**fields: Any) -> Schedule:
    return services.create_schedule(
        task="demo.ping", kind="cron", rule="0 9 * * *", timezone=RIGA.key, **fields
    )


def open_action(driver: WebDriver, base: str, schedule: Schedule, action: str) -> None:
    """The change page, then its action link (the page's preview answered first: no request
    of the page is left running while the action page loads)."""
    driver.get(f"{base}/admin/scheduler_app/schedule/{schedule.pk}/change/")
    wait_for(
        driver,
        lambda d: (
            d.find_element(By.ID, "sched-live-preview").get_attribute("data-state")
            in ("ok", "error")
        ),
    )
    driver.find_element(By.CSS_SELECTOR, f'a.sched-action[data-action="{action}"]').click()
    wait_for(driver, lambda d: d.find_elements(By.ID, "sched-confirm"))


def fill(driver: WebDriver, name: str, value: str) -> None:
    """Type into a field; a ``datetime-local`` input gets its value as a date picker sets it."""
    element = driver.find_element(By.CSS_SELECTOR, f'#sched-confirm [name="{name}"]')
    if element.get_attribute("type") == "datetime-local":
        driver.execute_script(
            "arguments[0].value = arguments[1];"
            "arguments[0].dispatchEvent(new Event('change', {bubbles: true}));",
            element,
            value,
        )
        return
    element.clear()
    element.send_keys(value)


def press(driver: WebDriver, stage: str = "confirm") -> None:
    """Press the page's button and wait for what comes next (the schedule's page, or this
    page again at its next stage)."""
    button = driver.find_element(By.CSS_SELECTOR, f'#sched-confirm input[name="{stage}"]')
    button.click()
    wait_for(driver, lambda d: not d.find_elements(By.CSS_SELECTOR, f'input[name="{stage}"]'))


def message(driver: WebDriver) -> str:
    """The messages shown on the schedule's page after the action."""
    assert driver.current_url.endswith("/change/"), driver.page_source[:2000]
    found = driver.find_elements(By.CSS_SELECTOR, ".messagelist")
    return found[0].text if found else ""


def trail(schedule: Schedule) -> tuple[str, str, str]:
    """The last audit entry: (action, by, reason)."""
    last = ScheduleAuditEvent.objects.filter(schedule_id=schedule.pk).order_by("id").last()
    assert last is not None
    return (last.action, last.by, last.reason)


def test_pause(driver: WebDriver, base: str) -> None:
    schedule = daily(name="Nightly export")
    open_action(driver, base, schedule, "pause")
    fill(driver, "note", "waiting for the new bucket")
    press(driver)
    assert "1 schedule(s) paused" in message(driver)
    schedule.refresh_from_db()
    assert (schedule.status, schedule.pause_note) == (
        ScheduleStatus.PAUSED,
        "waiting for the new bucket",
    )
    assert trail(schedule) == ("paused", "ops", "waiting for the new bucket")


def test_resume(driver: WebDriver, base: str) -> None:
    schedule = daily(name="Nightly export")
    services.pause_schedule(schedule.pk, note="bucket migration")
    open_action(driver, base, schedule, "resume")
    page = driver.find_element(By.ID, "sched-confirm").text
    assert "bucket migration" in page and "Resuming creates 0 catch-up" in page, page
    fill(driver, "note", "bucket is back")
    press(driver)
    assert "1 schedule(s) resumed" in message(driver)
    schedule.refresh_from_db()
    assert schedule.status == ScheduleStatus.ACTIVE
    assert trail(schedule) == ("resumed", "ops", "bucket is back")


def test_run_now(driver: WebDriver, base: str) -> None:
    schedule = daily(name="Nightly export")
    open_action(driver, base, schedule, "run")
    fill(driver, "reason", "customer asked for a fresh export")
    press(driver)
    manual = Occurrence.objects.get(schedule=schedule, trigger=Trigger.MANUAL)
    assert f"Run requested: occurrence {manual.pk} is {manual.state}" in message(driver)
    assert manual.requested_by == "ops"
    assert trail(schedule) == ("run_now", "ops", "customer asked for a fresh export")


def test_backfill_plans_then_creates(driver: WebDriver, base: str) -> None:
    schedule = daily(name="Nightly export")
    first = datetime.now(RIGA).date() - timedelta(days=10)
    open_action(driver, base, schedule, "backfill")
    fill(driver, "start", f"{first:%Y-%m-%d}T00:00")
    fill(driver, "end", f"{first + timedelta(days=4):%Y-%m-%d}T23:00")
    fill(driver, "reason", "the export was broken that week")
    press(driver, "plan")
    plan = driver.find_element(By.ID, "sched-confirm").text
    assert "Slots in the range: 5; already have an occurrence: 0; new: 5." in plan, plan
    assert not Occurrence.objects.filter(schedule=schedule).exists()  # the plan writes nothing
    press(driver)
    assert "Backfill: 5 occurrence(s) created, 0 existed" in message(driver)
    made = Occurrence.objects.filter(schedule=schedule, trigger=Trigger.BACKFILL)
    local = [row.scheduled_for.astimezone(RIGA) for row in made]
    assert sorted((slot.date(), slot.hour) for slot in local) == [
        (first + timedelta(days=day), 9) for day in range(5)
    ]
    assert trail(schedule) == ("backfill", "ops", "the export was broken that week")


def test_cancel_offers_an_undo(driver: WebDriver, base: str) -> None:
    schedule = daily(name="Nightly export")
    open_action(driver, base, schedule, "cancel")
    fill(driver, "reason", "replaced by the new export")
    press(driver)
    assert "Nightly export cancelled. Undo" in message(driver)
    undo = driver.find_element(By.LINK_TEXT, "Undo").get_attribute("href")
    assert str(undo).endswith(f"/schedule/{schedule.pk}/restore/")
    schedule.refresh_from_db()
    assert schedule.status == ScheduleStatus.CANCELLED
    assert trail(schedule) == ("cancelled", "ops", "replaced by the new export")


def test_undo_cancel(driver: WebDriver, base: str) -> None:
    schedule = daily(name="Nightly export")
    services.cancel_schedule(schedule.pk, reason="by mistake")
    open_action(driver, base, schedule, "restore")
    fill(driver, "reason", "cancelled the wrong one")
    press(driver)
    assert "Nightly export restored (paused): resume it to run" in message(driver)
    schedule.refresh_from_db()
    assert schedule.status == ScheduleStatus.PAUSED
    assert trail(schedule) == ("restored", "ops", "cancelled the wrong one")


def test_approve(driver: WebDriver, base: str, settings: LazySettings) -> None:
    settings.SCHEDULER_APPROVAL_TASKS = ["demo.ping"]
    schedule = daily(name="payouts", kwargs={"n": 7})
    assert schedule.status == ScheduleStatus.AWAITING_APPROVAL
    open_action(driver, base, schedule, "approve")
    fill(driver, "reason", "reviewed with finance")
    press(driver)
    assert "1 schedule(s) approved" in message(driver)
    schedule.refresh_from_db()
    assert (schedule.status, schedule.approved_version) == (ScheduleStatus.ACTIVE, 1)
    assert trail(schedule) == ("approved", "ops", "reviewed with finance")
