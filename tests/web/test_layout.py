"""The tree layout: linear runs collapse, the active path stays in lane 0, and the outline of
any tree (50 branches, 1,000 at one point or spread, thousands deep) stays bounded."""

from __future__ import annotations

import random

from transcripts.web.presenters.tree_layout import (
    MAX_ALTERNATIVES,
    MAX_ROWS,
    OutlineItem,
    TreeNode,
    layout_tree,
    outline,
)


def _chain(prefix: str, parent: str | None, start_depth: int, count: int, *, active: bool,
           status: str = "committed") -> list[TreeNode]:  # fmt: skip
    nodes = []
    for i in range(count):
        node_id = f"{prefix}{i:05d}"
        role = "user" if (start_depth + i) % 2 == 0 else "assistant"
        nodes.append(TreeNode(node_id, parent, role, start_depth + i, active, status))
        parent = node_id
    return nodes


def test_a_linear_thread_is_one_segment() -> None:
    tree = layout_tree(_chain("a", None, 0, 40, active=True))
    assert len(tree.segments) == 1
    assert tree.segments[0].count == 40
    assert tree.leaves == 1 and tree.messages == 40


def test_alternatives_branch_off_to_the_right_and_the_active_path_stays_in_lane_zero() -> None:
    main = _chain("m", None, 0, 10, active=True)
    side = _chain("s", main[3].id, 4, 3, active=False, status="superseded")
    failed = TreeNode("run1", main[5].id, "run", 0, False, "failed", run_id="run1")
    tree = layout_tree([*main, *side, failed])
    lanes = {s.first.id: s.lane for s in tree.segments}
    assert lanes[main[0].id] == 0 and lanes[main[4].id] == 0
    assert lanes[side[0].id] == 1
    active_rows = [s.row for s in tree.segments if s.active]
    assert active_rows == sorted(active_rows)
    stub = next(s for s in tree.segments if s.is_stub)
    assert stub.status == "failed" and stub.lane == 1
    assert tree.leaves == 2
    fork = next(s for s in tree.segments if s.first.id == main[0].id)
    assert [c.first.id for c in fork.alternatives] == [side[0].id]
    assert fork.continuation is not None and fork.continuation.first.id == main[4].id
    assert [s.state for s in tree.segments] == ["active", "alternative", "active", "", "active"]
    assert stub.badge == "failed" and stub.state == ""


def test_several_roots_hang_off_a_virtual_start() -> None:
    first = _chain("a", None, 0, 2, active=False, status="superseded")
    second = _chain("b", None, 0, 2, active=True)
    tree = layout_tree([*first, *second])
    assert tree.virtual_root
    assert [s.first.id for s in tree.segments] == [first[0].id, second[0].id]
    assert tree.segments[1].lane == 0 and tree.segments[0].lane == 1


def test_two_thousand_messages_with_fifty_branches_lay_out_in_few_segments_and_lanes() -> None:
    random.seed(4)
    main = _chain("m", None, 0, 1500, active=True)
    nodes = list(main)
    for b in range(49):
        fork = random.choice(main[:-1])
        nodes += _chain(f"b{b:02d}-", fork.id, fork.depth + 1, 10, active=False,
                        status="superseded")  # fmt: skip
    assert len(nodes) == 1990
    tree = layout_tree(nodes)
    assert tree.leaves == 50
    assert len(tree.segments) < 150
    assert tree.lanes <= 3


# --- the outline ----------------------------------------------------------------------------


def _kinds(items: list[OutlineItem]) -> list[str]:
    return [item.kind for item in items]


def _balanced(items: list[OutlineItem]) -> bool:
    depth = 0
    for kind in _kinds(items):
        depth += {"fork": 1, "branch": 1, "end-fork": -1, "end-branch": -1}.get(kind, 0)
        if depth < 0:
            return False
    return depth == 0


