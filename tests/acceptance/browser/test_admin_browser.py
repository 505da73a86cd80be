"""The operator's admin in a real headless browser: build, preview, save, act, watch.

Part of the SQLite pass (``pytest -m "not postgres"``); about a minute in all.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select

from scheduler_app import services
from scheduler_app.definition.schedule import idempotency_key, occurrence_id, version_id
from scheduler_app.models import (
    BeatHeartbeat,
    Occurrence,
    OccurrenceState,
    Schedule,
    ScheduleStatus,
    Trigger,
)
from tests.acceptance.browser.conftest import Shoot, log_in, wait_for
from tests.integration.admin.support import staff

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
DST_NOTE = "03:30 does not exist (DST gap): moved to 04:00, when the clock jumps"


def preview_text(driver: WebDriver) -> str:
    return str(driver.find_element(By.ID, "sched-live-preview").text)


def set_value(driver: WebDriver, name: str, value: str) -> None:
    """Type into a field the way a user would (date inputs get their value by script)."""
    element = driver.find_element(By.NAME, name)
    if element.get_attribute("type") in ("datetime-local", "date"):
        driver.execute_script(
            "arguments[0].value = arguments[1];"
            "arguments[0].dispatchEvent(new Event('change', {bubbles: true}));",
            element,
            value,
        )
        return
    element.clear()
    element.send_keys(value)


def click_action(driver: WebDriver, name: str) -> None:
    driver.find_element(By.CSS_SELECTOR, f'a.sched-action[data-action="{name}"]').click()
    wait_for(driver, lambda d: d.find_elements(By.ID, "sched-confirm"))


def confirm(driver: WebDriver, stage: str = "confirm") -> None:
    driver.find_element(By.CSS_SELECTOR, f'#sched-confirm input[name="{stage}"]').click()


def build_weekly_schedule(driver: WebDriver, base: str, shoot: Shoot) -> None:
    driver.get(f"{base}/admin/scheduler_app/schedule/add/")
    set_value(driver, "name", "Sunday night export")
    set_value(driver, "task", "demo.ping")
    wait_for(driver, lambda d: "Slots" in preview_text(d) or "UTC" in preview_text(d))
    before = preview_text(driver)
    Select(driver.find_element(By.NAME, "repeat")).select_by_value("weekly")
    assert driver.find_element(By.CSS_SELECTOR, ".field-weekdays").is_displayed()
    assert not driver.find_element(By.CSS_SELECTOR, ".field-rule").is_displayed()
    driver.find_element(By.CSS_SELECTOR, 'input[name="weekdays"][value="SU"]').click()
    set_value(driver, "at_times", "03:30")
    set_value(driver, "timezone", "Europe/Riga")
    driver.find_element(By.XPATH, "//summary[.//h2[text()='Advanced']]").click()
    set_value(driver, "starts_at_0", "2030-03-25")
    set_value(driver, "starts_at_1", "00:00:00")
    driver.find_element(By.NAME, "name").click()  # leave the field: a change event
    wait_for(driver, lambda d: DST_NOTE in preview_text(d))
    after = preview_text(driver)
    assert after != before
    assert "At 03:30, on Sunday, Europe/Riga" in after
    assert "Stored rule: cron 30 3 * * SUN" in after
    when = driver.find_element(By.NAME, "repeat").find_element(By.XPATH, "ancestor::fieldset")
    driver.execute_script("arguments[0].id = 'sched-when';", when)
    shoot("01-builder-with-live-preview", at="#sched-when")
    set_value(driver, "starts_at_0", "")  # saved without the bound: past slots to backfill
    set_value(driver, "starts_at_1", "")
    driver.find_element(By.NAME, "_save").click()
    # Saving plans the schedule's slots: slower than a page load when the machine is busy.
    wait_for(driver, lambda d: d.current_url.endswith("/admin/scheduler_app/schedule/"), timeout=30)
    shoot("02-schedule-list")


def seed_last_day(schedule: Schedule) -> None:
    """A day of history for the monitoring page: a run every 15 minutes, a few failures and
    skips, lateness of a few seconds."""
    now = timezone.now().replace(second=0, microsecond=0)
    rows = []
    for index in range(1, 96):
        slot = now - timedelta(minutes=15 * index)
        state = "failed" if index % 17 == 0 else "skipped" if index % 11 == 0 else "succeeded"
        key = idempotency_key(schedule.pk, slot)
        rows.append(
            Occurrence(
                id=occurrence_id(key),
                schedule=schedule,
                schedule_version_id=version_id(schedule.pk, schedule.version),
                trigger=Trigger.SCHEDULED,
                scheduled_for=slot,
                window_start=slot - timedelta(minutes=15),
                window_end=slot,
                timezone=schedule.timezone,
                idempotency_key=key,
                task=schedule.task,
                not_before=slot,
                state=state,
                reason="overlap" if state == "skipped" else "",
                created_at=slot,
                dispatched_at=slot + timedelta(milliseconds=300 + 40 * (index % 9)),
                started_at=slot + timedelta(seconds=1 + index % 5),
                finished_at=slot + timedelta(seconds=9),
            )
        )
    Occurrence.objects.bulk_create(rows, ignore_conflicts=True)


def test_an_operator_builds_acts_and_watches(
    driver: WebDriver, live_server: object, shoot: Shoot
) -> None:
    base = str(live_server)
    User.objects.create_superuser("ops", "ops@example.com", "pw")
    services.create_schedule(
        task="demo.ping", kind="cron", rule="*/15 * * * *", name="quarter-hourly sync"
    )
    log_in(driver, base, "ops", "pw")

    build_weekly_schedule(driver, base, shoot)
    schedule = Schedule.objects.get(name="Sunday night export")
    assert (schedule.kind, schedule.rule, schedule.timezone) == (
        "cron",
        "30 3 * * SUN",
        "Europe/Riga",
    )

    change = f"{base}/admin/scheduler_app/schedule/{schedule.pk}/change/"
    driver.get(change)
    assert driver.find_element(By.NAME, "repeat").get_attribute("value") == "weekly"
    click_action(driver, "pause")
    set_value(driver, "note", "waiting for the new bucket")
    shoot("03-pause-confirmation")
    confirm(driver)
    wait_for(driver, lambda d: "paused" in d.find_element(By.CSS_SELECTOR, ".messagelist").text)
    schedule.refresh_from_db()
    assert (schedule.status, schedule.pause_note) == (
        ScheduleStatus.PAUSED,
        "waiting for the new bucket",
    )

    click_action(driver, "resume")
    assert "Resuming creates 0 catch-up occurrence(s)" in driver.page_source
    shoot("04-resume-confirmation")
    confirm(driver)
    wait_for(driver, lambda d: "resumed" in d.find_element(By.CSS_SELECTOR, ".messagelist").text)

    click_action(driver, "run")
    set_value(driver, "reason", "customer asked for a fresh export")
    confirm(driver)
    wait_for(
        driver, lambda d: "Run requested" in d.find_element(By.CSS_SELECTOR, ".messagelist").text
    )
    manual = Occurrence.objects.get(schedule=schedule, trigger=Trigger.MANUAL)
    assert manual.requested_by == "ops"

    click_action(driver, "backfill")
    set_value(driver, "start", "2026-01-01T00:00")
    set_value(driver, "end", "2026-01-31T23:00")
    confirm(driver, "plan")
    wait_for(
        driver, lambda d: "Slots in the range" in d.page_source or "errornote" in d.page_source
    )
    shoot("05-backfill-plan")
    assert "Slots in the range: 4;" in driver.page_source, driver.find_element(
        By.ID, "sched-confirm"
    ).text
    shoot("05-backfill-plan")
    confirm(driver)
    wait_for(driver, lambda d: "Backfill: 4 occurrence(s) created" in d.page_source)
    assert Occurrence.objects.filter(schedule=schedule, trigger=Trigger.BACKFILL).count() == 4

    failed = Occurrence.objects.filter(trigger=Trigger.BACKFILL).order_by("scheduled_for").first()
    assert failed is not None
    Occurrence.objects.filter(pk=failed.pk).update(
        state=OccurrenceState.FAILED, reason="error", last_error="ConnectionError"
    )
    driver.get(f"{base}/admin/scheduler_app/occurrence/?q=Sunday")
    shoot("06-occurrence-list")
    driver.find_element(
        By.CSS_SELECTOR, f'input[name="_selected_action"][value="{failed.pk}"]'
    ).click()
    Select(driver.find_element(By.NAME, "action")).select_by_value("replay")
    driver.find_element(By.CSS_SELECTOR, 'button[name="index"]').click()
    wait_for(driver, lambda d: d.find_elements(By.ID, "sched-confirm"))
    set_value(driver, "note", "bucket is back")
    confirm(driver)
    wait_for(driver, lambda d: "1 occurrence(s) replayed" in d.page_source)
    driver.get(f"{base}/admin/scheduler_app/occurrence/{failed.pk}/change/")
    assert "bucket is back" in driver.page_source
    assert "replay requested by ops" in driver.find_element(By.ID, "attempt_history-group").text
    shoot("07-occurrence-with-attempts")

    seed_last_day(Schedule.objects.get(name="quarter-hourly sync"))
    started = timezone.now() - timedelta(hours=5)
    BeatHeartbeat.objects.create(
        host="beat-1", pid=4242, version="1.0", started_at=started, last_tick_at=timezone.now()
    )
    driver.get(f"{base}/admin/scheduler_app/schedule/monitoring/")
    assert driver.find_element(By.CSS_SELECTOR, "svg.sched-timeline")
    assert "1 beat(s) alive" in driver.find_element(By.ID, "sched-beat-card").text
    assert "beat-1" in driver.find_element(By.ID, "sched-beats").text
    assert "Sunday night export" in driver.page_source
    shoot("08-monitoring")

    driver.get(change)
    history = driver.find_element(By.XPATH, "//h2[text()='History']/ancestor::fieldset")
    assert "backfill" in history.text and "first version" in history.text
    driver.execute_script("arguments[0].id = 'sched-history';", history)
    shoot("09-schedule-history", at="#sched-history")
    wait_for(
        driver,
        lambda d: d.find_element(By.ID, "sched-live-preview").get_attribute("data-state") == "ok",
    )


def test_a_staff_user_of_another_tenant_cannot_see_or_open_it(
    driver: WebDriver, live_server: object
) -> None:
    base = str(live_server)
    theirs = services.create_schedule(
        task="demo.ping", kind="cron", rule="0 8 * * *", tenant="globex", name="globex payroll"
    )
    services.create_schedule(
        task="demo.ping", kind="cron", rule="0 9 * * *", tenant="acme", name="acme invoices"
    )
    staff("acme_ops", "view_schedule", "change_schedule", "pause_schedule", tenants=("acme",))
    User.objects.filter(username="acme_ops").update()
    log_in(driver, base, "acme_ops", "pw")
    driver.get(f"{base}/admin/scheduler_app/schedule/")
    assert "acme invoices" in driver.page_source
    assert "globex payroll" not in driver.page_source
    for path in ("change", "pause"):
        driver.get(f"{base}/admin/scheduler_app/schedule/{theirs.pk}/{path}/")
        assert "Not Found" in driver.page_source, path
