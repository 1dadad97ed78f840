"""Hover and focus pass too (issue 26): each primary action, hovered and then focused, keeps its
contrast (axe-core on that element alone), and focus shows a ring of at least 3:1 against what
is behind it; a text field's edge reads at 3:1 too (WCAG 1.4.11). Status is never carried by
colour alone: Compare's diff marks insertions with an underline and deletions with a
strike-through.

The pages are the accessibility tour's (tests/web/test_a11y_browser.py), in light and dark:
the demo weather conversation (message actions, the reply's Send and Options, the header), the
haiku thread shown on an off-path branch (the switcher's previous and next, Compare and
Restore), Compare (Prefer and its button) and the run page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from tests.a11y import SCHEMES, audit
from tests.base import make_user
from tests.browser import BROWSER_TESTS, open_page
from tests.web.test_a11y_browser import seed
from transcripts.ledger.default_project import default_project
from transcripts.ledger.projects import set_member

pytestmark = BROWSER_TESTS

HEADER = ".topbar a, .topbar button, .topbar summary"
PROBE = "data-contrast-probe"
# The primary actions of each page, by the tour's page name.
ACTIONS: dict[str, tuple[str, ...]] = {
    "conversation-tools": (
        HEADER,
        ".msg-tools .icon-btn",
        ".reply-box button[type=submit]",
        ".reply-box .gen-options > summary",
    ),
    "conversation-branches": ("a.sib", ".sib-compare", ".btn-restore"),
    "compare": (".prefer > summary", ".prefer-form .btn", ".col-actions > .btn", ".toggle"),
    "run": (HEADER, ".crumbs a", ".facts a", ".raw-log > summary"),
}

# Marks the visible elements a selector finds, one per look (label, and the message's role:
# a user message has a tinted background), and returns how many it marked.
MARK = """([selector, probe]) => {
    document.querySelectorAll(`[${probe}]`).forEach(e => e.removeAttribute(probe));
    const seen = new Set();
    let n = 0;
    for (const el of document.querySelectorAll(selector)) {
        if (!el.getClientRects().length || el.closest('[hidden]')) continue;
        const msg = el.closest('.msg');
        const key = [el.textContent.trim(), el.getAttribute('aria-label'),
                     msg ? msg.className : ''].join('|');
        if (seen.has(key)) continue;
        seen.add(key);
        el.setAttribute(probe, String(n++));
    }
    return n;
}"""

# Opens the folded <details> an element sits in (not the one whose summary it is).
UNFOLD = """(el) => {
    const box = el.closest('details');
    if (box && !box.open && el.parentElement !== box) { box.open = true; return true; }
    return false;
}"""

# WCAG's contrast of a computed colour against the first opaque background behind an element.
RATIO = """
    const rgb = (value) => {
        const m = value.match(/rgba?\\(([^)]+)\\)/);
        if (!m) return null;
        const p = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number);
        return {c: p.slice(0, 3), a: p.length > 3 ? p[3] : 1};
    };
    const lum = ([r, g, b]) => [r, g, b].map(v => v / 255)
        .map(v => v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)
        .reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
    const ratio = (el, value) => {
        const fore = rgb(value);
        if (!fore) return null;
        let back = null;
        for (let up = el.parentElement; up && !back; up = up.parentElement) {
            const b = rgb(getComputedStyle(up).backgroundColor);
            if (b && b.a === 1) back = b.c;
        }
        const [hi, lo] = [lum(fore.c), lum(back || [255, 255, 255])].sort((x, y) => y - x);
        return Math.round((hi + 0.05) / (lo + 0.05) * 100) / 100;
    };
