"""Every kind of schedule edited and saved from its admin change page in a real browser.

The form is the one the page renders (its hidden ``expected_version`` included, which for
weeks was never rendered so that no Save worked): each test opens the page of a schedule made
through the services, changes what a person would change, presses Save and checks the row
(the new value, ``version`` + 1, the rest as it was). A save racing a change made meanwhile
shows the conflict and overwrites nothing. Defects found are ``xfail(strict=True)`` tests
that say what is wrong: a rule changed with the builder is not saved, and RFC 5545 lines come
back from the page with CRLF line breaks (a new rule on every save).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select

from scheduler_app import services
from scheduler_app.models import Schedule, ScheduleAuditEvent
from tests.acceptance.browser.conftest import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SAVED = "was changed successfully"
STALE = "Someone changed this schedule while you were editing it"
CONTENT_LINES = (
    "DTSTART;TZID=Europe/Riga:20260105T090000\n"
    "RRULE:FREQ=WEEKLY;BYDAY=MO,WE,FR\n"
    "EXDATE;TZID=Europe/Riga:20260107T090000\n"
    "RDATE;TZID=Europe/Riga:20260110T120000"
)
NEW_EXDATE = "EXDATE;TZID=Europe/Riga:20270104T090000"
OFF_THE_HOUR = datetime(2026, 1, 1, 0, 17, tzinfo=UTC)


# -- the browser, logged in ------------------------------------------------------------------


@pytest.fixture(scope="session")
def driver(django_db_setup: None, driver: WebDriver) -> WebDriver:
    """The browser, made after the test database: the database is then dropped after the
    browser and the live server are gone. Made first (the folder's ``driver`` alone, run on
    PostgreSQL), the live server's request threads still hold connections when the database
    is dropped: "database ... is being accessed by other users"."""
    return driver


# -- what a person does on the page ----------------------------------------------------------


def type_into(driver: WebDriver, name: str, text: str) -> None:
    element = driver.find_element(By.NAME, name)
    element.clear()
    element.send_keys(text)


def choose(driver: WebDriver, name: str, value: str) -> None:
    Select(driver.find_element(By.NAME, name)).select_by_value(value)


def value_of(driver: WebDriver, name: str) -> str:
    return str(driver.find_element(By.NAME, name).get_attribute("value"))


def preview_state(driver: WebDriver) -> str | None:
    return driver.find_element(By.ID, "sched-live-preview").get_attribute("data-state")


def open_change_page(driver: WebDriver, base: str, schedule: Schedule) -> None:
    """The change page, its first preview answered (no request of it is left in flight)."""
    driver.get(f"{base}/admin/scheduler_app/schedule/{schedule.pk}/change/")
    wait_for(driver, lambda d: preview_state(d) in ("ok", "error"))


def press_save(driver: WebDriver) -> None:
    """Save, then wait for the list (saved) or the form again (refused, with its errors)."""
    driver.find_element(By.NAME, "_save").click()
    wait_for(
        driver,
        lambda d: (
            d.current_url.endswith("/admin/scheduler_app/schedule/")
            or d.find_elements(By.CSS_SELECTOR, ".errornote, .messagelist .error")
        ),
        timeout=30,
    )


def shown(driver: WebDriver) -> str:
    """The messages and form errors on the page (what a person reads after Save)."""
    found = driver.find_elements(By.CSS_SELECTOR, ".messagelist, .errornote, form .errorlist")
    return " | ".join(element.text for element in found if element.text)


def stored(schedule: Schedule, names: Any) -> dict[str, Any]:
    """The row's values; a rule's lines as lines (a browser posts a textarea's line breaks as
    CRLF, the HTML standard; RFC 5545 allows either)."""
    values = {name: getattr(schedule, name) for name in names}
    if "rule" in values:
        values["rule"] = "\n".join(values["rule"].splitlines())
    return values


def assert_saved(driver: WebDriver) -> None:
    assert driver.current_url.endswith("/admin/scheduler_app/schedule/"), shown(driver)
    assert SAVED in driver.find_element(By.CSS_SELECTOR, ".messagelist").text, shown(driver)
    assert STALE not in driver.page_source


# -- one edit per kind -----------------------------------------------------------------------


def move_to_riga_and_fire_once(driver: WebDriver) -> None:
    type_into(driver, "timezone", "Europe/Riga")
    choose(driver, "misfire_policy", "fire_once")


def skip_the_first_monday_of_2027(driver: WebDriver) -> None:
    assert value_of(driver, "repeat") == "advanced"  # the lines are shown as they are
    type_into(driver, "rule", f"{CONTENT_LINES}\n{NEW_EXDATE}")


def keep_one_waiting(driver: WebDriver) -> None:
    assert (value_of(driver, "repeat"), value_of(driver, "every")) == ("minutes", "90")
    choose(driver, "overlap_policy", "buffer_one")


def a_day_later(driver: WebDriver) -> None:
    assert value_of(driver, "repeat") == "advanced"
    type_into(driver, "rule", "2031-06-02T10:00:00+00:00")


def another_city(driver: WebDriver) -> None:
    assert value_of(driver, "rule") == "sunrise 56.9496 24.1052"
    type_into(driver, "kwargs", '{"city": "Tallinn"}')


def at_half_past_ten_in_words(driver: WebDriver) -> None:
    driver.find_element(By.NAME, "words").send_keys("every weekday at 10:30", Keys.ENTER)
    # The page reads the words, fills the builder and empties the field: the rule is saved.
    wait_for(driver, lambda d: value_of(d, "at_times") == "10:30" and value_of(d, "words") == "")


@dataclass(frozen=True, kw_only=True)
class Edit:
    """A schedule made through the services, a person's change, and the row it must leave."""

    made: dict[str, Any]
    change: Callable[[WebDriver], None]
    expected: dict[str, Any]
    kept: tuple[str, ...] = ("kind", "anchor")


