"""The tree layout: linear runs collapse, the active path stays in lane 0, big trees stay fast."""

from __future__ import annotations

import random

from transcripts.web.presenters.tree_layout import TreeNode, layout_tree


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
    assert all(s.edge for s in tree.segments if s.parent_row is not None)


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
