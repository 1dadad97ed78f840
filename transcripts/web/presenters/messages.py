"""Message cards: parts rendered (presenters/parts.py), tool results joined to their calls,
usage and metadata.

The conversation, the live block of a run and the compare columns all show messages this way:
a tool call and all its results in one card (a `tool` message left with nothing of its own
folds away), `data-*`/`system.*` annotations as key/value lists, and each run of hidden
messages as one "n hidden messages" line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.urls import reverse

from transcripts.jsonvalue import input_tokens, output_tokens
from transcripts.models import Message, Run, Score, Thread
from transcripts.selectors.forks import MessageForks
from transcripts.selectors.scores import FeedbackSummary
from transcripts.web import rendering
from transcripts.web.presenters.parts import DataView, annotation_view, part_view, text_of
from transcripts.web.presenters.parts import PartView as PartView  # compare imports it here
from transcripts.web.presenters.score_panel import ScorePanel
from transcripts.web.presenters.scores import FeedbackView, ScoreView, feedback_view, score_view


@dataclass
class Switcher:
    """The previous / i of n / next control of a message that has siblings.

    Its message is *active* (on the thread's active path) or an *alternative*; the branch
    shown leaves the active path at the alternative whose sibling is active, so that one
    alone offers Restore (one button per branch shown, whatever its run's status).
    """

    index: int
    total: int
    previous_id: str | None
    next_id: str | None
    active_id: str | None
    active_index: int | None
    compare_url: str = ""
    active: bool = False
    restorable: bool = False
    restore_label: str = ""

    @property
    def state(self) -> str:
        """ "active" or "alternative": the branch state, not the run's status."""
        return "active" if self.active else "alternative"


@dataclass
class MessageItem:
    """A message with everything its card shows."""

    message: Message
    parts: list[PartView]
    agent: str = ""
    model: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    finish_reason: str = ""
    hidden: bool = False
    flagged: bool = False
    redacted: bool = False
    errors: list[str] = field(default_factory=list)
    annotations: list[DataView] = field(default_factory=list)
    copy_text: str = ""  # the message's text parts (also what compare diffs)
    switcher: Switcher | None = None
    # Every part is a tool result shown with its call, and nothing else needs the card.
    folded: bool = False
    # The first of a run of hidden messages opens its "n hidden messages" line (n, and what
    # they are); the last closes it.
    hidden_group: int = 0
    hidden_group_summary: str = ""
    hidden_group_end: bool = False
    forks: MessageForks | None = None  # the threads started from this message
    # An answer's feedback part and scores (the conversation only; presenters/scores.py).
    feedback: FeedbackView | None = None
    scores: list[ScoreView] = field(default_factory=list)
    score_panel: ScorePanel | None = None  # an editor's own scores (presenters/score_panel.py)


def short(value: Any) -> str:
    """An error or annotation in one line: its message (or type, kind, name), else its JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("message", "type", "kind", "name"):
            if isinstance(value.get(key), str):
                return str(value[key])
    return rendering.json_preview(value, 120)


def restore_label(role: str) -> str:
    """What Restore does, said for the message it sits on."""
    return "Make this answer active" if role == "assistant" else "Make this message active"


def _switcher(message: Message, group: list[tuple[str, bool]] | None) -> Switcher | None:
    if not group:
        return None
    ids = [i for i, _ in group]
    index = ids.index(message.id)
    active_id = next((i for i, active in group if active), None)
    return Switcher(
        index=index + 1,
        total=len(ids),
        previous_id=ids[index - 1] if index > 0 else None,
        next_id=ids[index + 1] if index + 1 < len(ids) else None,
        active_id=active_id,
        active_index=next((n + 1 for n, (_, active) in enumerate(group) if active), None),
        # The alternatives fork at the parent ("root" when they are first messages).
        compare_url=reverse("compare", args=[message.thread_id, message.parent_id or "root"]),
        active=message.active,
        # Deeper alternatives lie on the same branch below this one: their Restore would
        # do the same, so only the point where the branch leaves the active path offers it.
        restorable=not message.active and active_id is not None,
        restore_label=restore_label(message.role),
    )


def message_items(
    thread: Thread,
    messages: Sequence[Message],
    *,
    siblings: Mapping[str, list[tuple[str, bool]]] | None = None,
) -> list[MessageItem]:
    """Cards for messages in order, tool results joined to their calls.

    siblings (from selectors.siblings_of) gives messages with alternatives their switcher.
    Each message's `run` should be loaded already: its model is shown when the message has none.
    """
    agents = thread.agents if isinstance(thread.agents, dict) else {}
    items: list[MessageItem] = []
    calls: dict[str, PartView] = {}
    for message in messages:
        meta = message.metadata if isinstance(message.metadata, dict) else {}
        parts = [part_view(p) for p in (message.parts if isinstance(message.parts, list) else [])]
        for part in parts:
            if part.type == "tool-call" and part.tool_call_id:
                calls[part.tool_call_id] = part
            elif part.type == "tool-result" and part.tool_call_id in calls:
                # Every result of a call in view joins it (ChatGPT's code runs answer twice:
                # the printed output, then the image).
                call = calls[part.tool_call_id]
                call.results.append(part)
                part.joined = True
                part.tool_name = part.tool_name or call.tool_name
        agent_id = text_of(meta.get("agentId"))
        agent = agents.get(agent_id) if agent_id else None
        usage = meta.get("usage")
        errors = meta.get("errors")
        annotations = meta.get("annotations")
        items.append(
            MessageItem(
                message=message,
                parts=parts,
                agent=(text_of(agent.get("agent_name")) if isinstance(agent, dict) else "")
                or agent_id,
                model=text_of(meta.get("model")) or message.run.model,
                input_tokens=input_tokens(usage),
                output_tokens=output_tokens(usage),
                finish_reason=text_of(meta.get("finishReason")),
                hidden=meta.get("hidden") is True,
                flagged=bool(meta.get("flagged") or message.flagged_at),
                redacted=bool(meta.get("redacted") or message.redacted_at),
                errors=[short(e) for e in errors] if isinstance(errors, list) else [],
                annotations=[annotation_view(a) for a in annotations]
                if isinstance(annotations, list)
                else [],
                copy_text="\n\n".join(p.text for p in parts if p.type == "text"),
                switcher=_switcher(message, (siblings or {}).get(message.id)),
            )
        )
        items[-1].folded = _folds(items[-1])
    _group_hidden(items)
    return items


def _folds(item: MessageItem) -> bool:
    """Whether the card has nothing of its own: only results shown with their calls."""
    return (
        bool(item.parts)
        and all(part.joined for part in item.parts)
        and not (item.errors or item.annotations or item.flagged or item.switcher)
    )


def _describe(item: MessageItem) -> str:
    """What a hidden message is, in a word or two: its role, or the tools it calls."""
    calls = [part.tool_name for part in item.parts if part.type == "tool-call"]
    if calls:
        return f"{', '.join(calls)} call"
    if item.parts and all(part.type == "reasoning" for part in item.parts):
        return "reasoning"
    return item.message.role


def _group_hidden(items: list[MessageItem]) -> None:
    """Mark runs of consecutive hidden messages, folded cards inside a run not breaking it."""
    index = 0
    while index < len(items):
        if not items[index].hidden or items[index].folded:
            index += 1
            continue
        last = index
        scan = index + 1
        while scan < len(items) and (items[scan].hidden or items[scan].folded):
            if not items[scan].folded:
                last = scan
            scan += 1
        members = [it for it in items[index : last + 1] if not it.folded]
        kinds = list(dict.fromkeys(_describe(it) for it in members))
        items[index].hidden_group = len(members)
        items[index].hidden_group_summary = " · ".join(kinds[:4]) + (" …" if len(kinds) > 4 else "")
        items[last].hidden_group_end = True
        index = last + 1


def projected_messages(
    thread: Thread, run: Run, projected: Sequence[Mapping[str, Any]]
) -> list[Message]:
    """Unsaved rows of a run's projected messages, shown like committed ones."""
    return [
        Message.from_projection(message, thread=thread, run=run, depth=position, position=position)
        for position, message in enumerate(projected)
    ]


def judge_items(
    items: Sequence[MessageItem],
    summaries: Mapping[str, FeedbackSummary],
    scores: Mapping[str, Sequence[Score]],
) -> None:
    """Give the answers shown their feedback part, and every message shown its scores."""
    for item in items:
        message = item.message
        item.scores = [score_view(s) for s in scores.get(message.id, ())]
        if message.role == "assistant":
            item.feedback = feedback_view(message.thread_id, message.id, summaries.get(message.id))
