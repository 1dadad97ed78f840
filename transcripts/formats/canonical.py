"""Our own lossless export: the thread, every message of the tree and its runs."""

from __future__ import annotations

import copy
from typing import Any

from .checks import Problems, is_int
from .document import ROLES, SCHEMA_VERSION, TreeThread

FORMAT_NAME = "transcripts.canonical"
VERSION = 1


def export_canonical(thread: TreeThread) -> dict[str, Any]:
    """The thread as a canonical JSON document."""
    return {
        "format": FORMAT_NAME,
        "version": VERSION,
        "thread": {
            "id": thread.id,
            "title": thread.title,
            "metadata": copy.deepcopy(thread.metadata),
            "agents": copy.deepcopy(thread.agents),
            "parentThreadId": thread.parent_thread_id,
            "createdAt": thread.created_at,
            "updatedAt": thread.updated_at,
            "activeLeafId": thread.active_leaf,
        },
        "messages": copy.deepcopy(thread.messages),
        "runs": copy.deepcopy(thread.runs),
    }


def import_canonical(data: Any) -> list[TreeThread]:
    """Threads from one canonical document or a list of them."""
    problems = Problems()
    documents = data if isinstance(data, list) else [data]
    prefix = "$" if not isinstance(data, list) else None
    threads = []
    for index, document in enumerate(documents):
        path = prefix or f"$[{index}]"
        thread = _read_document(document, path, problems)
        if thread is not None:
            threads.append(thread)
    problems.raise_if_any()
    return threads


def _read_document(document: Any, path: str, problems: Problems) -> TreeThread | None:
    doc = problems.obj(document, path)
    if doc is None:
        return None
    if doc.get("format") != FORMAT_NAME:
        problems.add(f"{path}.format", f"expected {FORMAT_NAME!r}")
    version = doc.get("version")
    if not is_int(version) or not 1 <= version <= VERSION:
        problems.add(f"{path}.version", f"expected an integer version from 1 to {VERSION}")
    head = problems.obj(doc.get("thread"), f"{path}.thread")
    messages = problems.array(doc.get("messages", []), f"{path}.messages")
    runs = problems.array(doc.get("runs", []), f"{path}.runs")
    if head is None or messages is None or runs is None:
        return None
    tpath = f"{path}.thread"
    title = head.get("title", "")
    if not isinstance(title, str):
        problems.add(f"{tpath}.title", "expected a string")
    for key in ("id", "parentThreadId", "createdAt", "updatedAt", "activeLeafId"):
        problems.opt_string(head.get(key), f"{tpath}.{key}")
    for key in ("metadata", "agents"):
        if key in head:
            problems.obj(head[key], f"{tpath}.{key}")
    seen: set[str] = set()
    for index, message in enumerate(messages):
        validate_message(message, f"{path}.messages[{index}]", problems, seen)
    for index, run in enumerate(runs):
        problems.obj(run, f"{path}.runs[{index}]")
    leaf = head.get("activeLeafId")
    if isinstance(leaf, str) and leaf not in seen:
        problems.add(f"{tpath}.activeLeafId", "does not name a message of the document")
    if problems.items:
        return None
    return TreeThread(
        title=title,
        messages=copy.deepcopy(messages),
        active_leaf=leaf,
        metadata=copy.deepcopy(head.get("metadata", {})),
        agents=copy.deepcopy(head.get("agents", {})),
        id=head.get("id"),
        parent_thread_id=head.get("parentThreadId"),
        created_at=head.get("createdAt"),
        updated_at=head.get("updatedAt"),
        runs=copy.deepcopy(runs),
    )


def validate_message(value: Any, path: str, problems: Problems, seen: set[str]) -> None:
    """Check one canonical message; seen holds the ids of the messages before it."""
    message = problems.obj(value, path)
    if message is None:
        return
    key = problems.req_string(message, "id", path)
    parent = message.get("parentMessageId")
    if parent is not None and not isinstance(parent, str):
        problems.add(f"{path}.parentMessageId", "expected a string or null")
    elif parent is not None and parent not in seen:
        problems.add(f"{path}.parentMessageId", "parent must be a message listed before it")
    if message.get("role") not in ROLES:
        problems.add(f"{path}.role", f"expected one of {', '.join(ROLES)}")
    problems.opt_string(message.get("createdAt"), f"{path}.createdAt")
    metadata = problems.obj(message.get("metadata"), f"{path}.metadata")
    if metadata is not None:
        version = metadata.get("schemaVersion")
        if not is_int(version) or not 1 <= version <= SCHEMA_VERSION:
            problems.add(f"{path}.metadata.schemaVersion", "expected a supported schema version")
    parts = problems.array(message.get("parts"), f"{path}.parts")
    for index, part in enumerate(parts or []):
        validate_part(part, f"{path}.parts[{index}]", problems)
    if key is not None:
        if key in seen:
            problems.add(f"{path}.id", "duplicate message id")
        seen.add(key)


_PART_FIELDS: dict[str, tuple[str, ...]] = {
    "text": ("text",),
    "reasoning": ("text",),
    "tool-call": ("toolCallId", "toolName"),
    "tool-result": ("toolCallId", "toolName"),
    "file": ("mimeType", "url"),
}


def validate_part(value: Any, path: str, problems: Problems) -> None:
    """Check one canonical part."""
    part = problems.obj(value, path)
    if part is None:
        return
    part_type = part.get("type")
    if part_type not in _PART_FIELDS:
        problems.add(f"{path}.type", f"expected one of {', '.join(_PART_FIELDS)}")
        return
    for key in _PART_FIELDS[part_type]:
        problems.req_string(part, key, path)
    if part_type == "tool-call" and "input" not in part:
        problems.add(f"{path}.input", "required field is missing")
    if part_type == "tool-result":
        if "output" not in part:
            problems.add(f"{path}.output", "required field is missing")
        if not isinstance(part.get("isError"), bool):
            problems.add(f"{path}.isError", "expected a boolean")
    if part_type == "reasoning" and "signature" in part:
        problems.string(part["signature"], f"{path}.signature")
    if part_type == "file" and "name" in part:
        problems.string(part["name"], f"{path}.name")
