"""Browser tests' plumbing: Playwright driving Debian's Chromium (no browser download).

A browser test module sets `pytestmark = BROWSER_TESTS` (skipped cleanly when Chromium is not
installed) and asks for the `browser` fixture, which tests/conftest.py exposes; `open_page`
gives it a page logged in as a user, `screenshot` keeps what it saw in test-artifacts/.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# The marks of every browser test: the `browser` marker, a database the live server sees
# (committed, not rolled back), and a skip when Debian's Chromium is missing.
BROWSER_TESTS = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not Path(CHROMIUM).exists() or shutil.which("chromium") is None,
        reason="Debian's Chromium is not installed (apt-get install chromium); CI installs it",
    ),
]


class Served(Protocol):
    """A live server (pytest-django's, or uvicorn's from tests/live_server.py)."""

    @property
    def url(self) -> str: ...


@pytest.fixture
def browser() -> Iterator[Any]:
    """A headless Chromium (no browser download: the system one)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    # Playwright's sync API runs an event loop; the ORM calls in these tests are still sync.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        yield chromium
        chromium.close()


def open_page(browser: Any, live_server: Served, user: User, **options: Any) -> Any:
    """A new page of browser logged in to live_server as user (a session cookie)."""
    client = Client()
    client.force_login(user)
    options.setdefault("viewport", {"width": 1180, "height": 900})
    context = browser.new_context(**options)
    context.add_cookies(
        [
            {
                "name": settings.SESSION_COOKIE_NAME,
                "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                "url": live_server.url,
            }
        ]
    )
    page = context.new_page()
    page.set_default_timeout(10_000)
    return page


def screenshot(page: Any, name: str, full_page: bool = True) -> None:
    """Save what page shows as test-artifacts/<name>.png."""
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=full_page)
