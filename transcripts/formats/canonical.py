"""Our own lossless export: the thread, every message of the tree and its runs."""

from __future__ import annotations

import copy
import math

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from transcripts.jsonvalue import (
    JsonObject,
    JsonValue,
    as_str,
    object_of,
    objects_in,
    text_of,
)
from transcripts.message_schema import PART_TYPES, ROLES, TreeMessage, error_path, full_parts

from .document import TreeThread
from .validation import Problems, is_int, json_kind

FORMAT_NAME = "transcripts.message_schema"
VERSION = 1


def export_canonical(thread: TreeThread) -> JsonObject:
    """The thread as a canonical JSON document, sharing the thread's values (with its scores
    and feedback when it has any)."""
    # No deep copy: the document is written out, never changed, and copying a 5,000-message
    # thread cost more than reading it.
    judgement: JsonObject = {}
    if thread.scores:
        judgement["scores"] = list(thread.scores)
    if thread.feedback:
        judgement["feedback"] = list(thread.feedback)
    return {
        **canonical_head(
            thread_id=thread.id,
            title=thread.title,
            metadata=thread.metadata,
            agents=thread.agents,
            parent_thread_id=thread.parent_thread_id,
            created_at=thread.created_at,
            updated_at=thread.updated_at,
            active_leaf=thread.active_leaf,
        ),
        "messages": thread.messages,
        "runs": thread.runs,
        **judgement,
    }


def canonical_head(
    *,
    thread_id: str | None,
    title: str,
    metadata: JsonValue,
    agents: JsonValue,
    parent_thread_id: str | None,
    created_at: str | None,
    updated_at: str | None,
    active_leaf: str | None,
) -> JsonObject:
    """What a canonical document says before its messages: the format and the thread."""
    return {
        "format": FORMAT_NAME,
        "version": VERSION,
        "thread": {
            "id": thread_id,
            "title": title,
            "metadata": metadata,
            "agents": agents,
            "parentThreadId": parent_thread_id,
            "createdAt": created_at,
            "updatedAt": updated_at,
            "activeLeafId": active_leaf,
        },
    }


def import_canonical(data: object) -> list[TreeThread]:
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


def _read_document(document: JsonValue, path: str, problems: Problems) -> TreeThread | None:
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
        _check_message(message, f"{path}.messages[{index}]", problems, seen)
    for index, run in enumerate(runs):
        problems.obj(run, f"{path}.runs[{index}]")
    leaf = head.get("activeLeafId")
    if isinstance(leaf, str) and leaf not in seen:
        problems.add(f"{tpath}.activeLeafId", "does not name a message of the document")
    run_ids = {rid for r in objects_in(runs) if isinstance(rid := r.get("id"), str)}
    scores = problems.array(doc.get("scores", []), f"{path}.scores")
    feedback = problems.array(doc.get("feedback", []), f"{path}.feedback")
    for index, score in enumerate(scores or []):
        _check_score(score, f"{path}.scores[{index}]", problems, seen, run_ids)
    for index, item in enumerate(feedback or []):
        _check_feedback(item, f"{path}.feedback[{index}]", problems, seen)
    if problems.items:
        return None
    # Every value was checked above: the narrowing below only tells the type checker so.
    tool_names: dict[str, str] = {}
    return TreeThread(
        title=text_of(title),
        messages=[
            {
                **copy.deepcopy(message),
                "parts": full_parts(objects_in(message["parts"]), tool_names),
            }
            for message in objects_in(messages)
        ],
        active_leaf=as_str(leaf),
        metadata=copy.deepcopy(object_of(head.get("metadata"))),
        agents=copy.deepcopy(object_of(head.get("agents"))),
        id=as_str(head.get("id")),
        parent_thread_id=as_str(head.get("parentThreadId")),
        created_at=as_str(head.get("createdAt")),
        updated_at=as_str(head.get("updatedAt")),
        runs=copy.deepcopy(objects_in(runs)),
        scores=copy.deepcopy(objects_in(scores or [])),
        feedback=copy.deepcopy(objects_in(feedback or [])),
    )


SCORE_SOURCES = ("person", "api", "evaluator")


