"""The confirmation pages in a real headless browser: approving shows what is approved (version,
task, payload, next runs) and needs a reason; pausing asks why, and both land in the schedule's
audit trail. Screenshot: ``var/screenshots/12-approve-confirmation.png``."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import override_settings
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from scheduler_app import services
from scheduler_app.models import ScheduleAuditEvent, ScheduleStatus
from tests.acceptance.browser.conftest import Shoot, log_in, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@override_settings(SCHEDULER_APPROVAL_TASKS=["demo.ping"])
def test_approve_and_pause_go_through_their_confirmation_pages(
    driver: WebDriver, live_server: object, shoot: Shoot
) -> None:
    base = str(live_server)
    User.objects.create_superuser("lead", "lead@example.com", "pw")
    held = services.create_schedule(
        task="demo.ping", kind="cron", rule="0 8 * * MON-FRI", name="payouts", kwargs={"n": 7}
    )
    assert held.status == ScheduleStatus.AWAITING_APPROVAL
    log_in(driver, base, "lead", "pw")
    page = f"{base}/admin/scheduler_app/schedule/{held.pk}"
    driver.get(f"{page}/approve/")
    wait_for(driver, lambda d: d.find_elements(By.NAME, "reason"))
    text = driver.find_element(By.ID, "content").text
    for shown in ("version", "demo.ping", '"n": 7', "08:00"):
        assert shown in text, shown
    shoot("12-approve-confirmation")
    driver.find_element(By.NAME, "reason").send_keys("reviewed with finance")
    driver.find_element(By.CSS_SELECTOR, "#content form [type=submit]").click()
    wait_for(driver, lambda d: "/approve/" not in d.current_url)
    held.refresh_from_db()
    assert (held.status, held.approved_version) == (ScheduleStatus.ACTIVE, 1)

    driver.get(f"{page}/pause/")
    wait_for(driver, lambda d: d.find_elements(By.NAME, "note"))
    driver.find_element(By.NAME, "note").send_keys("bank holiday freeze")
    driver.find_element(By.CSS_SELECTOR, "#content form [type=submit]").click()
    wait_for(driver, lambda d: "/pause/" not in d.current_url)
    trail = list(
        ScheduleAuditEvent.objects.filter(schedule_id=held.pk)
        .order_by("id")
        .values_list("action", "reason")
    )
    assert trail[-2:] == [("approved", "reviewed with finance"), ("paused", "bank holiday freeze")]
