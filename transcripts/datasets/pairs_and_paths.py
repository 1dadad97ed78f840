"""What a dataset row holds, before any format: preference pairs at fork points and chat paths.

A fork point is a message with at least two assistant answers from committed or superseded
runs. An answer is the run's message below the fork point and what the same run says after it
before the next user message (tool calls, their results, the final text). The chosen answer
is the one with the most "preferred" marks (ties: the active one, then the latest mark); with
no marks, the one the thread keeps (active; off the active path, the committed one, else the
newest). Every other answer is rejected, one pair each.

With from=scores, a pair is two answers of a fork point whose scores of the name asked for
differ: the chosen one has the higher. An answer's score is the average of those scores on its
messages and on its run; an answer without one is in no pair. A chat path (sft) may be kept
only when its last answer passes: minScore, the average of that message's scores of the name
at least the number; feedback=up, more 👍 than 👎 on that message.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import combinations

from transcripts.datasets.query import SCORES, DatasetQuery
from transcripts.models import RunStatus
from transcripts.selectors.datasets import Node, ThreadTree

RATING, KEPT, SCORE = "rating", "kept", "score"
ACTIVE, OTHER = "active", "other"
REDACTED = "redacted"
BELOW_MIN_SCORE = "last answer below minScore"
NOT_LIKED = "last answer without more thumbs up than down"


@dataclass(frozen=True)
class PreferencePair:
    """The conversation up to a fork point, the chosen answer and one rejected answer."""

    tree: ThreadTree
    fork: Node
    prompt: list[Node]
    chosen: list[Node]
    rejected: list[Node]
    chosen_by: str


@dataclass(frozen=True)
class ChatPath:
    """A path from the root down to its last assistant message."""

    tree: ThreadTree
    messages: list[Node]
    branch: str


@dataclass(frozen=True)
class Skipped:
    """A row left out, and why (the counts tell the user)."""

    reason: str
    thread_id: str


def answer_of(tree: ThreadTree, first: Node) -> list[Node]:
    """first and what its run says after it, up to the next user message."""
    answer = [first]
    current = first
    while True:
        following = [
            child
            for child in tree.children.get(current.id, [])
            if child.run_id == first.run_id and child.role != "user"
        ]
        if not following:
            return answer
        current = following[0]
        answer.append(current)


def _candidates(tree: ThreadTree, fork: Node) -> list[Node]:
    return [
        child
        for child in tree.children.get(fork.id, [])
        if child.role == "assistant" and child.run_id in tree.runs
    ]


def _chosen(tree: ThreadTree, candidates: list[Node]) -> tuple[Node, str]:
    """The chosen answer's first message, and what chose it."""
    rated = [c for c in candidates if tree.runs[c.run_id].preferred > 0]
    if rated:

        def weight(node: Node) -> tuple[int, bool, str]:
            facts = tree.runs[node.run_id]
            at = facts.last_preferred_at.isoformat() if facts.last_preferred_at else ""
            return facts.preferred, node.active, at

        return max(rated, key=weight), RATING
    active = [c for c in candidates if c.active]
    committed = [c for c in candidates if tree.runs[c.run_id].status == RunStatus.COMMITTED]
    return (active or committed or candidates)[-1], KEPT


def _fork_points(tree: ThreadTree) -> Iterator[tuple[Node, list[Node]]]:
    """Each fork point with its answers' first messages, shallowest first."""
    forks = [
        tree.nodes[parent_id]
        for parent_id, children in tree.children.items()
        if parent_id is not None and len(children) >= 2
    ]
    for fork in sorted(forks, key=lambda node: (node.depth, node.id)):
        candidates = _candidates(tree, fork)
        if len(candidates) >= 2:
            yield fork, candidates


def _redaction_checked(
    tree: ThreadTree, fork: Node, chosen: list[Node], rejected: list[Node], chosen_by: str
) -> PreferencePair | Skipped:
    """The pair, or Skipped when a message of it is redacted."""
    prompt = tree.path_to(fork)
    if any(node.redacted for node in (*prompt, *chosen, *rejected)):
        return Skipped(REDACTED, tree.thread.id)
    return PreferencePair(tree, fork, prompt, chosen, rejected, chosen_by)


