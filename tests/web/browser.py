"""A real headless Chromium for the web tests (Debian's ``chromium`` + ``chromium-driver``
through Selenium; never a downloaded browser). Tests skip, with the reason, without them.

``ARENA_SCREENSHOTS=DIR`` makes :func:`screenshot` save PNGs there (``make screenshots``
writes the README's pictures this way); otherwise it does nothing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,1000",
)

T = TypeVar("T")


def find_browser() -> tuple[str, str] | str:
    """``(chromium, chromedriver)`` paths, or why the browser tests cannot run."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if chromium is None or driver is None:
        return (
            "needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)"
        )
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "needs the selenium package (pip install -e '.[dev]')"
    return chromium, driver


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium driven by Selenium, with a fresh profile; skips without one."""
    found = find_browser()
    if isinstance(found, str):
        pytest.skip(found)
    binary, driver_path = found
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="arena-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager must never download
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait_for(predicate: Callable[[], T], timeout: float, what: str, poll: float = 0.1) -> T:
    """Poll ``predicate`` until it returns something truthy; fail saying ``what``."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(poll)
    raise AssertionError(f"{what} (within {timeout:.0f} s; last: {last!r})")


def screenshot(driver: Any, name: str) -> None:
    folder = os.environ.get("ARENA_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(Path(folder) / f"{name}.png"))
