"""ThreadProtocol actions written from a canonical message that was not imported from one.

Ids, timestamps and sequence numbers are the exporter's (`threadprotocol`); this module
writes the rest: text and files as one `user_message`/`assistant_message`/`system.prompt`
per run of them, reasoning as `thinking`, tool calls and results, the message's finish
reason and usage on its assistant messages, and its `metadata.annotations` as the `system.*`
actions after it.
"""

from __future__ import annotations

from transcripts.jsonvalue import (
    JsonObject,
    object_of,
    text_of,
)

from .document import extra_of, parts_of
from .threadprotocol_parts import MEDIA_KINDS, json_copy
from .threadprotocol_rules import FINISH_REASONS, SYSTEM_ACTION
from .validation import is_int

DEFAULT_AGENT = "assistant"


def _content(parts: list[JsonObject]) -> str | list[JsonObject]:
    if len(parts) == 1 and parts[0]["type"] == "text":
        return str(parts[0]["text"])
    content: list[JsonObject] = []
    for part in parts:
        if part["type"] == "text":
            content.append({"type": "text", "text": part["text"]})
            continue
        kind = text_of(part["mimeType"]).split("/")[0]
        entry: JsonObject = {
            "type": kind if kind in MEDIA_KINDS else "file",
            "url": part["url"],
            "media_type": part["mimeType"],
        }
        if "name" in part:
            entry["name"] = part["name"]
        content.append(entry)
    return content


def _usage(metadata: JsonObject) -> JsonObject | None:
    usage = metadata.get("usage")
    if not isinstance(usage, dict) or not is_int(usage.get("inputTokens")):
        return None
    output = usage.get("outputTokens")
    written: JsonObject = {
        "input_tokens": usage["inputTokens"],
        "output_tokens": output if is_int(output) else 0,
    }
    if is_int(usage.get("totalTokens")):
        written["total_tokens"] = usage["totalTokens"]
    return written


def message_actions(message: JsonObject, called: set[str]) -> list[JsonObject]:
    """The actions of one message, without ids, timestamps or sequence numbers.

    called holds the tool call ids met on the path so far; a result whose call is not among
    them is written as `system.orphan_tool_return` (a tool_return would break the rules).
    """
    metadata = object_of(message["metadata"])
    role = message["role"]
    agent = metadata.get("agentId") or DEFAULT_AGENT
    actions: list[JsonObject] = []
    pending: list[JsonObject] = []

    def flush_content() -> None:
        if not pending:
            return
        if role == "user":
            actions.append({"action_type": "user_message", "content": _content(pending)})
        elif role == "system":
            actions.append({"action_type": "system.prompt", "data": {"content": _content(pending)}})
        else:
            actions.append(
                {
                    "action_type": "assistant_message",
                    "agent_id": agent,
                    "content": _content(pending),
                }
            )
        pending.clear()

    for part in parts_of(message):
        part_type = part["type"]
        if part_type in ("text", "file"):
            pending.append(part)
            continue
        flush_content()
        if part_type == "reasoning":
            provider = extra_of(message, "threadprotocol").get("provider_name", "unknown")
            thinking: JsonObject = {
                "action_type": "thinking",
                "agent_id": agent,
                "content": part["text"],
                "provider_name": provider,
            }
            if "signature" in part:
                thinking["signature"] = part["signature"]
            actions.append(thinking)
        elif part_type == "tool-call":
            called.add(text_of(part["toolCallId"]))
            actions.append(
                {
                    "action_type": "tool_call",
                    "agent_id": agent,
                    "tool_name": part["toolName"],
                    "tool_call_id": part["toolCallId"],
                    "args": json_copy(part["input"]),
                }
            )
        elif part_type == "tool-result" and part["toolCallId"] not in called:
            actions.append({"action_type": "system.orphan_tool_return", "data": json_copy(part)})
        elif part_type == "tool-result":
            actions.append(
                {
                    "action_type": "tool_return",
                    "tool_call_id": part["toolCallId"],
                    "tool_name": part["toolName"],
                    "status": "error" if part["isError"] else "success",
                    "content": json_copy(part["output"]),
                }
            )
    flush_content()
    if not actions and role != "tool":
        # An empty message still needs an action to keep its place in the thread.
        pending.append({"type": "text", "text": ""})
        flush_content()
    usage = _usage(metadata)
    for action in actions:
        if action["action_type"] == "assistant_message":
            if metadata.get("finishReason") in FINISH_REASONS:
                action["finish_reason"] = metadata["finishReason"]
            if usage is not None:
                action["usage"] = dict(usage)
    annotations = metadata.get("annotations")
    for annotation in annotations if isinstance(annotations, list) else []:
        action_type = annotation.get("action_type") if isinstance(annotation, dict) else None
        if isinstance(action_type, str) and SYSTEM_ACTION.match(action_type):
            actions.append({"action_type": action_type, "data": annotation.get("data")})
    return actions
