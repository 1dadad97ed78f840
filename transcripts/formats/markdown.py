"""A readable Markdown transcript of the active path (export only).

Hidden messages are left out, as they are in the UI by default. Inline (data URL) files are
named, not dumped.
"""

from __future__ import annotations

import json
import re

from transcripts.jsonvalue import (
    JsonObject,
    JsonValue,
    object_of,
    objects_in,
    text_of,
)

from .document import TreeThread, active_path, parse_data_url

_ROLE_TITLES = {"user": "User", "assistant": "Assistant", "system": "System", "tool": "Tool"}


def export_markdown(thread: TreeThread) -> str:
    """The active path as Markdown text."""
    blocks = [f"# {thread.title or 'Untitled thread'}"]
    for message in active_path(thread):
        if object_of(message["metadata"]).get("hidden") is True:
            continue
        blocks.append(_heading(message, thread.agents))
        blocks.extend(_part(part) for part in objects_in(message["parts"]))
    return "\n\n".join(blocks) + "\n"


def _heading(message: JsonObject, agents: JsonObject) -> str:
    metadata = object_of(message["metadata"])
    role = text_of(message["role"])
    details = []
    agent = metadata.get("agentId")
    if isinstance(agent, str):
        config = agents.get(agent)
        name = config.get("agent_name") if isinstance(config, dict) else None
        details.append(name if isinstance(name, str) else agent)
    model = metadata.get("model")
    if isinstance(model, str):
        details.append(f"`{model}`")
    heading = f"## {_ROLE_TITLES.get(role, role)}"
    if details:
        heading += " · " + " · ".join(details)
    if message.get("createdAt"):
        heading += f"\n\n<sub>{message['createdAt']}</sub>"
    return heading


def _fence(text: str, language: str) -> str:
    # A fence longer than any backtick run inside keeps the block closed where it should be.
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"


def _json(value: JsonValue) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _part(part: JsonObject) -> str:
    part_type = part["type"]
    if part_type == "text":
        return str(part["text"])
    if part_type == "reasoning":
        return f"<details>\n<summary>Reasoning</summary>\n\n{part['text']}\n\n</details>"
    if part_type == "tool-call":
        title = f"**Tool call** `{part['toolName']}` (`{part['toolCallId']}`)"
        return f"{title}\n\n{_fence(_json(part['input']), 'json')}"
    if part_type == "tool-result":
        label = "Tool error" if part["isError"] else "Tool result"
        title = f"**{label}** `{part['toolName']}` (`{part['toolCallId']}`)"
        output = part["output"]
        body = _fence(output, "text") if isinstance(output, str) else _fence(_json(output), "json")
        return f"{title}\n\n{body}"
    mime_type, url = text_of(part["mimeType"]), text_of(part["url"])
    name = part.get("name") or mime_type
    if parse_data_url(url) is not None:
        return f"📎 {name} ({mime_type}, inline)"
    marker = "!" if mime_type.startswith("image/") else ""
    return f"{marker}[{name}](<{part['url']}>)"
