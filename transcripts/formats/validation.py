"""Checks for format readers that record each problem at its JSON path instead of raising."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeGuard

from transcripts.errors import FormatError
from transcripts.jsonvalue import (
    JsonArray,
    JsonObject,
    JsonValue,
)


class Problems:
    """Collects (JSON path, message) pairs so one FormatError can list them all."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    def add(self, path: str, message: str) -> None:
        """Record one problem."""
        self.items.append((path, message))

    def raise_if_any(self) -> None:
        """Raise FormatError listing every recorded problem, if any."""
        if self.items:
            raise FormatError(self.items)

    def obj(self, value: object, path: str) -> JsonObject | None:
        """Value when it is a JSON object, else None and a problem."""
        if isinstance(value, dict):
            return value
        self.add(path, f"expected an object, got {json_kind(value)}")
        return None

    def array(self, value: object, path: str) -> JsonArray | None:
        """Value when it is a JSON array, else None and a problem."""
        if isinstance(value, list):
            return value
        self.add(path, f"expected an array, got {json_kind(value)}")
        return None

    def objects(self, items: Iterable[object], path: str) -> Iterator[tuple[str, JsonObject]]:
        """(path, item) for each item of an array that is an object; a problem for each other."""
        for index, item in enumerate(items):
            where = f"{path}[{index}]"
            value = self.obj(item, where)
            if value is not None:
                yield where, value

    def string(self, value: object, path: str) -> str | None:
        """Value when it is a string, else None and a problem."""
        if isinstance(value, str):
            return value
        self.add(path, f"expected a string, got {json_kind(value)}")
        return None

    def opt_string(self, value: object, path: str) -> str | None:
        """Value when it is a string, None when absent or null, else None and a problem."""
        if value is None or isinstance(value, str):
            return value
        self.add(path, f"expected a string or null, got {json_kind(value)}")
        return None

    def required(self, data: JsonObject, key: str, path: str) -> JsonValue:
        """data[key], recording a problem when the key is missing."""
        if key not in data:
            self.add(f"{path}.{key}", "required field is missing")
            return None
        return data[key]

    def req_string(self, data: JsonObject, key: str, path: str) -> str | None:
        """data[key] as a required string."""
        if key not in data:
            self.add(f"{path}.{key}", "required field is missing")
            return None
        return self.string(data[key], f"{path}.{key}")


def json_kind(value: object) -> str:
    """The JSON type name of a value, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def is_int(value: object) -> TypeGuard[int]:
    """Whether value is a JSON integer (booleans are not)."""
    return isinstance(value, int) and not isinstance(value, bool)
