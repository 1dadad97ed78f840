"""The tree map's outline as HTML: up to a thousand lines written in one pass.

Rendered line by line through the template language the outline cost more than reading and
laying out the whole tree (about 0.2 ms a line); the markup here is the same, escaped the same
way (`escape` is what autoescaping applies), and the template only places it.
"""

from __future__ import annotations

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from transcripts.web.presenters.tree import TreeLine
from transcripts.web.presenters.tree_layout import Segment


def _plural(count: int, suffix: str = "s") -> str:
    """The template's `pluralize` filter."""
    return "" if count == 1 else suffix


def _row(line: TreeLine, seg: Segment) -> str:
    state = "is-active" if seg.active else "is-alternative"
    if seg.is_stub:
        mark = '<i class="stub-mark" aria-hidden="true">\N{MULTIPLICATION SIGN}</i>\n        '
        text = f"{escape(seg.badge or seg.status)} run, no messages"
        extent = ""
    else:
        rects = "".join(
            f'<rect class="role-{escape(role)}" x="{start}" width="{n}" height="1"/>'
            for role, start, n in seg.role_spans
        )
        mark = (
            f'<svg class="rolebar" viewBox="0 0 {seg.count} 1" preserveAspectRatio="none" '
            f'aria-hidden="true" focusable="false">{rects}</svg>'
        )
        text = escape(line.snippet or "(no text)")
        last = f"\N{EN DASH}{seg.last.depth + 1}" if seg.count > 1 else ""
        extent = (
            f'<span class="seg-count">{seg.count} msg{_plural(seg.count)}</span>\n'
            f'        <span class="seg-depth">#{seg.first.depth + 1}{last}</span>'
        )
    badges = ""
    if seg.state:
        tag = "tag-active" if seg.active else "tag-muted"
        badges += f'<span class="tag {tag}">{escape(seg.state)}</span>'
    if seg.badge:
        badges += f'<span class="tag tag-{escape(seg.badge)}">{escape(seg.badge)}</span>'
    return (
        f'<li class="tree-row {state} st-{escape(seg.status)}">\n'
        f'      <a href="{escape(line.url)}">\n'
        f"        {mark}\n"
        f'        <span class="seg-label">{escape(line.label)}</span>\n'
        f'        <span class="seg-text">{text}</span>\n'
        f"        {extent}\n"
        f'        <span class="tree-badges">{badges}</span>\n'
        "      </a>\n"
        "    </li>"
    )


def _fork(line: TreeLine) -> str:
    if line.at_root:
        count = f"{line.count} other first message{_plural(line.count)}"
    else:
        count = f"{line.count} other branch{_plural(line.count, 'es')} here"
    return (
        f'<li class="tree-fork"><details class="tree-branches"{" open" if line.open else ""}>\n'
        f'      <summary><span class="fork-count">{count}</span></summary>\n'
        f'      <p class="fork-actions"><a href="{escape(line.compare_url)}">Compare the branches'
        " at this point</a></p>\n"
        '      <ol class="tree-outline">'
    )


def _item(line: TreeLine) -> str:
    """One line's markup (an opening or closing tag for the nesting steps)."""
    if line.kind == "row" and line.segment is not None:
        return _row(line, line.segment)
    if line.kind == "fork":
        return _fork(line)
    if line.kind == "branch":
        return '    <li class="tree-branch"><ol class="tree-outline">'
    if line.kind == "end-branch":
        return "    </ol></li>"
    if line.kind == "more":
        return (
            f'    <li class="tree-more muted">{line.count} more'
            f" branch{_plural(line.count, 'es')} here, not listed:"
            f' <a href="{escape(line.compare_url)}">see them in Compare</a></li>'
        )
    if line.kind == "end-fork":
        return "  </ol>\n    </details></li>"
    if line.kind == "cut":
        return (
            f'<li class="tree-cut muted"><a href="{escape(line.url)}">{line.count} more'
            f" line{_plural(line.count)} of this branch, not listed: open it in the"
            " conversation</a></li>"
        )
    return ""


def outline_html(lines: list[TreeLine]) -> SafeString:
    """The outline's items, each on its own lines, ready for the tree's `<ol>`."""
    # Every value is escaped above; the rest is fixed markup.
    return mark_safe("".join(f"\n    {_item(line)}" for line in lines))