EDITS = {
    "cron": Edit(
        made={"kind": "cron", "rule": "30 2 * * *"},
        change=move_to_riga_and_fire_once,
        expected={"timezone": "Europe/Riga", "misfire_policy": "fire_once", "rule": "30 2 * * *"},
    ),
    "rfc5545-lines": Edit(
        made={"kind": "rrule", "rule": CONTENT_LINES, "timezone": "Europe/Riga"},
        change=skip_the_first_monday_of_2027,
        expected={"rule": f"{CONTENT_LINES}\n{NEW_EXDATE}", "timezone": "Europe/Riga"},
    ),
    "interval": Edit(
        made={"kind": "interval", "rule": "90m", "interval_mode": "fixed_rate"},
        change=keep_one_waiting,
        expected={"overlap_policy": "buffer_one", "rule": "5400", "interval_mode": "fixed_rate"},
    ),
    "once": Edit(
        made={"kind": "once", "rule": "2031-06-01T10:00:00+00:00"},
        change=a_day_later,
        expected={"rule": "2031-06-02T10:00:00+00:00"},
    ),
    "solar": Edit(
        made={
            "kind": "solar",
            "rule": "sunrise 56.9496 24.1052",
            "timezone": "Europe/Riga",
            "kwargs": {"city": "Riga"},
        },
        change=another_city,
        expected={"kwargs": {"city": "Tallinn"}, "rule": "sunrise 56.9496 24.1052"},
    ),
    "words": Edit(
        made={"text": "every weekday at 9:00 in Europe/Riga"},
        change=at_half_past_ten_in_words,
        expected={"rule": "30 10 * * MON,TUE,WED,THU,FRI", "timezone": "Europe/Riga"},
    ),
}


def edit_and_save(driver: WebDriver, base: str, edit: Edit) -> None:
    """Open the page of a schedule made as ``edit`` says, change it, Save, check the row."""
    schedule = services.create_schedule(task="demo.ping", **edit.made)
    before = Schedule.objects.get(pk=schedule.pk)
    assert stored(before, edit.expected) != edit.expected
    open_change_page(driver, base, schedule)
    rendered = driver.find_element(By.CSS_SELECTOR, "#schedule_form [name=expected_version]")
    assert rendered.get_attribute("value") == str(before.version)  # so the Save posts it
    edit.change(driver)
    press_save(driver)
    assert_saved(driver)
    after = Schedule.objects.get(pk=schedule.pk)
    assert after.version == before.version + 1
    assert stored(after, edit.expected) == edit.expected
    assert stored(after, edit.kept) == stored(before, edit.kept)