def test_the_outline_lists_the_active_path_with_each_forks_branches_below_its_point() -> None:
    main = _chain("m", None, 0, 10, active=True)
    side = _chain("s", main[3].id, 4, 3, active=False, status="superseded")
    stopped = _chain("x", main[3].id, 4, 1, active=False, status="stopped")
    items = outline(layout_tree([*main, *side, *stopped]))
    assert _kinds(items) == [
        "row", "fork", "branch", "row", "end-branch", "branch", "row", "end-branch", "end-fork",
        "row",
    ]  # fmt: skip
    rows = [item.segment for item in items if item.kind == "row" and item.segment]
    assert [r.first.id for r in rows] == [main[0].id, stopped[0].id, side[0].id, main[4].id]
    assert [(r.state, r.badge) for r in rows] == [
        ("active", ""), ("alternative", "stopped"), ("alternative", ""), ("active", ""),
    ]  # fmt: skip
    fork = items[1]
    assert fork.count == 2 and fork.open and fork.fork is rows[0]


def test_edited_first_messages_are_a_fork_at_the_start() -> None:
    first = _chain("a", None, 0, 2, active=False, status="superseded")
    second = _chain("b", None, 0, 2, active=True)
    items = outline(layout_tree([*first, *second]))
    assert _kinds(items) == ["fork", "branch", "row", "end-branch", "end-fork", "row"]
    assert items[0].fork is None and items[-1].segment is not None
    assert items[-1].segment.first.id == second[0].id


def test_fifty_branches_are_all_listed_folded() -> None:
    random.seed(50)
    main = _chain("m", None, 0, 400, active=True)
    nodes = list(main)
    for b in range(49):
        fork = random.choice(main[:-1])
        nodes += _chain(f"b{b:02d}-", fork.id, fork.depth + 1, 3, active=False,
                        status="superseded")  # fmt: skip
    tree = layout_tree(nodes)
    assert tree.leaves == 50
    items = outline(tree)
    assert _balanced(items)
    assert sum(1 for item in items if item.kind == "branch") == 49
    assert all(not item.open for item in items if item.kind == "fork")
    assert not any(item.kind in ("more", "cut") for item in items)


def test_a_thousand_answers_at_one_point_list_a_few_and_count_the_rest() -> None:
    prompt = TreeNode("p", None, "user", 0, True, "committed")
    status = ["superseded"] * 999 + ["committed"]
    answers = [TreeNode(f"a{i:04d}", "p", "assistant", 1, i == 999, status[i]) for i in range(1000)]
    items = outline(layout_tree([prompt, *answers]))
    assert _balanced(items)
    assert sum(1 for item in items if item.kind == "branch") == MAX_ALTERNATIVES
    [more] = [item for item in items if item.kind == "more"]
    assert more.count == 999 - MAX_ALTERNATIVES and more.fork is not None
    assert len(items) < 5 * MAX_ALTERNATIVES
    assert items[-1].segment is not None and items[-1].segment.first.id == "a0999"


def test_a_thousand_branches_along_a_long_thread_stay_within_the_row_budget() -> None:
    main = _chain("m", None, 0, 2000, active=True)
    nodes = list(main)
    for b in range(1000):
        fork = main[b * 2]
        nodes += _chain(f"b{b:04d}-", fork.id, fork.depth + 1, 2, active=False,
                        status="superseded")  # fmt: skip
    tree = layout_tree(nodes)
    assert tree.leaves == 1001
    items = outline(tree)
    assert _balanced(items)
    rows = [item for item in items if item.kind == "row"]
    cuts = [item for item in items if item.kind == "cut"]
    assert len(rows) == MAX_ROWS
    # Every segment is listed or counted in a cut, once.
    assert len(rows) + sum(item.count for item in cuts) == len(tree.segments)
    assert len(items) < 6 * MAX_ROWS


def test_branches_nested_thousands_deep_lay_out_without_recursion() -> None:
    nodes = [TreeNode("r", None, "user", 0, True, "committed")]
    parent = "r"
    for depth in range(1, 3000):
        # Each level forks: an active child that goes on and an alternative that stops.
        nodes.append(TreeNode(f"alt{depth}", parent, "assistant", depth, False, "superseded"))
        nodes.append(TreeNode(f"n{depth}", parent, "assistant", depth, True, "committed"))
        parent = f"n{depth}"
    items = outline(layout_tree(nodes))
    assert _balanced(items)
    assert sum(1 for item in items if item.kind == "row") == MAX_ROWS
