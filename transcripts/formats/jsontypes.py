"""JSON value types for the format converters, and small helpers that narrow foreign input.

Readers take what a JSON parser gives (`object`), narrow it with the helpers here, and
build `JsonObject`s; nothing here imports Django. A helper hands back the value itself (not
a copy) when it has the type asked for, so changes to it change the document.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

# Containers are read-only in the union so a list of objects is also a JSON value.
JsonValue: TypeAlias = (
    "str | int | float | bool | Sequence[JsonValue] | Mapping[str, JsonValue] | None"
)
JsonObject: TypeAlias = dict[str, JsonValue]
JsonArray: TypeAlias = list[JsonValue]


def as_str(value: object) -> str | None:
    """value when it is a string, else None."""
    return value if isinstance(value, str) else None


def nonempty(value: object) -> str | None:
    """value when it is a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def object_of(value: object) -> JsonObject:
    """value when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def list_of(value: object) -> JsonArray:
    """value when it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def objects_in(value: object) -> list[JsonObject]:
    """The JSON objects of value when it is an array (other items and values give none)."""
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, dict)]


def text_of(value: object) -> str:
    """value when it is a string, else an empty string."""
    return value if isinstance(value, str) else ""
