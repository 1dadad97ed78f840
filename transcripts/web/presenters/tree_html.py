"""The tree map's outline as HTML: up to a thousand lines written in one pass.

Rendered line by line through the template language the outline cost more than reading and
laying out the whole tree (about 0.2 ms a line); the markup here is the same, escaped the same
way (`escape` is what autoescaping applies), and the template only places it.

The outline is an ARIA tree (the template's `<ol role="tree">`): every line a person can open
is a `treeitem` link (its `<li>` and the lists around it have no role of their own), and the
branches at a fork point are a `group` owned (`aria-owns`) by the line whose end is that fork
point, `aria-expanded` as the fork's `<details>` is open. Levels, set sizes and positions are
written out because an owned group is not nested inside its owner in the document.
static/js/tree.js adds the arrow keys; without it every line is a plain link.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from transcripts.web.presenters.tree import TreeLine
from transcripts.web.presenters.tree_layout import Segment

START = "Start: the first message was edited"


@dataclass
class _Place:
    """Where a treeitem sits in the ARIA tree, and the fork group it owns, if any."""

    level: int
    pos: int
    size: int = 0  # known once its group closes
    owns: str = ""  # the id of the fork group below it
    expanded: bool = False
    group: str = ""  # a fork line: the id of the group it opens (its place: its Compare link)

    def attrs(self, selected: bool = False) -> str:
        """The treeitem's role and ARIA attributes, each after a space (no href)."""
        attrs = (
            f' role="treeitem" aria-level="{self.level}" aria-setsize="{self.size}"'
            f' aria-posinset="{self.pos}"'
        )
        if self.owns:
            expanded = "true" if self.expanded else "false"
            attrs += f' aria-owns="{self.owns}" aria-expanded="{expanded}"'
        if selected:
            attrs += ' aria-selected="true"'
        return attrs


def _places(lines: list[TreeLine]) -> list[_Place | None]:
    """The place of each line's treeitem (a fork's is its Compare link, first in its group);
    a fork's group is owned by the treeitem just before it (its fork point)."""
    places: list[_Place | None] = [None] * len(lines)
    groups: list[list[_Place]] = [[]]
    for index, line in enumerate(lines):
        if line.kind == "end-fork" and len(groups) > 1:
            _close(groups.pop())
        elif line.kind == "fork":
            place = _Place(level=len(groups) + 1, pos=1, group=f"tree-fork-{index}")
            if groups[-1]:
                groups[-1][-1].owns, groups[-1][-1].expanded = place.group, line.open
            groups.append([place])
            places[index] = place
        elif line.kind in ("start", "row", "cut", "more"):
            place = _Place(level=len(groups), pos=len(groups[-1]) + 1)
            groups[-1].append(place)
            places[index] = place
    for rest in groups:
        _close(rest)
    return places


def _close(group: list[_Place]) -> None:
    """Give every treeitem of a finished group its size."""
    for place in group:
        place.size = len(group)


def _plural(count: int, suffix: str = "s") -> str:
    """The template's `pluralize` filter."""
    return "" if count == 1 else suffix


def _badges(seg: Segment) -> str:
    """Its state in words: "on the active path" (the tag says "active") or "alternative", and
    what became of its run."""
    badges = ""
    if seg.state == "active":
        badges += (
            '<span class="sr-only">on the </span><span class="tag tag-active">active</span>'
            '<span class="sr-only"> path</span>'
        )
    elif seg.state:
        badges += f'<span class="tag tag-muted">{escape(seg.state)}</span>'
    if seg.badge:
        badges += f'<span class="tag tag-{escape(seg.badge)}">{escape(seg.badge)}</span>'
    return badges


def _row(line: TreeLine, seg: Segment, place: _Place, selected: bool) -> str:
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
    return (
        f'<li class="tree-row {state} st-{escape(seg.status)}" role="none">\n'
        f'      <a{place.attrs(selected)} href="{escape(line.url)}">\n'
        f"        {mark}\n"
        f'        <span class="seg-label">{escape(line.label)}</span>\n'
        f'        <span class="seg-text">{text}</span>\n'
        f"        {extent}\n"
        f'        <span class="tree-badges">{_badges(seg)}</span>\n'
        "      </a>\n"
        "    </li>"
    )


def _fork(line: TreeLine, place: _Place) -> str:
    if line.at_root:
        count = f"{line.count} other first message{_plural(line.count)}"
    else:
        count = f"{line.count} other branch{_plural(line.count, 'es')} here"
    return (
        f'<li class="tree-fork" role="none"><div role="group" id="{place.group}"'
        f' aria-label="{count}"><details class="tree-branches"{" open" if line.open else ""}>\n'
        f'      <summary><span class="fork-count">{count}</span></summary>\n'
        '      <ol class="tree-outline" role="none">\n'
        f'      <li class="fork-actions" role="none"><a{place.attrs()}'
        f' href="{escape(line.compare_url)}">Compare the branches at this point</a></li>'
    )


def _item(line: TreeLine, place: _Place | None, selected: bool) -> str:
    """One line's markup (an opening or closing tag for the nesting steps)."""
    if line.kind == "branch":
        return '    <li class="tree-branch" role="none"><ol class="tree-outline" role="none">'
    if line.kind == "end-branch":
        return "    </ol></li>"
    if line.kind == "end-fork":
        return "  </ol>\n    </details></div></li>"
    if place is None:
        return ""
    if line.kind == "row" and line.segment is not None:
        return _row(line, line.segment, place, selected)
    if line.kind == "fork":
        return _fork(line, place)
    if line.kind == "start":
        return f'<li class="tree-start muted" role="none"><span{place.attrs()}>{START}</span></li>'
    if line.kind == "more":
        return (
            f'    <li class="tree-more muted" role="none"><a{place.attrs()}'
            f' href="{escape(line.compare_url)}">{line.count} more'
            f" branch{_plural(line.count, 'es')} here, not listed: see them in Compare</a></li>"
        )
    if line.kind == "cut":
        return (
            f'<li class="tree-cut muted" role="none"><a{place.attrs()} href="{escape(line.url)}">'
            f"{line.count} more line{_plural(line.count)} of this branch, not listed: open it"
            " in the conversation</a></li>"
        )
    return ""


def _shown(lines: list[TreeLine]) -> int:
    """The index of the line the conversation shows: the last one on the active path."""
    active = [
        i
        for i, line in enumerate(lines)
        if line.kind == "row" and line.segment is not None and line.segment.active
    ]
    return active[-1] if active else -1


def outline_html(lines: list[TreeLine]) -> SafeString:
    """The outline's items, each on its own lines, ready for the tree's `<ol role="tree">`;
    edited first messages get a "Start" line to own their fork."""
    if lines and lines[0].kind == "fork" and lines[0].at_root:
        lines = [TreeLine(kind="start"), *lines]
    places = _places(lines)
    shown = _shown(lines)
    # Every value is escaped above; the rest is fixed markup.
    return mark_safe(
        "".join(f"\n    {_item(line, places[i], i == shown)}" for i, line in enumerate(lines))
    )