def _answer_score(tree: ThreadTree, answer: list[Node]) -> float | None:
    """The average of the scores read on the answer's messages and its run, or None."""
    values = [v for node in answer for v in tree.scores.get(node.id, [])]
    values += tree.scores.get(answer[0].run_id, [])
    return sum(values) / len(values) if values else None


def score_pairs(tree: ThreadTree) -> Iterator[PreferencePair | Skipped]:
    """Every pair of scored answers at the thread's fork points whose scores differ, the
    higher chosen (or why one is left out)."""
    for fork, candidates in _fork_points(tree):
        answers = [answer_of(tree, c) for c in candidates]
        scored = [(a, score) for a in answers if (score := _answer_score(tree, a)) is not None]
        for (one, first), (other, second) in combinations(scored, 2):
            if first == second:
                continue
            chosen, rejected = (one, other) if first > second else (other, one)
            yield _redaction_checked(tree, fork, chosen, rejected, SCORE)


def preference_pairs(tree: ThreadTree, query: DatasetQuery) -> Iterator[PreferencePair | Skipped]:
    """Every pair of the thread's fork points (or why one is left out)."""
    if query.pairs_from == SCORES:
        yield from score_pairs(tree)
        return
    for fork, candidates in _fork_points(tree):
        first, chosen_by = _chosen(tree, candidates)
        if query.rated_only and chosen_by != RATING:
            continue
        prompt = tree.path_to(fork)
        chosen = answer_of(tree, first)
        rejected_answers = [answer_of(tree, c) for c in candidates if c is not first]
        if any(node.redacted for node in (*prompt, *chosen)):
            yield from (Skipped(REDACTED, tree.thread.id) for _ in rejected_answers)
            continue
        for rejected in rejected_answers:
            if any(node.redacted for node in rejected):
                yield Skipped(REDACTED, tree.thread.id)
                continue
            yield PreferencePair(tree, fork, prompt, chosen, rejected, chosen_by)


def _up_to_last_answer(path: list[Node]) -> list[Node]:
    """path cut after its last assistant message (empty when it has none)."""
    for index in range(len(path) - 1, -1, -1):
        if path[index].role == "assistant":
            return path[: index + 1]
    return []


def chat_paths(tree: ThreadTree, query: DatasetQuery) -> Iterator[ChatPath | Skipped]:
    """The thread's active path, or every path from the root to a leaf (branches=all)."""
    if query.branches == "all":
        paths = [(tree.path_to(leaf), ACTIVE if leaf.active else OTHER) for leaf in tree.leaves()]
    else:
        paths = [(tree.active_path(), ACTIVE)]
    for full_path, branch in paths:
        path = _up_to_last_answer(full_path)
        if not path:
            continue
        if query.rated_only and not any(_rated(tree, node) for node in path):
            continue
        if any(node.redacted for node in path):
            yield Skipped(REDACTED, tree.thread.id)
            continue
        failed = _last_answer_fails(tree, path[-1], query)
        yield Skipped(failed, tree.thread.id) if failed else ChatPath(tree, path, branch)


def _last_answer_fails(tree: ThreadTree, answer: Node, query: DatasetQuery) -> str:
    """Why the path ending at answer does not pass the query's minScore and feedback ("" when
    it passes)."""
    if query.min_score is not None:
        values = tree.scores.get(answer.id, [])
        if not values or sum(values) / len(values) < query.min_score[1]:
            return BELOW_MIN_SCORE
    if query.liked:
        up, down = tree.feedback.get(answer.id, (0, 0))
        if up <= down:
            return NOT_LIKED
    return ""


def _rated(tree: ThreadTree, node: Node) -> bool:
    facts = tree.runs.get(node.run_id)
    return facts is not None and facts.preferred > 0
