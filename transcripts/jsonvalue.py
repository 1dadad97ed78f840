"""The type of parsed JSON, and the helpers that narrow a JSON value read leniently.

Pure Python (no Django): the formats, the OTel conventions, the projector and the events use
it for data whose shape is only known at run time. Readers take what a JSON parser gives
(`object`), narrow it with the helpers here, and build `JsonObject`s. A helper hands back the
value itself (not a copy) when it has the type asked for, so changes to it change the document.
"""

from __future__ import annotations

import resource
from collections.abc import Mapping, Sequence
from typing import TypeAlias

# Containers are read-only in the union so that a list of objects is also a JSON value.
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


def text_of(value: object) -> str:
    """value when it is a string, else an empty string."""
    return value if isinstance(value, str) else ""


def as_object(value: object) -> JsonObject | None:
    """value when it is a JSON object (a dict), else None."""
    return value if isinstance(value, dict) else None


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


def list_at(container: JsonObject, key: str) -> JsonArray:
    """container[key], set to an empty list when absent; TypeError when it is no list."""
    value = container.setdefault(key, [])
    if not isinstance(value, list):
        raise TypeError(f"{key} is not a list")
    return value


# --- token usage (providers spell the keys differently) ---


def usage_number(usage: object, *keys: str) -> int | None:
    """The first integer among keys of a usage dict (providers spell them differently)."""
    if not isinstance(usage, dict):
        return None
    for key in keys:
        if isinstance(usage.get(key), int):
            return int(usage[key])
    return None


def input_tokens(usage: object) -> int | None:
    """Input tokens of a usage dict."""
    return usage_number(usage, "inputTokens", "input_tokens")


def output_tokens(usage: object) -> int | None:
    """Output tokens of a usage dict."""
    return usage_number(usage, "outputTokens", "output_tokens")


def native_json_allowed() -> bool:
    """Whether orjson may encode in this process now: it ends the process (no MemoryError) when
    an allocation fails, so not while the address space is capped, as an import job's is
    (`interchange.limits.memory_cap`), where the standard library's encoder raises instead."""
    return resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY
