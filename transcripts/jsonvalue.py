"""The type of parsed JSON, and helpers that narrow a JSON value read leniently.

Pure Python (no Django): formats, conventions and the projector use it for data whose shape
is only known at run time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeAlias

JsonValue: TypeAlias = "dict[str, JsonValue] | list[JsonValue] | str | int | float | bool | None"
JsonObject: TypeAlias = "dict[str, JsonValue]"


def as_object(value: object) -> JsonObject | None:
    """value when it is a JSON object (a dict), else None."""
    return value if isinstance(value, dict) else None


def as_list(value: object) -> list[JsonValue] | None:
    """value when it is a JSON array (a list), else None."""
    return value if isinstance(value, list) else None


def as_str(value: object) -> str | None:
    """value when it is a string, else None."""
    return value if isinstance(value, str) else None


def get_str(mapping: Mapping[str, object], key: str) -> str | None:
    """mapping[key] when it is a non-empty string, else None."""
    value = mapping.get(key)
    return value if isinstance(value, str) and value else None


def json_copy(value: object) -> JsonValue:
    """A deep copy of parsed JSON, typed as such; TypeError for a value JSON cannot hold."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list):
        return [json_copy(item) for item in value]
    if isinstance(value, dict):
        return {str(key): json_copy(item) for key, item in value.items()}
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def object_at(container: JsonObject, key: str) -> JsonObject:
    """container[key], set to an empty object when absent; TypeError when it is no object."""
    value = container.setdefault(key, {})
    if not isinstance(value, dict):
        raise TypeError(f"{key} is not an object")
    return value


def list_at(container: JsonObject, key: str) -> list[JsonValue]:
    """container[key], set to an empty list when absent; TypeError when it is no list."""
    value = container.setdefault(key, [])
    if not isinstance(value, list):
        raise TypeError(f"{key} is not a list")
    return value
