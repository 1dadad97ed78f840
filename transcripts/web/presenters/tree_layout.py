"""Lay out a message tree as an outline: linear runs of messages collapse into segments, the
active path reads top to bottom, and the alternatives at each fork point nest below it.

Pure: nodes in, segments and outline items out. The output is bounded whatever the tree: at
most `max_alternatives` branches are listed at one fork point (the rest are counted) and at
most `max_rows` segments in all (the rest are counted where they would have started).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

# Runs that produced no messages but belong in the picture, drawn as stubs at their fork point.
STUB_STATUSES = ("failed", "cancelled", "queued", "streaming")
MAX_ALTERNATIVES = 50  # branches listed at one fork point; "n more" for the rest
MAX_ROWS = 300  # segments listed in all; beyond, the rest of a branch is one "n more" line
OPEN_UP_TO = 8  # a tree with at most this many branches shows every fork point open

# The badge of a segment's run beyond active/alternative (committed and superseded runs are
# told apart by the branch state, not the run's status).
STATE_BADGES = {
    "stopped": "stopped",
    "cancelled": "stopped",
    "failed": "failed",
    "streaming": "streaming",
    "queued": "queued",
}


@dataclass(frozen=True)
class TreeNode:
    """One message (or a run without messages, role "run") as the layout sees it."""

    id: str
    parent_id: str | None
    role: str
    depth: int
    active: bool
    status: str
    run_id: str = ""


@dataclass
class Segment:
    """A maximal chain of messages in which every message but the last has one child."""

    first: TreeNode
    last: TreeNode
    count: int
    role_counts: Counter[str]
    lane: int = 0
    row: int = 0
    parent_row: int | None = None
    children: list[Segment] = field(default_factory=list)
    size: int = 1  # segments in the subtree it starts (itself included)

    @property
    def active(self) -> bool:
        """Whether the segment lies on the thread's active path."""
        return self.first.active

    @property
    def status(self) -> str:
        """The status of the run that opened the segment."""
        return self.first.status

    @property
    def is_stub(self) -> bool:
        """Whether this is a run without messages (failed, cancelled or still open)."""
        return self.first.role == "run"

    @property
    def state(self) -> str:
        """Its branch state: "active" or "alternative" (a stub is neither: "")."""
        if self.is_stub:
            return ""
        return "active" if self.active else "alternative"

    @property
    def badge(self) -> str:
        """What became of its run when that is more than active/alternative, else ""."""
        return STATE_BADGES.get(self.status, "")

    @property
    def roles(self) -> list[tuple[str, int]]:
        """(role, count) for the segment's messages, in a fixed order."""
        order = ("system", "user", "assistant", "tool")
        known = [(r, self.role_counts[r]) for r in order if self.role_counts[r]]
        other = [(r, n) for r, n in sorted(self.role_counts.items()) if r not in order]
        return known + other

    @property
    def role_spans(self) -> list[tuple[str, int, int]]:
        """(role, start, count) of each role in the segment's role bar, laid end to end."""
        spans = []
        start = 0
        for role, count in self.roles:
            spans.append((role, start, count))
            start += count
        return spans

    @property
    def continuation(self) -> Segment | None:
        """The child that carries the branch on in the same lane (active, else the latest)."""
        return next((c for c in self.children if c.lane == self.lane), None)

    @property
    def alternatives(self) -> list[Segment]:
        """The other children: the branches that fork off at this segment's end."""
        return [c for c in self.children if c.lane != self.lane]


@dataclass
class TreeMap:
    """The laid-out tree: segments in display order, and its size."""

    segments: list[Segment]
    lanes: int
    messages: int
    leaves: int
    virtual_root: bool

    @property
    def roots(self) -> list[Segment]:
        """The segments that start at a root message, the primary one first."""
        tops = [s for s in self.segments if s.parent_row is None]
        return sorted(tops, key=lambda s: s.lane)


def _primary_first(children: Sequence[TreeNode]) -> list[TreeNode]:
    """Children ordered primary first: active, else the latest committed, else the latest."""

    def key(node: TreeNode) -> tuple[bool, bool, bool, str]:
        return (node.active, node.role != "run", node.status == "committed", node.id)

    return sorted(children, key=key, reverse=True)


def _chain(start: TreeNode, children: dict[str | None, list[TreeNode]]) -> Segment:
    counts: Counter[str] = Counter()
    node = start
    count = 0
    while True:
        count += 1
        if node.role != "run":
            counts[node.role] += 1
        below = children.get(node.id, [])
        if len(below) != 1 or below[0].role == "run" or node.role == "run":
            return Segment(first=start, last=node, count=count, role_counts=counts)
        node = below[0]


