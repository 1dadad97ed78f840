"""The import's fast path records a message exactly as the general path does (check_events,
then the projector's parts and metadata), and leaves to it whatever it cannot vouch for."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any

import pytest

from transcripts.errors import InvalidInput
from transcripts.ledger.import_plan import fast_recorded, general_recorded, recorded_messages

MOMENT = datetime(2024, 5, 1, 12, 0, 0, 250_000, tzinfo=UTC)
ID = "01HXAMPLE0000000000000000A"


def _message(parts: Any, metadata: Any = None, role: str = "assistant") -> dict[str, Any]:
    message: dict[str, Any] = {"id": "m1", "role": role, "parts": parts}
    if metadata is not None:
        message["metadata"] = metadata
    return message


def _rows(recorded: list[Any]) -> list[tuple[Any, ...]]:
    return [
        (
            r.event.seq,
            r.event.kind,
            json.loads(r.event.data_json),
            r.event.at,
            r.role,
            json.loads(r.parts_json),
            json.loads(r.metadata_json),
            r.created_at,
        )
        for r in recorded
    ]


@pytest.mark.parametrize(
    "parts, metadata",
    [
        ([{"type": "text", "text": 'plain \t\\ é \u2028 "quoted"'}], None),
        ([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], {"schemaVersion": 1}),
        ([{"type": "text", "text": "x"}], {"model": "gpt-4o", "extra": {"n": None, "v": [1.5]}}),
        ([{"type": "reasoning", "text": "think", "signature": "sig"}], {"hidden": True}),
        ([{"type": "file", "mimeType": "image/png", "url": "data:,x", "name": "a.png"}], {}),
        ([], {"sourceMessageId": "kept"}),
    ],
)
def test_the_fast_path_records_what_the_general_path_does(parts, metadata):
    messages = [(_message(parts, metadata), ID, MOMENT)]
    fast = fast_recorded(messages)
    assert fast is not None
    assert _rows(fast) == _rows(general_recorded(messages))


@pytest.mark.parametrize(
    "parts, metadata",
    [
        # The projector fills in these parts: the general path writes them.
        ([{"type": "tool-call", "toolCallId": "c", "toolName": "t"}], None),
        ([{"type": "reasoning", "text": "t", "signature": None}], None),
        # What the checks refuse: the general path words the refusal.
        ([{"type": "text", "text": "nul \x00"}], None),
        ([{"type": "text", "text": "x"}], {"score": math.nan}),
        ([{"type": "text", "text": "x"}], {"big": 10**30}),
        ([{"type": "text", "text": "lone \ud800"}], None),
        ([{"type": "text", "text": 3}], None),
        ([{"type": "text", "text": "x"}], {"deep": json.loads("[" * 70 + "]" * 70)}),
    ],
)
def test_the_fast_path_leaves_what_it_cannot_vouch_for_to_the_general_path(parts, metadata):
    messages = [(_message(parts, metadata), ID, MOMENT)]
    assert fast_recorded(messages) is None
    try:
        expected: Any = _rows(general_recorded(messages))
    except InvalidInput as exc:
        expected = exc.details
    try:
        got: Any = _rows(recorded_messages(messages))
    except InvalidInput as exc:
        got = exc.details
    assert got == expected


def test_a_run_of_messages_is_numbered_from_one():
    messages = [
        (_message([{"type": "text", "text": str(n)}], role="user"), f"{ID[:-1]}{n}", MOMENT)
        for n in range(3)
    ]
    recorded = recorded_messages(messages)
    assert [r.event.seq for r in recorded] == [1, 2, 3]
    assert _rows(recorded) == _rows(general_recorded(messages))
