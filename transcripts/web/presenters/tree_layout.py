"""Lay out a message tree as a git-style graph: linear runs of messages collapse into segments.

Pure: nodes in, rows and SVG paths out. The active path stays in lane 0 and reads top to
bottom; alternatives branch off to the right just below their fork point.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

ROW_HEIGHT = 40
LANE_WIDTH = 18
PAD = 12
RADIUS = 6

# Runs that produced no messages but belong in the picture, drawn as stubs at their fork point.
STUB_STATUSES = ("failed", "cancelled", "queued", "streaming")


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
    x: int = 0
    y: int = 0
    edge: str = ""

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


@dataclass
class TreeMap:
    """The laid-out tree: segments in display order and the graph's size in pixels."""

    segments: list[Segment]
    lanes: int
    width: int
    height: int
    messages: int
    leaves: int
    virtual_root: bool


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
    """Collapse linear runs into segments and give each a row, a lane and an edge path."""
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
        segment.x = PAD + lane * LANE_WIDTH
        segment.y = segment.row * ROW_HEIGHT + ROW_HEIGHT // 2
        if parent is not None:
            segment.parent_row = parent.row
            parent.children.append(segment)
            segment.edge = _edge(parent.x, parent.y, segment.x, segment.y)
        elif virtual_root:
            segment.edge = _edge(PAD, ROW_HEIGHT // 2, segment.x, segment.y)
        ordered.append(segment)
        below = children.get(segment.last.id, [])
        if below and segment.last.role != "run":
            push_children(below, lane, segment)
    lanes = max((s.lane for s in ordered), default=0) + 1
    rows = len(ordered) + (1 if virtual_root else 0)
    leaves = sum(1 for s in ordered if not s.is_stub and all(c.is_stub for c in s.children))
    return TreeMap(
        segments=ordered,
        lanes=lanes,
        width=PAD * 2 + (lanes - 1) * LANE_WIDTH,
        height=max(rows, 1) * ROW_HEIGHT,
        messages=messages,
        leaves=leaves,
        virtual_root=virtual_root,
    )


def _edge(x1: int, y1: int, x2: int, y2: int) -> str:
    """Down the parent's lane, then a rounded turn into the child's lane."""
    if x1 == x2:
        return f"M{x1} {y1}V{y2}"
    bend = min(8, abs(y2 - y1) // 2)
    return f"M{x1} {y1}V{y2 - bend}Q{x1} {y2} {x1 + bend} {y2}H{x2}"
