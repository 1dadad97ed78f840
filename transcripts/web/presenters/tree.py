"""The tree map of a thread: every message and every run without messages, laid out as rows."""

from __future__ import annotations

from dataclasses import dataclass

from django.urls import reverse

from transcripts import selectors
from transcripts.models import Thread
from transcripts.web.presenters.tree_layout import Segment, TreeMap, TreeNode, layout_tree


@dataclass
class TreeRow:
    """One segment of the tree map with its link and the start of its first message."""

    segment: Segment
    url: str
    snippet: str


def tree_map(thread: Thread) -> tuple[TreeMap, list[TreeRow]]:
    """The laid-out tree and a row per segment (a constant number of queries)."""
    nodes = [
        TreeNode(id=i, parent_id=p, role=r, depth=d, active=a, status=s)
        for i, p, r, d, a, s in selectors.tree_rows(thread)
    ]
    # Runs without messages hang off their fork point; their ids are ULIDs, not hex.
    nodes += [
        TreeNode(id=f"run:{i}", parent_id=fork, role="run", depth=0, active=False, status=s,
                 run_id=i)
        for i, fork, s in selectors.runs_without_messages(thread)
    ]  # fmt: skip
    laid_out = layout_tree(nodes)
    first_ids = {
        s.first.id: selectors.ulid_from_hex(s.first.id) for s in laid_out.segments if not s.is_stub
    }
    snippets = selectors.message_previews(list(first_ids.values()))
    url = reverse("conversation", args=[thread.id])
    rows = []
    for segment in laid_out.segments:
        if segment.is_stub:
            rows.append(TreeRow(segment, reverse("run_detail", args=[segment.first.run_id]), ""))
            continue
        first = first_ids[segment.first.id]
        rows.append(TreeRow(segment, f"{url}?leaf={first}#m-{first}", snippets.get(first, "")))
    return laid_out, rows
