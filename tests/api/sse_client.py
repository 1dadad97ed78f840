"""A minimal Server-Sent Events reader for the tests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass
class Frame:
    event: str
    data: str
    id: str | None

    def json(self) -> Any:
        return json.loads(self.data)


def frames(response: httpx.Response) -> Iterator[Frame]:
    """The frames of a streaming response, including field-less ones (retry, comments)."""
    event, data, last_id, seen = "message", [], None, False
    for line in response.iter_lines():
        if line == "":
            if seen:
                yield Frame(event, "\n".join(data), last_id)
            event, data, last_id, seen = "message", [], None, False
            continue
        seen = True
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            event = value
        elif field == "data":
            data.append(value)
        elif field == "id":
            last_id = value
