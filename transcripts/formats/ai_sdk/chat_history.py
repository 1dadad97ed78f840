"""A chat client's history against the stored tree: which stored message the AI SDK's
UIMessages end at, so the new message goes there.

The stored thread is the truth. A UIMessage is matched by any id the client may know a stored
message by: ours (from the `start` chunk or `GET …/messages`), the id the client gave it
(kept as `sourceMessageId`), or an imported UIMessage's id. One assistant UIMessage spans the
steps of an answer (assistant and tool messages), as the ai-sdk export joins them. A history
that is no path of the tree is refused (409), naming where it differs.

Pure: `selectors.chat.chat_tree` reads the stored tree, `api/chat.py` uses both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from transcripts.errors import Conflict, InvalidInput

_ROLES = ("user", "assistant", "system")
Children = dict[str | None, list["Stored"]]


@dataclass(frozen=True)
class UiMessage:
    """What the chat needs of a client's UIMessage."""

    id: str
    role: str
    text: str
    index: int


@dataclass(frozen=True)
class Stored:
    """A stored message as the history is matched against it."""

    id: str
    parent_id: str | None
    role: str
    run_id: str
    active: bool
    aliases: frozenset[str]
    chain_head: bool


# --- the client's messages ---------------------------------------------------------------


def ui_message(raw: object, path: str, index: int) -> UiMessage:
    """The UIMessage at path (messages[index]), or InvalidInput saying what is wrong."""
    if not isinstance(raw, dict):
        raise InvalidInput(f"{path}: a UIMessage must be an object", field=path)
    message_id, role, parts = raw.get("id"), raw.get("role"), raw.get("parts")
    if not isinstance(message_id, str) or not message_id:
        raise InvalidInput(f"{path}.id: a UIMessage needs a non-empty string id", field=path)
    if not isinstance(role, str) or role not in _ROLES:
        raise InvalidInput(f"{path}.role: expected user, assistant or system", field=path)
    if not isinstance(parts, list):
        raise InvalidInput(f"{path}.parts: expected an array of parts", field=path)
    texts = [p["text"] for p in parts if isinstance(p, dict) and p.get("type") == "text"]
    text = "".join(t for t in texts if isinstance(t, str))
    return UiMessage(id=message_id, role=role, text=text, index=index)


def new_message(message: UiMessage, path: str, raw: Mapping[str, object]) -> UiMessage:
    """The user's new message, refused (422) unless it is one, with text and nothing else."""
    if message.role != "user":
        raise InvalidInput(
            f"{path}: the last message must be the user's new message, not an {message.role}"
            " message (this backend answers with its own generator, not client-side tools)",
            field=path,
        )
    parts = raw.get("parts")
    kinds = (
        {p.get("type") for p in parts if isinstance(p, dict)} if isinstance(parts, list) else set()
    )
    if kinds - {"text", "step-start"}:
        extra = ", ".join(sorted(str(k) for k in kinds - {"text", "step-start"}))
        raise InvalidInput(f"{path}.parts: only text parts can be sent, not {extra}", field=path)
    if not message.text.strip():
        raise InvalidInput(f"{path}: the message is empty", field=path)
    return message


# --- the stored tree -----------------------------------------------------------------------


# One stored message as `selectors.chat.chat_tree` reads it: id, parent id, role, run id,
# active, and the ids its source and an imported UIMessage gave it (None when absent).
StoredRow = tuple[str, str | None, str, str, bool, object, object]


def children_of(rows: Iterable[StoredRow]) -> Children:
    """A thread's messages by parent, each with the ids a client may know it by: ours, the
    one its source gave (sourceMessageId) and an imported UIMessage's."""
    children: Children = {}
    for message_id, parent_id, role, run_id, active, source_id, ui_id in rows:
        aliases = frozenset(a for a in (message_id, source_id, ui_id) if isinstance(a, str))
        stored = Stored(
            message_id, parent_id, role, run_id, active, aliases, isinstance(ui_id, str)
        )
        children.setdefault(parent_id, []).append(stored)
    return children


def _preferred(candidates: list[Stored], run_id: str = "") -> Stored:
    """The one to follow: of the same run, then on the active path, then the newest."""
    return max(candidates, key=lambda m: (m.run_id == run_id, m.active, m.id))


def _chain_end(children: Children, head: Stored) -> Stored:
    """The last stored message of the UIMessage that head opens: one assistant UIMessage
    spans the steps of an answer (assistant and tool messages, as the ai-sdk export joins)."""
    node = head
    while True:
        steps = [
            c
            for c in children.get(node.id, [])
            if c.role == "tool" or (c.role == "assistant" and not c.chain_head)
        ]
        if not steps:
            return node
        node = _preferred(steps, head.run_id)


def history_end(children: Children, history: list[UiMessage], chat_id: str) -> Stored | None:
    """The stored message the client's history ends at (None: an empty history), or
    Conflict where the history is not a path of the stored tree.

    Every path the history may be is followed (an edit keeps the client's id for the edited
    message, so two stored messages may answer to it); of those it fits to the end, the one
    on the active path wins.
    """
    frontier: list[Stored | None] = [None]
    for message in history:
        matches = [
            _chain_end(children, m) if m.role in ("assistant", "tool") else m
            for node in frontier
            for m in children.get(node.id if node else None, [])
            if message.id in m.aliases
            and (m.role == message.role or (message.role == "assistant" and m.role == "tool"))
        ]
        if not matches:
            raise Conflict(
                f"the chat's history differs from the stored thread at messages[{message.index}]"
                f" (id {message.id!r}): load the stored messages"
                f" (GET /api/v1/chat/{chat_id}/messages) and send again",
                index=message.index,
                messageId=message.id,
            )
        frontier = list(matches)
    ends = [node for node in frontier if node is not None]
    return _preferred(ends) if ends else None


def find(children: Children, alias: str) -> Stored | None:
    """The stored message a client knows by alias (on the active path when several are)."""
    found = [m for group in children.values() for m in group if alias in m.aliases]
    return _preferred(found) if found else None