@pytest.mark.parametrize("kind", list(EDITS))
def test_a_schedule_of_every_kind_is_edited_and_saved(
    driver: WebDriver, base: str, kind: str
) -> None:
    edit_and_save(driver, base, EDITS[kind])


def test_an_hourly_interval_stays_an_interval_when_only_its_kwargs_change(
    driver: WebDriver, base: str
) -> None:
    """The page shows 3600 s as the builder's "Every 1 hours", which the builder writes as
    cron "0 * * * *": saving it must not turn the interval (at :17) into that cron (at :00).
    The builder writes the rule only when a person changed one of its inputs."""
    schedule = services.create_schedule(
        task="demo.ping", kind="interval", rule="1h", anchor=OFF_THE_HOUR, kwargs={"n": 1}
    )
    open_change_page(driver, base, schedule)
    type_into(driver, "kwargs", '{"n": 2}')
    press_save(driver)
    assert_saved(driver)
    after = Schedule.objects.get(pk=schedule.pk)
    assert (after.kwargs, after.version) == ({"n": 2}, 2)
    assert (after.kind, after.rule, after.anchor) == ("interval", "3600", OFF_THE_HOUR)


def test_an_edit_of_the_kwargs_leaves_the_rfc5545_lines_as_they_were(
    driver: WebDriver, base: str
) -> None:
    schedule = services.create_schedule(
        task="demo.ping", kind="rrule", rule=CONTENT_LINES, timezone="Europe/Riga"
    )
    open_change_page(driver, base, schedule)
    type_into(driver, "kwargs", '{"n": 2}')
    press_save(driver)
    assert_saved(driver)
    after = Schedule.objects.get(pk=schedule.pk)
    assert (after.kwargs, after.version) == ({"n": 2}, 2)
    edited = ScheduleAuditEvent.objects.get(schedule_id=schedule.pk, action="edited")
    assert (edited.details["fields"], after.rule) == (["kwargs"], CONTENT_LINES)


def test_a_save_after_a_change_made_meanwhile_shows_the_conflict_and_overwrites_nothing(
    driver: WebDriver, base: str
) -> None:
    schedule = services.create_schedule(
        task="demo.ping", kind="cron", rule="0 6 * * *", name="report", kwargs={"n": 1}
    )
    policy = schedule.misfire_policy
    open_change_page(driver, base, schedule)
    services.update_schedule(schedule.pk, expected_version=1, kwargs={"n": 7})  # an API call
    type_into(driver, "kwargs", '{"n": 2}')
    choose(driver, "misfire_policy", "fire_once" if policy != "fire_once" else "skip")
    press_save(driver)
    assert STALE in driver.find_element(By.CSS_SELECTOR, "form .errorlist").text, shown(driver)
    assert "/change/" in driver.current_url
    after = Schedule.objects.get(pk=schedule.pk)
    assert (after.version, after.kwargs, after.misfire_policy) == (2, {"n": 7}, policy)


# -- the rule changed with the builder -------------------------------------------------------


def every_45_minutes(driver: WebDriver) -> None:
    type_into(driver, "every", "45")


def at_a_quarter_to_four(driver: WebDriver) -> None:
    type_into(driver, "at_times", "03:45")


def a_week_later(driver: WebDriver) -> None:
    driver.execute_script(
        "var at = document.querySelector('[name=once_at]'); at.value = '2031-06-08T10:00';"
        "at.dispatchEvent(new Event('change', {bubbles: true}));"
    )


BUILT = {
    "interval": Edit(
        made={"kind": "interval", "rule": "90m"},
        change=every_45_minutes,
        expected={"rule": "2700"},
    ),
    "daily": Edit(
        made={"kind": "cron", "rule": "30 2 * * *"},
        change=at_a_quarter_to_four,
        expected={"rule": "45 3 * * *"},
    ),
    "once": Edit(
        made={"kind": "once", "rule": "2031-06-01T10:00:00", "timezone": "Europe/Riga"},
        change=a_week_later,
        expected={"rule": "2031-06-08T10:00:00"},
    ),
}


@pytest.mark.parametrize("case", list(BUILT))
def test_a_rule_changed_with_the_builder_is_saved(driver: WebDriver, base: str, case: str) -> None:
    edit_and_save(driver, base, BUILT[case])
