"""Primary buttons stay readable when hovered, in light and dark mode (WCAG contrast >= 4.5:1).

The colours are the browser's: each hovered button's computed text colour over its computed
background (composited over its ancestors' backgrounds), measured on the real pages.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser import BROWSER_TESTS, open_page, screenshot
from transcripts.demo import load_demo
from transcripts.ledger.reports import report_message
from transcripts.models import Message, Thread

pytestmark = BROWSER_TESTS

MINIMUM = 4.5

# The text and background colours the reader sees, as sRGB 0..255 triples: each computed
# colour is painted on a canvas and read back (whatever syntax the browser computes it in,
# color-mix() included), and translucent backgrounds are laid over their ancestors'.
SEEN_COLOURS = """(el) => {
  const canvas = document.createElement("canvas");
  canvas.width = canvas.height = 1;
  const ctx = canvas.getContext("2d", {willReadFrequently: true});
  const rgba = (value) => {
    ctx.clearRect(0, 0, 1, 1);
    ctx.fillStyle = "rgb(1, 2, 3)";
    ctx.fillStyle = value;
    if (ctx.fillStyle === "#010203") throw new Error("unreadable colour " + value);
    ctx.fillRect(0, 0, 1, 1);
    const d = ctx.getImageData(0, 0, 1, 1).data;
    return [d[0], d[1], d[2], d[3] / 255];
  };
  const over = (top, below) => [0, 1, 2].map((i) => top[i] * top[3] + below[i] * (1 - top[3]));
  const layers = [];
  for (let node = el; node; node = node.parentElement) {
    layers.push(rgba(getComputedStyle(node).backgroundColor));
  }
  let background = [255, 255, 255];
  for (const layer of layers.reverse()) background = over(layer, background);
  return {text: over(rgba(getComputedStyle(el).color), background), background: background,
          label: el.innerText.trim()};
}"""


# Opens every <details> around an element (a popover inside a menu, say).
OPEN_AROUND = """(el) => {
  for (let d = el.closest("details"); d; d = d.parentElement.closest("details")) d.open = true;
}"""


def _luminance(rgb: list[float]) -> float:
    def linear(channel: float) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(first: list[float], second: list[float]) -> float:
    """The WCAG 2 contrast ratio of two sRGB colours."""
    light, dark = sorted((_luminance(first), _luminance(second)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def test_the_wcag_formula_gives_the_known_ratios() -> None:
    assert contrast([0, 0, 0], [255, 255, 255]) == pytest.approx(21)
    assert contrast([255, 255, 255], [255, 255, 255]) == pytest.approx(1)
    assert contrast([118, 118, 118], [255, 255, 255]) == pytest.approx(4.54, abs=0.01)


def _primary_contrasts(page: Any, name: str) -> list[tuple[str, float]]:
    """(label, contrast) of every primary button of the page, at rest and with the pointer on
    it; a button in a closed popover or menu is opened to first."""
    ratios = []
    buttons = page.locator(".btn.btn-primary")
    for index in range(buttons.count()):
        button = buttons.nth(index)
        if not button.is_visible():
            button.evaluate(OPEN_AROUND)
        if not button.is_visible():
            continue
        for state in ("at rest", "hovered"):
            if state == "hovered":
                button.hover()
            else:
                page.mouse.move(0, 0)
            seen = button.evaluate(SEEN_COLOURS)
            label = f"{name}: {seen['label']} ({state})"
            ratios.append((label, contrast(seen["text"], seen["background"])))
    page.mouse.move(0, 0)
    return ratios


def _pages(base: str, page: Any) -> list[tuple[str, str]]:
    weather = Thread.objects.get(title__startswith="Weather")
    haiku = Thread.objects.get(title__startswith="Haiku")
    page.goto(f"{base}/t/{haiku.id}/")
    compare = page.locator("a.sib-compare").first.get_attribute("href")
    return [
        ("threads", "/"),
        ("new thread", "/new/"),
        ("import", "/import/"),
        ("conversation", f"/t/{weather.id}/"),
        ("compare", compare),
        ("moderation", "/moderation/"),
        ("project", "/p/default/"),
    ]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_hovered_primary_buttons_keep_their_text_readable(
    browser: Any, live_server: Any, django_user_model: Any, scheme: str
) -> None:
    load_demo()
    admin = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    answer = Message.objects.filter(role="assistant", active=True).first()
    assert answer is not None
    report_message(user=admin, message=answer, reason="spam")
    page = open_page(browser, live_server, admin, color_scheme=scheme)
    ratios: list[tuple[str, float]] = []
    for name, path in _pages(live_server.url, page):
        page.goto(live_server.url + path)
        ratios += _primary_contrasts(page, name)
        if name == "conversation":
            page.locator(".reply-box .btn-primary").hover()
            screenshot(page, f"66-send-hovered-{scheme}", full_page=False)
    labels = " | ".join(label for label, _ in ratios)
    for expected in ("New thread", "Start thread", "Import", "Send", "Resolve", "Add member"):
        assert expected in labels, f"no {expected!r} button was measured: {labels}"
    unreadable = [(label, round(ratio, 2)) for label, ratio in ratios if ratio < MINIMUM]
    assert not unreadable, f"below {MINIMUM}:1 ({scheme}): {unreadable}"
