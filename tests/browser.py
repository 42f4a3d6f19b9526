"""A real headless Chromium for tests: Selenium driving Debian's `chromium` + `chromium-driver`.

Generic on purpose (the serve tests and the class-report tests share it):

    from browser import browser, screenshot   # tests/ is on sys.path (rootdir conftest)

    with browser(width=1280, height=900) as b:   # skips, with the reason, when none can run
        b.get(url)
        b.wait_for(lambda d: d.find_element(By.ID, "x").is_displayed())
        b.screenshot(shots / "page.png")          # or screenshot(b, path)
        assert not b.console_errors()

Nothing is downloaded at test time: the browser and its driver are looked up
on the machine (`ATTN_PRACTICE_CHROMIUM` / `ATTN_PRACTICE_CHROMEDRIVER` override
the paths), and Selenium Manager is never asked to fetch one. `.ci/run` installs
both with apt-get when it can.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome",
            "/usr/bin/google-chrome-stable")
CHROMEDRIVER = ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver",
                "/usr/lib/chromium-browser/chromedriver")
DEFAULT_WAIT = 30.0  # generous: the machine is shared; waits end as soon as the condition holds


def _first(env: str, candidates: tuple[str, ...], name: str) -> str | None:
    chosen = os.environ.get(env)
    if chosen:
        return chosen if os.access(chosen, os.X_OK) else None
    for c in candidates:
        if os.access(c, os.X_OK):
            return c
    return shutil.which(name)


def find_browser() -> tuple[str, str] | str:
    """(chromium, chromedriver) paths, or the reason no browser test can run here."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    chromium = _first("ATTN_PRACTICE_CHROMIUM", CHROMIUM, "chromium")
    driver = _first("ATTN_PRACTICE_CHROMEDRIVER", CHROMEDRIVER, "chromedriver")
    if chromium is None:
        return "no Chromium found (apt-get install chromium, or set ATTN_PRACTICE_CHROMIUM)"
    if driver is None:
        return "no chromedriver found (apt-get install chromium-driver, or set ATTN_PRACTICE_CHROMEDRIVER)"
    return chromium, driver


class Browser:
    """A Selenium driver with the few helpers tests need; `.driver` for everything else."""

    def __init__(self, driver: Any):
        self.driver = driver

    def __getattr__(self, name: str) -> Any:
        return getattr(self.driver, name)

    def get(self, url: str) -> None:
        self.driver.get(url)

    def wait_for(self, condition: Callable[[Any], Any], timeout: float = DEFAULT_WAIT,
                 message: str = "") -> Any:
        """Wait until `condition(driver)` is truthy; returns its value.

        An element the page redrew meanwhile (a live grid) is asked again, not a failure.
        """
        from selenium.common.exceptions import (
            NoSuchElementException,
            StaleElementReferenceException,
        )
        from selenium.webdriver.support.ui import WebDriverWait

        return WebDriverWait(self.driver, timeout, poll_frequency=0.1, ignored_exceptions=(
            NoSuchElementException, StaleElementReferenceException)).until(condition, message)

    def console_errors(self) -> list[str]:
        """Severe messages from the page's console (JavaScript errors, failed loads) since the last call."""
        try:
            entries = self.driver.get_log("browser")
        except Exception:  # noqa: BLE001 - a driver without logs has nothing to report
            return []
        return [e.get("message", "") for e in entries if e.get("level") == "SEVERE"]

    def set_size(self, width: int, height: int) -> None:
        self.driver.set_window_size(width, height)

    def screenshot(self, path: str | os.PathLike[str], *, full_page: bool = True) -> Path:
        """`screenshot(self, path)`: the page as a PNG."""
        return screenshot(self, path, full_page=full_page)


def screenshot(b: Browser | Any, path: str | os.PathLike[str], *, full_page: bool = True) -> Path:
    """Save a PNG of the page (the whole page height when `full_page`); returns the path."""
    driver = getattr(b, "driver", b)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if full_page:
        size = driver.get_window_size()
        height = driver.execute_script(
            "return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)")
        driver.set_window_size(size["width"], min(max(int(height) + 100, size["height"]), 6000))
        try:
            driver.save_screenshot(str(path))
        finally:
            driver.set_window_size(size["width"], size["height"])
    else:
        driver.save_screenshot(str(path))
    return path


@contextlib.contextmanager
def browser(width: int = 1280, height: int = 900) -> Iterator[Browser]:
    """A fresh headless Chromium (own profile, no network beyond what the page asks for)."""
    found = find_browser()
    if isinstance(found, str):
        pytest.skip(f"no browser test possible: {found}")
    chromium, driver_path = found
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="attnp-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--disable-background-networking", "--disable-sync", "--lang=en-US",
                f"--window-size={width},{height}", f"--user-data-dir={profile}"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=opts)
    except Exception as exc:  # noqa: BLE001 - a browser that cannot start is a skip, with the reason
        shutil.rmtree(profile, ignore_errors=True)
        pytest.skip(f"no browser test possible: Chromium would not start ({type(exc).__name__}: "
                    f"{str(exc).splitlines()[0] if str(exc) else ''})")
    try:
        driver.set_window_size(width, height)
        yield Browser(driver)
    finally:
        try:
            driver.quit()
        finally:
            shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def chromium() -> Iterator[Browser]:
    """The `browser()` context manager as a fixture."""
    with browser() as b:
        yield b


__all__ = ["Browser", "browser", "chromium", "find_browser", "screenshot"]
