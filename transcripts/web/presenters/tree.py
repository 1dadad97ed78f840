"""The tree map of a thread: every message and every run without messages, as an outline of
branches with a label, a preview and a state on each line."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.urls import reverse

from transcripts.ids import ulid_from_hex
from transcripts.models import Thread
from transcripts.selectors.paths import BareRun, TreeRow
from transcripts.web.presenters.tree_layout import (
    OutlineItem,
    Segment,
    TreeMap,
    TreeNode,
    layout_tree,
    outline,
)

ROLE_LABELS = {"user": "User", "assistant": "Assistant", "tool": "Tool", "system": "System"}


@dataclass
class TreeLine:
    """One step of the outline with what its template needs: links, label and preview."""

    kind: str
    segment: Segment | None = None
    count: int = 0
    open: bool = False
    url: str = ""  # row and cut: the branch in the conversation (a stub: its run's page)
    compare_url: str = ""  # fork and more: every branch at the fork point side by side
    at_root: bool = False  # fork and more: the alternatives are first messages (edits)
    label: str = ""  # row: the roles of its messages, in order
    snippet: str = ""  # row: the start of its first message


def _label(segment: Segment) -> str:
    """The roles of a segment's messages: "User", "User → Assistant", "User (2) · Tool"."""
    if segment.is_stub:
        return "Run"
    parts = [
        ROLE_LABELS.get(role, role.capitalize()) + (f" ({count})" if count > 1 else "")
        for role, count in segment.roles
    ]
    return " → ".join(parts) if segment.count <= 2 else " · ".join(parts)


def tree_map(
    thread: Thread,
    rows: Iterable[TreeRow],
    bare_runs: Iterable[BareRun],
    previews: Callable[[list[str]], dict[str, str]],
) -> tuple[TreeMap, list[TreeLine]]:
    """The laid-out tree and its outline from the thread's message rows (selectors.tree_rows)
    and runs without messages (selectors.runs_without_messages); previews reads the snippets
    of the messages shown (selectors.message_previews, one query). Bounded output."""
    nodes = [
        TreeNode(id=i, parent_id=p, role=r, depth=d, active=a, status=s)
        for i, p, r, d, a, s in rows
    ]
    # Runs without messages hang off their fork point; their ids are ULIDs, not hex.
    nodes += [
        TreeNode(id=f"run:{i}", parent_id=fork, role="run", depth=0, active=False, status=s,
                 run_id=i)
        for i, fork, s in bare_runs
    ]  # fmt: skip
    laid_out = layout_tree(nodes)
    items = outline(laid_out)
    # Only the ids shown become ULIDs (thousands of conversions cost more than the query).
    shown = {
        item.segment.first.id
        for item in items
        if item.segment is not None and not item.segment.is_stub
    }
    forks = {item.fork.last.id for item in items if item.fork is not None}
    ulids = {hex_id: ulid_from_hex(hex_id) for hex_id in shown | forks}
    snippets = previews([ulids[i] for i in shown])
    url = reverse("conversation", args=[thread.id])
    return laid_out, [_line(item, thread, url, ulids, snippets) for item in items]


def _line(
    item: OutlineItem, thread: Thread, url: str, ulids: dict[str, str], snippets: dict[str, str]
) -> TreeLine:
    line = TreeLine(kind=item.kind, segment=item.segment, count=item.count, open=item.open)
    if item.kind in ("fork", "more"):
        line.at_root = item.fork is None
        fork_id = ulids[item.fork.last.id] if item.fork is not None else "root"
        line.compare_url = reverse("compare", args=[thread.id, fork_id])
    segment = item.segment
    if segment is None or item.kind not in ("row", "cut"):
        return line
    if segment.is_stub:
        line.url = reverse("run_detail", args=[segment.first.run_id])
    else:
        first = ulids[segment.first.id]
        line.url = f"{url}?leaf={first}#m-{first}"
        line.snippet = snippets.get(first, "")
    line.label = _label(segment)
    return line
