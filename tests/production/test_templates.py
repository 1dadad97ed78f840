"""No template needs what the Content-Security-Policy forbids (checked without a browser too)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from transcripts.api.docs import PAGE as SWAGGER_PAGE
from transcripts.web.presenters.tree_layout import Segment, TreeNode

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = {
    "an inline style attribute": re.compile(r"\sstyle\s*=", re.I),
    "a <style> element": re.compile(r"<style\b", re.I),
    "an inline event handler": re.compile(r"\son[a-z]+\s*=", re.I),
    "an hx-on handler (needs eval)": re.compile(r"\shx-on", re.I),
    "hx-vars or js: values (need eval)": re.compile(r"hx-vars|hx-vals\s*=\s*['\"]\s*js:", re.I),
    "an inline script": re.compile(r"<script\b(?![^>]*\ssrc=)(?![^>]*application/json)", re.I),
    "a javascript: URL": re.compile(r"javascript:", re.I),
}


def templates() -> dict[str, str]:
    """Every HTML template of the project, and the Swagger page, by name."""
    found = {
        str(path.relative_to(ROOT)): path.read_text()
        for path in sorted((ROOT / "templates").rglob("*.html"))
    }
    found["transcripts/api/docs.py PAGE"] = SWAGGER_PAGE
    return found


def test_no_template_needs_inline_script_style_or_eval() -> None:
    problems = [
        f"{name}:{source.count(chr(10), 0, match.start()) + 1}: {what}"
        for name, source in templates().items()
        for what, pattern in FORBIDDEN.items()
        for match in pattern.finditer(source)
    ]
    assert problems == []


def test_the_scan_finds_what_the_policy_would_block() -> None:
    samples = [
        '<div style="--row: 40px">',
        "<style>.a{}</style>",
        '<img src=x onerror="alert(1)">',
        '<a hx-on:click="this.remove()">',
        "<div hx-vals='js:{a: 1}'>",
        "<script>alert(1)</script>",
        '<a href="javascript:alert(1)">',
    ]
    for sample in samples:
        assert any(pattern.search(sample) for pattern in FORBIDDEN.values()), sample
    allowed = '<script src="/static/js/app.js" defer></script><script type="application/json">'
    assert not any(pattern.search(allowed) for pattern in FORBIDDEN.values())


def test_the_role_bar_lays_each_role_end_to_end() -> None:
    node = TreeNode(id="a", parent_id=None, role="user", depth=0, active=True, status="committed")
    counts = Counter({"tool": 1, "assistant": 3, "user": 2})
    segment = Segment(first=node, last=node, count=6, role_counts=counts)
    assert segment.role_spans == [("user", 0, 2), ("assistant", 2, 3), ("tool", 5, 1)]