def _check_score(
    value: JsonValue, path: str, problems: Problems, messages: set[str], runs: set[str]
) -> None:
    """Check one score: a name, a number and/or a label, its source, and what it judges (a
    message or a run of the document, else the thread)."""
    score = problems.obj(value, path)
    if score is None:
        return
    name = score.get("name")
    if not isinstance(name, str) or not name.strip():
        problems.add(f"{path}.name", "expected a non-empty string")
    number = score.get("value")
    if number is not None and (
        isinstance(number, bool)
        or not isinstance(number, (int, float))
        or not math.isfinite(number)
    ):
        problems.add(f"{path}.value", f"expected a finite number or null, got {json_kind(number)}")
    for key in ("label", "comment", "externalId"):
        if not isinstance(score.get(key, ""), str):
            problems.add(f"{path}.{key}", f"expected a string, got {json_kind(score.get(key))}")
    if number is None and not score.get("label"):
        problems.add(f"{path}.value", "a score needs a value or a label")
    if score.get("source") not in SCORE_SOURCES:
        problems.add(f"{path}.source", f"expected one of {', '.join(SCORE_SOURCES)}")
    for key in ("author", "token", "createdAt", "updatedAt"):
        problems.opt_string(score.get(key), f"{path}.{key}")
    _no_nul(score, ("name", "label", "comment", "externalId", "author", "token"), path, problems)
    message, run = score.get("messageId"), score.get("runId")
    if message is not None and message not in messages:
        problems.add(f"{path}.messageId", "does not name a message of the document")
    if run is not None and run not in runs:
        problems.add(f"{path}.runId", "does not name a run of the document")


def _check_feedback(value: JsonValue, path: str, problems: Problems, messages: set[str]) -> None:
    """Check one feedback: a 👍 (up true) or 👎 on a message of the document, by a username."""
    item = problems.obj(value, path)
    if item is None:
        return
    if item.get("messageId") not in messages:
        problems.add(f"{path}.messageId", "does not name a message of the document")
    user = item.get("user")
    if not isinstance(user, str) or not user:
        problems.add(f"{path}.user", "expected a username")
    if not isinstance(item.get("up"), bool):
        problems.add(f"{path}.up", f"expected a boolean, got {json_kind(item.get('up'))}")
    if not isinstance(item.get("comment", ""), str):
        problems.add(f"{path}.comment", "expected a string")
    _no_nul(item, ("user", "comment"), path, problems)
    for key in ("createdAt", "updatedAt"):
        problems.opt_string(item.get(key), f"{path}.{key}")


def _no_nul(
    item: dict[str, JsonValue], keys: tuple[str, ...], path: str, problems: Problems
) -> None:
    """Refuse a NUL character in the strings at keys (PostgreSQL's text cannot store one)."""
    for key in keys:
        text = item.get(key)
        if isinstance(text, str) and "\x00" in text:
            problems.add(f"{path}.{key}", "may not hold a NUL character")


# A message's fields in the order a reader goes through them.
_FIELD_ORDER = ("id", "parentMessageId", "role", "createdAt", "metadata", "parts")


def _check_message(value: JsonValue, path: str, problems: Problems, seen: set[str]) -> None:
    """Check one message against the canonical schema; seen holds the ids listed before it."""
    if not isinstance(value, dict):
        problems.obj(value, path)
        return
    # (rank of the field, path, message): problems are listed in the order of _FIELD_ORDER.
    found: list[tuple[int, str, str]] = []
    try:
        TreeMessage.model_validate(value)
    except ValidationError as exc:
        found.extend(
            (_FIELD_ORDER.index(str(error["loc"][0])), error_path(error), _wording(error))
            for error in exc.errors()
        )
    parent = value.get("parentMessageId")
    if isinstance(parent, str) and parent not in seen:
        found.append(
            (
                _FIELD_ORDER.index("parentMessageId"),
                ".parentMessageId",
                "parent must be a message listed before it",
            )
        )
    for _, where, message in sorted(found, key=lambda problem: problem[0]):
        problems.add(path + where, message)
    key = value.get("id")
    if isinstance(key, str):
        if key in seen:
            problems.add(f"{path}.id", "duplicate message id")
        seen.add(key)


def _wording(error: ErrorDetails) -> str:
    """A schema error in the words every format reader uses."""
    kind, value = error["type"], error.get("input")
    if kind == "missing":
        return "required field is missing"
    if kind == "value_error":
        return str(error.get("ctx", {}).get("error", error["msg"]))
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        return f"expected one of {', '.join(PART_TYPES)}"
    if kind == "literal_error":
        # The role is the schema's only literal besides the part types.
        return f"expected one of {', '.join(ROLES)}"
    if kind == "string_type":
        return f"expected a string, got {json_kind(value)}"
    if kind == "string_too_short":
        return "expected a non-empty string"
    if kind == "bool_type":
        return f"expected a boolean, got {json_kind(value)}"
    if kind == "list_type":
        return f"expected an array, got {json_kind(value)}"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"expected an object, got {json_kind(value)}"
    return error["msg"]
