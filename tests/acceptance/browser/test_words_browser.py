"""The builder's "describe it in words" field in a real browser: Enter reads the text, the
builder's fields and the preview follow, the field empties, and the saved schedule holds the
structured rule."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver

from scheduler_app.models import Schedule
from tests.acceptance.browser.conftest import log_in, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def preview_text(driver: WebDriver) -> str:
    return str(driver.find_element(By.ID, "sched-live-preview").text)


def value(driver: WebDriver, name: str) -> str:
    return str(driver.find_element(By.NAME, name).get_attribute("value"))


def test_words_fill_the_builder_and_the_rule_is_saved(
    driver: WebDriver, live_server: object
) -> None:
    base = str(live_server)
    User.objects.create_superuser("ops", "ops@example.com", "pw")
    log_in(driver, base, "ops", "pw")
    driver.get(f"{base}/admin/scheduler_app/schedule/add/")
    driver.find_element(By.NAME, "name").send_keys("Riga standup")
    driver.find_element(By.NAME, "task").send_keys("demo.ping")
    words = driver.find_element(By.NAME, "words")
    words.send_keys("every mondy at 9:00", Keys.ENTER)
    wait_for(driver, lambda d: "'mondy'" in preview_text(d))
    assert value(driver, "repeat") != "weekly"  # nothing was filled from unreadable text
    words.clear()
    words.send_keys("every weekday at 9:30 in Europe/Riga", Keys.ENTER)
    wait_for(driver, lambda d: value(d, "repeat") == "weekly")
    wait_for(driver, lambda d: "Monday through Friday" in preview_text(d))
    assert (value(driver, "at_times"), value(driver, "timezone")) == ("09:30", "Europe/Riga")
    checked = [
        box.get_attribute("value")
        for box in driver.find_elements(By.CSS_SELECTOR, 'input[name="weekdays"]')
        if box.is_selected()
    ]
    assert checked == ["MO", "TU", "WE", "TH", "FR"]
    assert value(driver, "words") == ""
    # The builder writes the same days as a list: the same slots as the parsed MON-FRI.
    stored = "30 9 * * MON,TUE,WED,THU,FRI"
    wait_for(driver, lambda d: f"Stored rule: cron {stored}" in preview_text(d))
    driver.find_element(By.NAME, "_save").click()
    wait_for(driver, lambda d: d.current_url.endswith("/admin/scheduler_app/schedule/"))
    schedule = Schedule.objects.get(name="Riga standup")
    assert (schedule.kind, schedule.rule, schedule.timezone) == ("cron", stored, "Europe/Riga")