"""

# The focus ring: whether :focus-visible applies, the outline or shadow drawn, and the
# outline's contrast against what is behind the element.
RING = (
    "(el) => {"
    + RATIO
    + """
    const style = getComputedStyle(el);
    const outlined = style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0;
    return {visible: el.matches(':focus-visible'), outlined, shadow: style.boxShadow !== 'none',
            ratio: outlined ? ratio(el, style.outlineColor) : null};
}"""
)

# Each visible text field and select: its name and its edge's contrast against the page.
EDGES = (
    "() => {"
    + RATIO
    + """
    const fields = document.querySelectorAll(
        'input[type=text], input[type=search], input[type=password], input[type=number], '
        + 'select, textarea');
    return [...fields].filter(el => el.getClientRects().length).map(el => ({
        name: el.name || el.id, ratio: ratio(el, getComputedStyle(el).borderTopColor)}));
}"""
)


@dataclass(frozen=True)
class Ring:
    """What focus draws around an element."""

    visible: bool
    outlined: bool
    shadow: bool
    ratio: float | None

    def problem(self) -> str | None:
        """Why a person could not see where focus is, or None when they can."""
        if not self.visible:
            return "focus is not :focus-visible"
        if not (self.outlined or self.shadow):
            return "no focus ring (outline and box-shadow are none)"
        if self.ratio is not None and self.ratio < 3:
            return f"focus ring at {self.ratio}:1 against its background (needs 3:1)"
        return None


def _name(element: Any) -> str:
    """How a failure names an element: its tag, class and text."""
    return str(
        element.evaluate(
            "(el) => `${el.tagName.toLowerCase()}.${[...el.classList].join('.')} "
            "\"${(el.getAttribute('aria-label') || el.textContent).trim().slice(0, 30)}\"`"
        )
    )


def _probe(page: Any, index: int) -> list[str]:
    """Hover and then focus one marked element; what fails in either state."""
    where = f"[{PROBE}='{index}']"
    element = page.locator(where)
    unfolded = element.evaluate(UNFOLD)
    element.scroll_into_view_if_needed()
    element.hover()
    failures = [f"{_name(element)} hovered: {v}" for v in audit(page, include=where)]
    page.mouse.move(0, 0)
    page.keyboard.press("Shift")  # a keyboard user: focus() then shows :focus-visible
    element.focus()
    failures += [f"{_name(element)} focused: {v}" for v in audit(page, include=where)]
    problem = Ring(**element.evaluate(RING)).problem()
    if problem:
        failures.append(f"{_name(element)} focused: {problem}")
    element.evaluate("(el) => el.blur()")
    if unfolded:
        element.evaluate("(el) => { el.closest('details').open = false; }")
    return failures


def _tour(page: Any, selectors: tuple[str, ...]) -> tuple[int, list[str]]:
    """Every primary action of the page: how many were probed, and what failed."""
    probed, failures = 0, []
    for selector in selectors:
        count = int(page.evaluate(MARK, [selector, PROBE]))
        assert count, f"no visible element matches {selector}"
        for index in range(count):
            failures += _probe(page, index)
        probed += count
    return probed, failures


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("name", list(ACTIONS))
def test_primary_actions_keep_contrast_when_hovered_and_focused(
    browser: Any, live_server: Any, name: str, scheme: str
) -> None:
    admin = make_user("contrast-admin", is_staff=True)
    set_member(project=default_project(), user=admin, role="admin")
    url = live_server.url + seed(admin).urls[name]
    page = open_page(browser, live_server, admin, color_scheme=scheme)
    page.goto(url)
    page.wait_for_load_state("networkidle")
    probed, failures = _tour(page, ACTIONS[name])
    assert probed >= len(ACTIONS[name])
    assert not failures, f"{name}, {scheme}:\n  " + "\n  ".join(failures)


# Each diff mark (the legend's and the columns') with its computed text decoration.
DIFF_CUES = """() => [...document.querySelectorAll('ins.diff-add, del.diff-del')].map(el => ({
    tag: el.tagName.toLowerCase(),
    line: getComputedStyle(el).textDecorationLine,
}))"""


@pytest.mark.parametrize("scheme", SCHEMES)
def test_compare_diff_marks_changes_beyond_colour(
    browser: Any, live_server: Any, scheme: str
) -> None:
    admin = make_user("contrast-diff", is_staff=True)
    set_member(project=default_project(), user=admin, role="admin")
    page = open_page(browser, live_server, admin, color_scheme=scheme)
    page.goto(live_server.url + seed(admin).urls["compare"])
    cues = page.evaluate(DIFF_CUES)
    assert {c["tag"] for c in cues} == {"ins", "del"}, cues
    for cue in cues:
        expected = "underline" if cue["tag"] == "ins" else "line-through"
        assert expected in cue["line"], cue
    assert not audit(page, include=".legend-diff")


@pytest.mark.parametrize("scheme", SCHEMES)
def test_text_fields_show_their_edge(browser: Any, live_server: Any, scheme: str) -> None:
    admin = make_user("contrast-fields", is_staff=True)
    set_member(project=default_project(), user=admin, role="admin")
    urls = seed(admin).urls
    page = open_page(browser, live_server, admin, color_scheme=scheme)
    faint: list[str] = []
    for name in ("new-thread", "conversation-tools", "threads"):
        page.goto(live_server.url + urls[name])
        page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
        edges = page.evaluate(EDGES)
        assert edges, f"{name} shows no text field"
        faint += [f"{name} {e['name']}: {e['ratio']}:1" for e in edges if e["ratio"] < 3]
    assert not faint, "text fields' edges under 3:1:\n  " + "\n  ".join(faint)