def layout_tree(nodes: Iterable[TreeNode]) -> TreeMap:
    """Collapse linear runs into segments and give each a row, a lane and its children."""
    children: dict[str | None, list[TreeNode]] = {}
    messages = 0
    for node in nodes:
        children.setdefault(node.parent_id, []).append(node)
        messages += node.role != "run"
    roots = children.get(None, [])
    virtual_root = len(roots) > 1
    ordered: list[Segment] = []
    # (start node, lane, parent segment): side branches are pushed last so they pop first and
    # sit right under their fork point; the primary continuation follows in the parent's lane.
    stack: list[tuple[TreeNode, int, Segment | None]] = []

    def push_children(kids: Sequence[TreeNode], lane: int, parent: Segment | None) -> None:
        primary, *others = _primary_first(kids)
        stack.append((primary, lane, parent))
        for other in reversed(others):
            stack.append((other, lane + 1, parent))

    if roots:
        push_children(roots, 0, None)
    while stack:
        start, lane, parent = stack.pop()
        segment = _chain(start, children)
        segment.lane = lane
        segment.row = len(ordered) + (1 if virtual_root else 0)
        if parent is not None:
            segment.parent_row = parent.row
            parent.children.append(segment)
        ordered.append(segment)
        below = children.get(segment.last.id, [])
        if below and segment.last.role != "run":
            push_children(below, lane, segment)
    # Children come after their parent in display order: sum subtree sizes bottom up.
    for segment in reversed(ordered):
        segment.size = 1 + sum(c.size for c in segment.children)
    lanes = max((s.lane for s in ordered), default=0) + 1
    leaves = sum(1 for s in ordered if not s.is_stub and all(c.is_stub for c in s.children))
    return TreeMap(
        segments=ordered, lanes=lanes, messages=messages, leaves=leaves, virtual_root=virtual_root
    )


# --- the outline ------------------------------------------------------------------------


@dataclass
class OutlineItem:
    """One step of the outline in document order.

    kind is "row" (a segment), "fork" / "end-fork" around the branches that fork at a point,
    "branch" / "end-branch" around each of them, "more" (count branches at that fork point
    not listed) or "cut" (count segments from `segment` on not listed).
    """

    kind: str
    segment: Segment | None = None
    count: int = 0
    open: bool = False
    fork: Segment | None = None  # fork and more: the segment whose end is the fork point


def outline(
    tree: TreeMap, *, max_alternatives: int = MAX_ALTERNATIVES, max_rows: int = MAX_ROWS
) -> list[OutlineItem]:
    """The tree as nested lists: each branch's segments in order, its forks nested below.

    Without recursion (a thread may nest thousands of branches deep): a stack of what is
    still to write, the next step on top.
    """
    items: list[OutlineItem] = []
    roots = tree.roots
    if not roots:
        return items
    open_forks = tree.leaves <= OPEN_UP_TO
    rows = 0
    todo: list[OutlineItem] = []

    def push_fork(fork: Segment | None, branches: list[Segment]) -> None:
        # Pushed in reverse: the fork opens, each branch follows, and then it closes.
        todo.append(OutlineItem("end-fork"))
        if len(branches) > max_alternatives:
            todo.append(OutlineItem("more", count=len(branches) - max_alternatives, fork=fork))
        for branch in reversed(branches[:max_alternatives]):
            todo.append(OutlineItem("end-branch"))
            todo.append(OutlineItem("line", segment=branch))
            todo.append(OutlineItem("branch", segment=branch))
        todo.append(OutlineItem("fork", count=len(branches), open=open_forks, fork=fork))

    todo.append(OutlineItem("line", segment=roots[0]))
    if len(roots) > 1:
        push_fork(None, roots[1:])
    while todo:
        step = todo.pop()
        if step.kind != "line":
            items.append(step)
            continue
        segment = step.segment
        if segment is None:
            continue
        if rows >= max_rows:
            items.append(OutlineItem("cut", segment=segment, count=segment.size))
            continue
        rows += 1
        items.append(OutlineItem("row", segment=segment))
        if segment.continuation is not None:
            todo.append(OutlineItem("line", segment=segment.continuation))
        if segment.alternatives:
            push_fork(segment, segment.alternatives)
    return items
