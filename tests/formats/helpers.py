"""Helpers shared by the format tests: JSON round trips and canonical comparisons."""

from __future__ import annotations

import copy
import json
from typing import Any

from transcripts.formats.document import TreeThread, output_text, parse_data_url


def through_json(value: Any) -> Any:
    """The value after a trip through JSON text, as a file would give it back."""
    return json.loads(json.dumps(value))


def rekeyed(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages with positional keys, so threads from different formats compare."""
    out = copy.deepcopy(messages)
    keys = {message["id"]: f"m{index}" for index, message in enumerate(out)}
    for message in out:
        message["id"] = keys[message["id"]]
        parent = message["parentMessageId"]
        message["parentMessageId"] = keys.get(parent) if parent is not None else None
    return out


def without_extra(messages: list[dict[str, Any]], *providers: str) -> list[dict[str, Any]]:
    """Messages with metadata.extra.<provider> removed (and extra itself when left empty)."""
    out = copy.deepcopy(messages)
    for message in out:
        extra = message["metadata"].get("extra")
        if isinstance(extra, dict):
            for provider in providers:
                extra.pop(provider, None)
            if not extra:
                del message["metadata"]["extra"]
    return out


def keep_metadata(messages: list[dict[str, Any]], keys: tuple[str, ...]) -> None:
    """Drop every metadata key but schemaVersion and keys, in place."""
    for message in messages:
        message["metadata"] = {
            key: value
            for key, value in message["metadata"].items()
            if key == "schemaVersion" or key in keys
        }


def no_timestamps(messages: list[dict[str, Any]]) -> None:
    """Set every createdAt to None, in place."""
    for message in messages:
        message["createdAt"] = None


def stringify_outputs(messages: list[dict[str, Any]], errors_too: bool = True) -> None:
    """Tool outputs as text (JSON for non-strings), in place."""
    for message in messages:
        for part in message["parts"]:
            if part["type"] == "tool-result" and (errors_too or not part["isError"]):
                part["output"] = output_text(part["output"])


def drop_parts(messages: list[dict[str, Any]], kind: str, roles: tuple[str, ...] = ()) -> None:
    """Remove parts of one type (only in messages of roles, when given), in place."""
    for message in messages:
        if not roles or message["role"] in roles:
            message["parts"] = [part for part in message["parts"] if part["type"] != kind]


def data_mime(url: str, fallback: str) -> str:
    """The mime type a data URL names, else fallback."""
    inline = parse_data_url(url)
    return inline[0] if inline else fallback


def messages_of(thread: TreeThread) -> list[dict[str, Any]]:
    """A deep copy of the thread's messages."""
    return copy.deepcopy(thread.messages)
