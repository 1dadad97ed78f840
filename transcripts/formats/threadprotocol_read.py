"""Reading one validated ThreadProtocol thread into a TreeThread, keeping every field.

What canonical messages hold (texts, files, reasoning, tool calls and results, agents,
finish reasons, usage) goes into parts and message metadata as for any format; everything
else is kept in records, so the exporter writes the same document back:

- each message's `metadata.extra.threadprotocol.actions` lists its actions in order, each
  with its type, every field that is not content (`action_id`, `timestamp`, `metadata`,
  `provider_name`, `status`, unknown fields …), which optional fields moved into parts, and
  the skeleton of content arrays and attachments (`threadprotocol_parts`);
- `system.*` actions become the message's `metadata.annotations` (`{"action_type", "data"}`),
  as the projector writes `data-*` stream parts; those before the first message belong to it;
- the thread's `metadata.extra.threadprotocol` keeps the thread fields (`thread_id`,
  `parent_thread_id`, timestamps as written, `version`, unknown fields), a title longer than
  the database keeps, the first sequence number when it is not 1, the document's own
  `metadata.extra` when it had one, and the actions of a thread without messages.

Message boundaries: actions whose ids step on from the first one's (as 128-bit numbers: M,
M + 2^64, M + 2·2^64 …) form one message, which is how the exporter writes a message;
actions without ids group as one message per user action, per run of one agent's actions,
per run of tool returns; any other action starts a message. A UUID action id gives its
message the ULID with the same bits, so a thread exported here comes back with its ids.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from transcripts.ids import uuid_to_ulid
from transcripts.jsonvalue import (
    JsonObject,
    JsonValue,
    as_str,
    list_of,
    object_of,
    objects_in,
    text_of,
)
from transcripts.times import parse_iso_utc, to_iso

from .document import TreeThread, linear_thread, make_message, tool_call_part, tool_result_part
from .threadprotocol_parts import RECORD, json_copy, read_content, read_items
from .validation import is_int

THREAD_FIELDS_ELSEWHERE = ("actions", "agents", "metadata", "title")
# What a thread's title keeps (Thread.title, `ledger.threads.MAX_TITLE`): a longer one is
# recorded whole; a shorter one is not copied, so a redaction that retitles leaves no copy.
TITLE_KEPT = 500
# A message's actions have ids M, M + STEP, M + 2·STEP …: the 16 bits after a ULID's time
# count them, which no monotonic ULID generator (they count up the lowest bits) runs into.
ACTION_STEP = 1 << 64


def uuid_number(value: JsonValue) -> int | None:
    """A UUID string in its canonical spelling as a 128-bit number, else None."""
    if not isinstance(value, str) or len(value) != 36:
        return None
    try:
        parsed = uuid.UUID(value)
    except ValueError:
        return None
    return parsed.int if str(parsed) == value else None


@dataclass
class _Open:
    """The message being filled and whether the next action may join it."""

    message: JsonObject
    role: str
    agent: str | None
    start: int | None
    with_id: bool
    count: int = 1
    open: bool = True


@dataclass
class _Reader:
    """Actions in, messages out: the message being filled and what waits for the first."""

    scope: str
    messages: list[JsonObject] = field(default_factory=list)
    leading: list[tuple[JsonObject, JsonObject]] = field(default_factory=list)
    current: _Open | None = None
    keys: set[str] = field(default_factory=set)

    def joins(self, action: JsonObject, role: str | None, agent: str | None) -> bool:
        """Whether action continues the current message (role None: a system annotation)."""
        current = self.current
        if current is None or not current.open:
            return False
        number = uuid_number(action.get("action_id"))
        if current.start is not None and number is not None:
            return number == (current.start + current.count * ACTION_STEP) % (1 << 128)
        if current.with_id or action.get("action_id") is not None:
            return False
        if role is None:
            return True
        return role == current.role and agent == current.agent and role != "user"

    def add(self, action: JsonObject) -> None:
        """Read one action into the current message, a new one, or the leading annotations."""
        role, agent, parts, record, annotation = read_action(action)
        if annotation is not None:
            if self.current is None:
                self.leading.append((record, annotation))
                return
            if not self.joins(action, None, None):
                self.current.open = False
            self.current.count += 1
            _attach(self.current.message, record, parts, annotation)
            return
        assert role is not None
        if not self.joins(action, role, agent):
            self._start(action, role, agent)
        else:
            assert self.current is not None
            self.current.count += 1
        assert self.current is not None
        _attach(self.current.message, record, parts, None)
        if action["action_type"] == "assistant_message":
            _describe(object_of(self.current.message["metadata"]), action)

    def _start(self, action: JsonObject, role: str, agent: str | None) -> None:
        action_id = action.get("action_id")
        key = uuid_to_ulid(action_id)
        if key is None or key in self.keys:
            key = f"{self.scope}m{len(self.messages)}"
        self.keys.add(key)
        moment = parse_iso_utc(action["timestamp"])
        metadata: JsonObject = {"agentId": agent} if agent else {}
        metadata["extra"] = {RECORD: {"actions": []}}
        message = make_message(key, None, role, [], to_iso(moment), metadata)
        for record, annotation in self.leading:
            _attach(message, record, [], annotation)
        self.leading.clear()
        self.messages.append(message)
        self.current = _Open(
            message, role, agent, uuid_number(action_id), with_id=action_id is not None
        )


def _attach(
    message: JsonObject,
    record: JsonObject,
    parts: list[JsonObject],
    annotation: JsonObject | None,
) -> None:
    list_of(message["parts"]).extend(parts)
    metadata = object_of(message["metadata"])
    list_of(object_of(object_of(metadata["extra"])[RECORD])["actions"]).append(record)
    if annotation is not None:
        list_of(metadata.setdefault("annotations", [])).append(annotation)


def _describe(metadata: JsonObject, action: JsonObject) -> None:
    """The finish reason and usage of an assistant_message, as canonical metadata shows them."""
    if action.get("finish_reason") is not None:
        metadata["finishReason"] = action["finish_reason"]
    usage = action.get("usage")
    if isinstance(usage, dict):
        # The rules checked the counts are integers.
        inputs, outputs = usage["input_tokens"], usage["output_tokens"]
        assert is_int(inputs) and is_int(outputs)
        metadata["usage"] = {
            "inputTokens": inputs,
            "outputTokens": outputs,
            "totalTokens": usage.get("total_tokens", inputs + outputs),
        }


def _prompt_content(data: JsonValue) -> JsonValue:
    """The content of a system.prompt's data when it is text (a string or text items)."""
    content = data.get("content") if isinstance(data, dict) else data
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(item, dict) and item.get("type") == "text" and isinstance(item.get("text"), str)
        for item in content
    ):
        return content
    return None


