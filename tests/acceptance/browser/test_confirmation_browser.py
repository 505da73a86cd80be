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


def test_the_preview_starts_at_a_chosen_date_across_next_springs_change(
    driver: WebDriver, live_server: object
) -> None:
    base = str(live_server)
    User.objects.create_superuser("lead", "lead@example.com", "pw")
    weekly = services.create_schedule(
        task="demo.ping", kind="cron", rule="0 9 * * MON", timezone="Europe/Riga", name="weekly"
    )
    log_in(driver, base, "lead", "pw")
    driver.get(f"{base}/admin/scheduler_app/schedule/{weekly.pk}/change/")
    wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#sched-slots tbody tr"))
    driver.execute_script(
        "var f = document.getElementById('sched-preview-from');"
        "f.value = '2027-03-22T00:00'; f.dispatchEvent(new Event('change', {bubbles: true}));"
    )

    def first_two(d: WebDriver) -> list[str]:
        # Read in one script: the rows are replaced when the preview's answer arrives.
        return list(
            d.execute_script(
                "return Array.from(document.querySelectorAll('#sched-slots tbody tr'))"
                ".slice(0, 2).map(function (row) { return row.innerText; });"
            )
        )

    wait_for(driver, lambda d: any("2027-03-22" in text for text in first_two(d)))
    first, second = first_two(driver)
    assert "2027-03-22 09:00" in first and "EET" in first
    assert "2027-03-29 09:00" in second and "EEST" in second  # after the spring change
