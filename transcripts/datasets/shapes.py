"""Rows in the formats trainers load: TRL preferences, OpenAI preference and chat fine-tuning,
Hugging Face chat messages.

OpenAI messages are the Chat Completions messages the thread export writes
(`formats/openai.py`): text, images and files of user messages, tool calls as `tool_calls`
with JSON `arguments`, one `tool` message per result with its `tool_call_id`; reasoning is
left out. Hugging Face messages are what chat templates read: `content` is always a string
(text parts joined by a blank line; files and reasoning left out), an assistant's tool calls
are `tool_calls: [{"id", "type": "function", "function": {"name", "arguments"}}]` with
`arguments` as JSON text, and each result is a `tool` message with `content`, `name` and
`tool_call_id`. Arguments stay text because a JSON Lines file loads into one Arrow column
per key, and the inputs of different tools have different shapes.
"""

from __future__ import annotations

from typing import Any

from transcripts.datasets.pairs_and_paths import ChatPath, PreferencePair
from transcripts.formats.document import dump_json_text, output_text
from transcripts.formats.openai import export_message as openai_message
from transcripts.selectors.datasets import Node, ThreadTree


class ShapeMismatch(Exception):
    """The row has no place in the format (the reason says why)."""


def openai_messages(nodes: list[Node]) -> list[dict[str, Any]]:
    """Chat Completions messages of nodes."""
    return [message for node in nodes for message in openai_message(node.as_canonical())]


def _hf_message(node: Node) -> list[dict[str, Any]]:
    parts = node.parts
    if node.role == "tool":
        return [
            {
                "role": "tool",
                "content": output_text(part.get("output")),
                "name": part.get("toolName") or "",
                "tool_call_id": part["toolCallId"],
            }
            for part in parts
            if part.get("type") == "tool-result"
        ]
    texts = [part["text"] for part in parts if part.get("type") == "text"]
    message: dict[str, Any] = {"role": node.role, "content": "\n\n".join(texts)}
    calls = [
        {
            "id": part["toolCallId"],
            "type": "function",
            "function": {"name": part["toolName"], "arguments": dump_json_text(part.get("input"))},
        }
        for part in parts
        if part.get("type") == "tool-call"
    ]
    if calls:
        message["tool_calls"] = calls
    return [message]


def hf_messages(nodes: list[Node]) -> list[dict[str, Any]]:
    """Hugging Face chat-template messages of nodes."""
    return [message for node in nodes for message in _hf_message(node)]


def _tools(tree: ThreadTree) -> dict[str, Any]:
    """The tool definitions an imported OpenAI request carried, as `{"tools": [...]}`."""
    extra = tree.thread.metadata.get("extra") if isinstance(tree.thread.metadata, dict) else None
    openai = extra.get("openai") if isinstance(extra, dict) else None
    tools = openai.get("tools") if isinstance(openai, dict) else None
    return {"tools": tools} if isinstance(tools, list) and tools else {}


def _run_ids(*groups: list[Node]) -> list[str]:
    """The runs of the messages, in order of first appearance."""
    return list(dict.fromkeys(node.run_id for group in groups for node in group))


def pair_metadata(pair: PreferencePair) -> dict[str, Any]:
    """Where a preference row comes from."""
    return {
        "project": pair.tree.thread.project.slug,
        "threadId": pair.tree.thread.id,
        "forkMessageId": pair.fork.id,
        "chosenRunId": pair.chosen[0].run_id,
        "rejectedRunId": pair.rejected[0].run_id,
        "chosenBy": pair.chosen_by,
        "runIds": _run_ids(pair.prompt, pair.chosen, pair.rejected),
    }


def path_metadata(path: ChatPath) -> dict[str, Any]:
    """Where a chat row comes from."""
    return {
        "project": path.tree.thread.project.slug,
        "threadId": path.tree.thread.id,
        "leafMessageId": path.messages[-1].id,
        "branch": path.branch,
        "runIds": _run_ids(path.messages),
    }


def _single_assistant(nodes: list[Node]) -> list[dict[str, Any]]:
    messages = openai_messages(nodes)
    if len(messages) != 1 or messages[0]["role"] != "assistant":
        raise ShapeMismatch("the answer spans several messages")
    return messages


def preference_record(pair: PreferencePair, fmt: str, *, metadata: bool) -> dict[str, Any]:
    """The pair as a row of fmt ("trl" or "openai"); ShapeMismatch when it has no place.

    OpenAI preference fine-tuning takes one assistant message per output: an answer with
    tool round trips has no OpenAI row (TRL keeps it).
    """
    if fmt == "openai":
        record: dict[str, Any] = {
            "input": {"messages": openai_messages(pair.prompt), **_tools(pair.tree)},
            "preferred_output": _single_assistant(pair.chosen),
            "non_preferred_output": _single_assistant(pair.rejected),
        }
    else:
        record = {
            "prompt": hf_messages(pair.prompt),
            "chosen": hf_messages(pair.chosen),
            "rejected": hf_messages(pair.rejected),
        }
    if metadata:
        record["metadata"] = pair_metadata(pair)
    return record


def chat_record(path: ChatPath, fmt: str, *, metadata: bool) -> dict[str, Any]:
    """The path as a row of fmt ("openai" or "hf")."""
    if fmt == "openai":
        record: dict[str, Any] = {"messages": openai_messages(path.messages), **_tools(path.tree)}
    else:
        record = {"messages": hf_messages(path.messages)}
    if metadata:
        record["metadata"] = path_metadata(path)
    return record
