"""Accessibility and small-screen checks the browser tests run inside Chromium.

`audit(page)` runs axe-core (the npm package pinned in package.json, installed into
node_modules/ by `make test`; never a CDN, never served to users) on what the page shows now
and returns its violations of impact serious or critical, each with the rule, the element and
axe's own summary (a contrast failure names the two colours and the ratio). `overflow(page)`
is how many CSS pixels the page scrolls sideways. `explain` turns both into a failure message.

Colour scheme: open the page with `color_scheme="dark"` (Playwright emulates
`prefers-color-scheme`) to check the dark palette.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

AXE = Path(__file__).resolve().parents[1] / "node_modules" / "axe-core" / "axe.min.js"
SEVERE = ("serious", "critical")
# WCAG 2.0/2.1/2.2 A and AA, plus axe's best practices that a screen-reader user feels.
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]
WIDTHS = (360, 390, 768, 1366)
SCHEMES = ("light", "dark")


@dataclass(frozen=True)
class Violation:
    """One rule failing on one element."""

    rule: str
    impact: str
    target: str
    summary: str

    def __str__(self) -> str:
        return f"{self.rule} ({self.impact}) at {self.target}: {self.summary}"


@cache
def axe_source() -> str:
    """axe-core's script; a missing install skips locally and fails on CI."""
    if not AXE.exists():
        message = "axe-core is not installed: run `make a11y-tools` (make test does)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return AXE.read_text(encoding="utf-8")


def audit(page: Any, *, include: str | None = None) -> list[Violation]:
    """The serious and critical violations axe-core finds on page (or inside `include`)."""
    # Injected through the DevTools protocol: the page's CSP (no inline scripts) stays on.
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(axe_source())
    results = page.evaluate(
        """async ([include, tags]) => {
            const context = include ? {include: [include]} : document;
            const r = await axe.run(context, {runOnly: {type: 'tag', values: tags},
                                              resultTypes: ['violations']});
            return r.violations.flatMap(v => v.nodes.map(n => ({
                rule: v.id, impact: n.impact || v.impact || '',
                target: n.target.join(' '),
                summary: (n.failureSummary || v.help).replace(/\\s+/g, ' ').trim(),
            })));
        }""",
        [include, TAGS],
    )
    return [Violation(**r) for r in results if r["impact"] in SEVERE]


def overflow(page: Any) -> int:
    """CSS pixels the page scrolls sideways (0 when it fits the viewport's width)."""
    return int(page.evaluate("() => document.scrollingElement.scrollWidth - window.innerWidth"))


def widest(page: Any, limit: int = 5) -> list[str]:
    """The elements that reach furthest past the viewport's right edge (for a failure)."""
    return list(
        page.evaluate(
            """(limit) => {
                const w = window.innerWidth, out = [];
                for (const el of document.querySelectorAll('body *')) {
                    const r = el.getBoundingClientRect();
                    if (r.right > w + 1 && r.width > 0) {
                        const cls = el.className && el.className.baseVal === undefined
                            ? '.' + String(el.className).trim().split(/\\s+/).join('.') : '';
                        const name = el.tagName.toLowerCase() + cls;
                        out.push([r.right, `${name} right=${Math.round(r.right)}`]);
                    }
                }
                out.sort((a, b) => b[0] - a[0]);
                return out.slice(0, limit).map(x => x[1]);
            }""",
            limit,
        )
    )


def explain(where: str, violations: list[Violation], sideways: int, page: Any) -> str:
    """A failure message naming each violation and, when it overflows, the widest elements."""
    lines = [f"{where}:"]
    lines += [f"  {v}" for v in violations]
    if sideways > 0:
        lines.append(f"  scrolls sideways by {sideways}px; widest: {', '.join(widest(page))}")
    return "\n".join(lines)
