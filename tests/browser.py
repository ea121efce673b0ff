"""Headless Chromium (Debian's ``chromium`` and ``chromium-driver`` packages) driven by Selenium,
with the network off: every host name resolves nowhere and every request would go through a proxy
that does not exist, and the browser's own network emulation is offline. Its console and network
events are logged, for a test to read (:func:`console_errors`, :func:`requests`).

``python tests/browser.py PAGE.html SHOT.png [WIDTH [HEIGHT]]`` writes a screenshot of the page (the
whole page without HEIGHT): docs/_static/report.png is
``python tests/browser.py example_project/demo-ledger-report.html docs/_static/report.png 1100 1500``
after ``make demo``.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

__all__ = ["chromium", "console_errors", "open_offline", "requests", "screenshot"]

#: Where Debian installs them.
CHROMIUM = ("chromium", "chromium-browser", "google-chrome")
CHROMEDRIVER = ("chromedriver",)


def _which(names: tuple[str, ...]) -> str | None:
    return next((path for name in names if (path := shutil.which(name))), None)


def chromium() -> tuple[str, str] | None:
    """The paths of chromium and chromedriver, or None when either is missing."""
    browser, driver = _which(CHROMIUM), _which(CHROMEDRIVER)
    return None if browser is None or driver is None else (browser, driver)


def open_offline(width: int = 1200, height: int = 900) -> Any:
    """A headless Chromium (a Selenium WebDriver) that cannot reach any network."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    found = chromium()
    assert found is not None, "chromium or chromedriver is not installed"
    browser, driver = found
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     f"--window-size={width},{height}", "--host-resolver-rules=MAP * ~NOTFOUND",
                     "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
                     "--disable-background-networking", "--disable-component-update", "--no-first-run",
                     "--disable-sync", "--disable-default-apps"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    session = webdriver.Chrome(options=options, service=Service(executable_path=driver))
    session.set_network_conditions(offline=True, latency=0, download_throughput=0, upload_throughput=0)
    session.execute_cdp_cmd("Network.enable", {})
    return session


def console_errors(session: Any) -> list[dict[str, Any]]:
    """The console's entries of level SEVERE (errors, a Content-Security-Policy refusal among them)."""
    return [entry for entry in session.get_log("browser") if entry.get("level") == "SEVERE"]


def requests(session: Any) -> list[str]:
    """The URL of every request the page made (DevTools' ``Network.requestWillBeSent``)."""
    found = []
    for entry in session.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            found.append(message["params"]["request"]["url"])
    return found


def screenshot(page: Path, shot: Path, width: int = 1200, height: int | None = None) -> None:
    """A screenshot of ``page``: its top ``height`` pixels, or the whole page (up to 4000)."""
    session = open_offline(width, height or 900)
    try:
        session.get(page.resolve().as_uri())
        if height is None:
            whole = session.execute_script("return document.documentElement.scrollHeight")
            session.set_window_size(width, min(int(whole) + 120, 4000))
        session.save_screenshot(str(shot))
    finally:
        session.quit()


if __name__ == "__main__":
    screenshot(Path(sys.argv[1]), Path(sys.argv[2]), *(int(value) for value in sys.argv[3:5]))
