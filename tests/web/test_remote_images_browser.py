"""Remote images in Chromium: nothing reaches an image's host until the reader asks.

A second local server stands in for the remote hosts: as 127.0.0.1:<port> it is a listed image
host, as localhost:<port> an unlisted one (where a planted image would report its readers)."""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.browser import BROWSER_TESTS, open_page, screenshot
from tests.factories import make_run, make_thread
from tests.production.conftest import effective_settings, production_env
from tests.web.test_parts import PNG
from tests.web.test_parts_browser import WATCH_VIOLATIONS
from transcripts.ledger.shares import create_share

pytestmark = BROWSER_TESTS
PIXEL = base64.b64decode(PNG.partition(",")[2])


class _Host(ThreadingHTTPServer):
    """A server answering every GET with a one-pixel PNG, keeping the paths asked for."""

    requested: list[str]


class _Pixel(BaseHTTPRequestHandler):
    server: _Host

    def do_GET(self) -> None:
        self.server.requested.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.send_header("Content-Length", str(len(PIXEL)))
        self.end_headers()
        self.wfile.write(PIXEL)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def image_host() -> Iterator[_Host]:
    """The stand-in remote host, on a port of its own."""
    server = _Host(("127.0.0.1", 0), _Pixel)
    server.requested = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_remote_image_is_fetched_only_when_the_reader_asks_and_only_from_a_listed_host(
    browser: Any, live_server: Any, editor: Any, settings: Any, image_host: _Host
) -> None:
    port = image_host.server_address[1]
    listed = f"127.0.0.1:{port}"
    settings.TRANSCRIPTS_IMAGE_HOSTS = [listed]
    settings.TRANSCRIPTS_CSP = effective_settings(
        production_env(TRANSCRIPTS_IMAGE_HOSTS=listed), "TRANSCRIPTS_CSP"
    )["TRANSCRIPTS_CSP"]
    planted = f"http://localhost:{port}/planted.png?who=notes"
    thread = make_thread("A chart")
    make_run(
        thread,
        ("message", {"role": "user", "parts": [{"type": "text", "text": "Plot it"}]}),
        ("message", {"role": "assistant", "parts": [
            {"type": "text", "text": f"Here: ![the chart](http://{listed}/chart.png)"},
            {"type": "file", "mimeType": "image/png", "name": "beacon.png", "url": planted},
        ]}),
    )  # fmt: skip
    thread.refresh_from_db()
    page = open_page(browser, live_server, editor)
    page.add_init_script(WATCH_VIOLATIONS)
    page.goto(f"{live_server.url}/t/{thread.id}/")
    page.wait_for_load_state("networkidle")
    assert image_host.requested == []
    # The unlisted host: its URL as a link to open in a new tab, no button.
    link = page.locator("a.remote-image-link")
    assert link.get_attribute("href") == planted
    assert link.get_attribute("target") == "_blank"
    assert {"noreferrer", "noopener"} <= set((link.get_attribute("rel") or "").split())
    assert page.get_by_role("button", name=f"Load image from localhost:{port}").count() == 0
    screenshot(page, "34-remote-image-placeholders", full_page=False)

    # From the keyboard: the listed host's image loads, and focus stays where it was.
    button = page.get_by_role("button", name=f"Load image from {listed}")
    button.focus()
    page.keyboard.press("Enter")
    page.wait_for_function("document.querySelector('.remote-image img')?.complete")
    image = page.locator(".remote-image img")
    assert image.get_attribute("alt") == "the chart"
    assert page.evaluate("document.querySelector('.remote-image img').naturalWidth") == 1
    assert page.evaluate("document.activeElement.classList.contains('remote-image')")
    assert image_host.requested == ["/chart.png"]
    assert page.evaluate("window.violations") == []

    # Were a page to ask for an unlisted host's image anyway, the policy blocks it.
    page.evaluate(f"(() => {{ const i = new Image(); i.src = {planted!r}; }})()")
    page.wait_for_function("window.violations.length > 0")
    assert page.evaluate("window.violations")[0].startswith("img-src")
    assert image_host.requested == ["/chart.png"]

    # At 390 px the placeholders fit the screen.
    mobile = open_page(browser, live_server, editor, viewport={"width": 390, "height": 844})
    mobile.goto(f"{live_server.url}/t/{thread.id}/")
    assert mobile.evaluate("document.documentElement.scrollWidth") <= 390
    assert mobile.get_by_role("button", name=f"Load image from {listed}").is_visible()
    screenshot(mobile, "35-remote-image-placeholders-mobile", full_page=False)

    # The share page, read without a session, works the same way.
    _, secret = create_share(thread=thread, user=editor)
    stranger = browser.new_context().new_page()
    stranger.goto(f"{live_server.url}/s/{secret}/")
    stranger.wait_for_load_state("networkidle")
    assert image_host.requested == ["/chart.png"]
    stranger.get_by_role("button", name=f"Load image from {listed}").click()
    stranger.wait_for_function("document.querySelector('.remote-image img')?.complete")
    assert image_host.requested == ["/chart.png", "/chart.png"]