def read_action(
    action: JsonObject,
) -> tuple[str | None, str | None, list[JsonObject], JsonObject, JsonObject | None]:
    """(role, agent, parts, record, annotation) of one action; role None for an annotation."""
    action_type = action["action_type"]
    fields = {k: json_copy(v) for k, v in action.items() if k not in ("action_type", "sequence")}
    record: JsonObject = {"type": action_type}
    moved: list[str] = []

    def move(key: str) -> JsonValue:
        moved.append(key)
        return fields.pop(key)

    parts: list[JsonObject] = []
    role: str | None = "assistant"
    agent = as_str(action.get("agent_id"))
    annotation: JsonObject | None = None
    if action_type in ("user_message", "assistant_message"):
        parts, skeleton = read_content(move("content"))
        if skeleton is not None:
            record["content"] = skeleton
        if action_type == "user_message":
            role, agent = "user", None
            if "attachments" in fields:
                more, attached = read_items(list_of(move("attachments")))
                parts += more
                record["attachments"] = attached
    elif action_type == "thinking":
        part: JsonObject = {"type": "reasoning", "text": ""}
        if isinstance(fields.get("content"), str):
            part["text"] = move("content")
        if isinstance(fields.get("signature"), str):
            part["signature"] = move("signature")
        parts = [part]
    elif action_type == "tool_call":
        call_id, name, args = move("tool_call_id"), move("tool_name"), move("args")
        parts = [tool_call_part(text_of(call_id), text_of(name), args)]
    elif action_type == "tool_return":
        role, agent = "tool", None
        call_id, name, output = move("tool_call_id"), move("tool_name"), move("content")
        failed = fields["status"] != "success"
        parts = [tool_result_part(text_of(call_id), text_of(name), output, is_error=failed)]
    elif action_type == "system.prompt" and _prompt_content(fields.get("data")) is not None:
        role, agent = "system", None
        data = move("data")
        parts, skeleton = read_content(_prompt_content(data))
        if isinstance(data, dict):
            record["prompt"] = {k: v for k, v in data.items() if k != "content"}
        if skeleton is not None:
            record["content"] = skeleton
    else:
        role, agent = None, None
        annotation = {"action_type": action_type, "data": move("data")}
        record["note"] = True
    record["fields"] = fields
    # Only where a field may or may not have been there: the rest always is.
    optional = [key for key in moved if key in ("attachments", "signature")]
    if action_type == "thinking" and "content" in moved:
        optional.append("content")
    if optional:
        record["moved"] = optional
    return role, agent, parts, record, annotation


def read_thread(document: JsonObject, scope: str = "") -> TreeThread:
    """A validated ThreadProtocol thread as a linear TreeThread; scope prefixes made-up keys."""
    # The rules checked the document: the narrowing below only tells the type checker so.
    actions, title = objects_in(document["actions"]), text_of(document["title"])
    reader = _Reader(scope)
    for action in actions:
        reader.add(action)
    thread = linear_thread(reader.messages, title=title)
    record: JsonObject = {
        "fields": {
            k: json_copy(v) for k, v in document.items() if k not in THREAD_FIELDS_ELSEWHERE
        },
    }
    if len(title) > TITLE_KEPT:
        record["title"] = title
    if actions and actions[0]["sequence"] != 1:
        record["first_sequence"] = actions[0]["sequence"]
    if reader.leading:
        record["actions"] = json_copy(actions)
    raw_metadata = document.get("metadata")
    if "metadata" not in document or not isinstance(raw_metadata, dict):
        record["metadata"] = {"absent": "metadata" not in document}
    metadata: JsonObject = json_copy(raw_metadata) if isinstance(raw_metadata, dict) else {}
    if "extra" in metadata:
        record["extra"] = json_copy(metadata["extra"])
    own_extra = metadata.get("extra")
    metadata["extra"] = {**(own_extra if isinstance(own_extra, dict) else {}), RECORD: record}
    thread.metadata = metadata
    thread.agents = json_copy(object_of(document["agents"]))
    thread.id = uuid_to_ulid(document["thread_id"])
    thread.parent_thread_id = as_str(document.get("parent_thread_id"))
    thread.created_at = to_iso(parse_iso_utc(document["created_at"]))
    thread.updated_at = to_iso(parse_iso_utc(document["updated_at"]))
    return thread
