"""A headless Chromium driven by Selenium against pytest-django's live server.

Debian's ``chromium`` and ``chromium-driver`` are installed by the session fixture when
``chromedriver`` is missing (``apt-get``; no browser is downloaded from anywhere else).
Screenshots go to ``var/screenshots/`` (git-ignored).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import LazySettings, settings
from django.contrib.auth.models import User
from django.core.servers.basehttp import ThreadedWSGIServer
from django.test import Client
from django.test.testcases import LiveServerThread
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from tests.conftest import IN_CI

SCREENSHOTS = Path(__file__).resolve().parents[3] / "var" / "screenshots"
PACKAGES = ("chromium", "chromium-driver")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "browser: drives a headless Chromium (Selenium)")
    if _shares_the_connection():
        # The test database is SQLite in memory: every thread of the live server uses the
        # test's one connection. Two requests at once (the page's preview fetch while the
        # form is saved) would run inside each other's transaction, and a failed statement
        # in one silently rolls back the other (its save redirects as if it had worked).
        # The same holds for the test itself reading the database while a page's script
        # still calls the server. So the connection is taken in turns (``TURN``): by one
        # request at a time, and by the test except while it waits on the browser.
        LiveServerThread.server_class = OneRequestAtATime  # type: ignore[attr-defined]


def _shares_the_connection() -> bool:
    return bool(settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"))


TURN = threading.RLock()
"""Whose turn it is to use the in-memory SQLite connection the live server shares with the
test: a request's, or the test's. The test holds it but while a WebDriver command runs."""


class OneRequestAtATime(ThreadedWSGIServer):
    """The live server, its requests' database work in turns (connections are still served by
    threads: a browser's idle keep-alive connection blocks nobody)."""

    def set_app(self, application: Any) -> None:
        def in_turn(environ: Any, start_response: Any) -> Any:
            with TURN:
                return application(environ, start_response)

        super().set_app(in_turn)


class _TurnTaking:
    """Wraps ``WebDriver.execute`` (every command, a page's element's too): the test gives the
    connection up while the browser works and takes it back after, waiting for the request
    being answered. A page's later fetch waits for the test's next command, so the test never
    reads the database while a request writes it, and never inside a request's transaction."""

    def __init__(self, execute: Callable[..., Any], turn: Any = TURN) -> None:
        self.execute = execute
        self.turn = turn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.turn.release()
        try:
            return self.execute(*args, **kwargs)
        finally:
            self.turn.acquire()


def _install_chromium() -> str | None:
    """The chromedriver path, installing Debian's packages first when it is missing."""
    found = shutil.which("chromedriver")
    if found:
        return found
    if shutil.which("apt-get") is None:
        return None
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    command = ["apt-get", "install", "-y", "--no-install-recommends", *PACKAGES]
    if os.geteuid() != 0:
        if shutil.which("sudo") is None:
            return None
        command = ["sudo", "-n", *command]
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if result.returncode != 0:  # the package lists may be stale: refresh them once
        subprocess.run([*command[:-4], "update"], capture_output=True, env=env, check=False)
        subprocess.run(command, capture_output=True, env=env, check=False)
    return shutil.which("chromedriver")


@pytest.fixture(scope="session")
def chromedriver_path() -> str:
    path = _install_chromium()
    if path is None:
        message = "chromedriver is missing and apt-get could not install chromium-driver"
        if IN_CI:
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def driver(chromedriver_path: str, live_server: object) -> Iterator[WebDriver]:
    """One browser for the session. It depends on ``live_server`` so that it quits first: its
    kept-alive connections then end while the server may still use the shared in-memory
    SQLite connection, and the request threads are waited for before the server stops."""
    options = webdriver.ChromeOptions()
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1920,1080",
        "--lang=en-US",
    ):
        options.add_argument(argument)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium:
        options.binary_location = chromium
    browser = webdriver.Chrome(service=Service(executable_path=chromedriver_path), options=options)
    browser.set_page_load_timeout(30)
    if not _shares_the_connection():
        yield browser
        browser.quit()
        _wait_for_request_threads()
        return
    TURN.acquire()
    browser.execute = _TurnTaking(browser.execute)  # type: ignore[method-assign]
    try:
        yield browser
        browser.quit()
    finally:
        TURN.release()
    _wait_for_request_threads()


def _wait_for_request_threads(timeout: float = 10.0) -> None:
    """The live server's request threads are daemons nobody joins: join them here."""
    for thread in threading.enumerate():
        if "process_request_thread" in thread.name:
            thread.join(timeout)


@pytest.fixture(autouse=True)
def demo_tasks_allowed(settings: LazySettings) -> None:
    settings.SCHEDULER_ALLOWED_TASKS = ("demo.*",)


@pytest.fixture(autouse=True)
def blank_page_after(driver: WebDriver) -> Iterator[None]:
    """Leave no page behind whose script could call the live server during a later test
    (its request thread would share the in-memory SQLite connection with that test)."""
    yield
    driver.get("about:blank")


Shoot = Callable[..., Path]


@pytest.fixture
def shoot(driver: WebDriver) -> Shoot:
    """``shoot(name)``: the whole page; ``shoot(name, at=css)``: the window from that element."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def save(name: str, at: str | None = None) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        if at is not None:
            element = driver.find_element(By.CSS_SELECTOR, at)
            driver.execute_script("arguments[0].scrollIntoView(true);", element)
            driver.save_screenshot(str(path))
            return path
        height = driver.execute_script("return document.body.scrollHeight")
        driver.set_window_size(1920, min(max(int(height), 1080), 2400))
        driver.execute_script("window.scrollTo(0, 0);")
        driver.save_screenshot(str(path))
        driver.set_window_size(1920, 1080)
        return path

    return save


def wait_for(
    driver: WebDriver, predicate: Callable[[WebDriver], object], timeout: float = 10
) -> None:
    # Polled often: a page's fetch is answered only while a command runs (see ``TURN``).
    WebDriverWait(driver, timeout, poll_frequency=0.05).until(predicate)


def log_in(driver: WebDriver, base: str, username: str, password: str) -> None:
    driver.delete_all_cookies()
    driver.get(f"{base}/admin/login/")
    driver.find_element(By.NAME, "username").send_keys(username)
    driver.find_element(By.NAME, "password").send_keys(password)
    driver.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
    wait_for(driver, lambda d: "/admin/login/" not in d.current_url)


@pytest.fixture
def base(driver: WebDriver, live_server: object) -> str:
    """The live server's address, a superuser logged in. The session is made as the login
    form makes it (``Client.force_login``): the form itself is tested elsewhere, and hashing a
    password twice per test would cost seconds on a busy machine."""
    url = str(live_server)
    client = Client()
    client.force_login(User.objects.create_superuser("ops", "ops@example.com", None))
    driver.delete_all_cookies()
    driver.get(f"{url}/admin/login/")  # a cookie is set for the page's site
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    driver.add_cookie({"name": settings.SESSION_COOKIE_NAME, "value": cookie, "path": "/"})
    return url
