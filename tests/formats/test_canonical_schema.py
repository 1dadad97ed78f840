"""One canonical schema: a `message` event and a canonical document get the same verdict."""

from __future__ import annotations

from typing import Any

import pytest

from tests.ledger.invariants import check_all
from transcripts import interchange
from transcripts.errors import FormatError, InvalidEvents
from transcripts.events import check_events
from transcripts.formats.canonical import FORMAT_NAME, import_canonical
from transcripts.ids import new_ulid
from transcripts.ledger.default_project import default_project
from transcripts.message_schema import (
    PART_TYPES,
    ROLES,
    ReasoningPartModel,
    ToolResultPartModel,
    full_parts,
)
from transcripts.models import Message, Thread
from transcripts.projector import project

CALL = {"type": "tool-call", "toolCallId": "c1", "toolName": "search", "input": {"q": "x"}}


def document(*messages: dict[str, Any]) -> dict[str, Any]:
    """A canonical document holding messages as a chain (ids and schema version filled in)."""
    nodes = []
    for index, message in enumerate(messages):
        node: dict[str, Any] = {
            "id": f"m{index}",
            "parentMessageId": f"m{index - 1}" if index else None,
        }
        node.update(message)
        node.setdefault("metadata", {"schemaVersion": 1})
        nodes.append(node)
    return {"format": FORMAT_NAME, "version": 1, "thread": {"title": "t"}, "messages": nodes}


def event_verdict(message: dict[str, Any]) -> list[str]:
    """The paths check_events refuses a `message` event at, relative to its data."""
    try:
        check_events([{"seq": 1, "kind": "message", "data": message}])
    except InvalidEvents as error:
        return [problem.path.removeprefix("events[0].data") for problem in error.problems]
    return []


def document_verdict(message: dict[str, Any]) -> list[str]:
    """The paths import_canonical refuses the message at, relative to the message."""
    try:
        import_canonical(document(message))
    except FormatError as error:
        return [path.removeprefix("$.messages[0]") for path, _ in error.problems]
    return []


def with_part(part: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """An assistant message holding one part."""
    return {"role": "assistant", "parts": [part], **fields}


@pytest.mark.parametrize(
    ("message", "refused_at"),
    [
        # Optional part fields may be left out: the projector writes them in full.
        (with_part({"type": "tool-call", "toolCallId": "c", "toolName": "t"}), []),
        (with_part({"type": "tool-result", "toolCallId": "c"}), []),
        (with_part({"type": "tool-result", "toolCallId": "c", "toolName": None}), []),
        (with_part({"type": "tool-result", "toolCallId": "c", "toolName": ""}), []),
        (with_part({"type": "tool-result", "toolCallId": "c", "output": None}), []),
        (with_part({"type": "tool-result", "toolCallId": "c", "isError": True}), []),
        (with_part({"type": "file", "mimeType": "image/png", "url": "u", "name": None}), []),
        (with_part({"type": "reasoning", "text": "r", "signature": None}), []),
        (with_part({"type": "text", "text": "hi"}, createdAt="2026-01-01T10:00:00Z"), []),
        (with_part({"type": "text", "text": "hi"}, createdAt=None), []),
        # What is given must still be of the right type.
        (
            with_part({"type": "tool-result", "toolCallId": "c", "isError": "yes"}),
            [".parts[0].isError"],
        ),
        (
            with_part({"type": "tool-result", "toolCallId": "c", "toolName": 3}),
            [".parts[0].toolName"],
        ),
        (
            with_part({"type": "file", "mimeType": "image/png", "url": "u", "name": 5}),
            [".parts[0].name"],
        ),
        (with_part({"type": "reasoning", "text": "r", "signature": 5}), [".parts[0].signature"]),
        (
            with_part({"type": "tool-call", "toolCallId": "", "toolName": "t"}),
            [".parts[0].toolCallId"],
        ),
        (with_part({"type": "tool-call", "toolCallId": "c"}), [".parts[0].toolName"]),
        (with_part({"type": "file", "mimeType": "", "url": "u"}), [".parts[0].mimeType"]),
        (with_part({"type": "text", "text": 1}), [".parts[0].text"]),
        (with_part({"type": "audio"}), [".parts[0].type"]),
        (with_part({"text": "no type"}), [".parts[0].type"]),
        ({"role": "robot", "parts": []}, [".role"]),
        ({"role": "user", "parts": "hi"}, [".parts"]),
        # createdAt: an ISO 8601 time with a timezone that PostgreSQL can store.
        (with_part({"type": "text", "text": "hi"}, createdAt="yesterday"), [".createdAt"]),
        (
            with_part({"type": "text", "text": "hi"}, createdAt="2026-01-01T10:00:00"),
            [".createdAt"],
        ),
        (
            with_part({"type": "text", "text": "hi"}, createdAt="0001-01-01T01:00:00+05:00"),
            [".createdAt"],
        ),
        (with_part({"type": "text", "text": "hi"}, createdAt=3), [".createdAt"]),
    ],
)
def test_a_message_event_and_a_document_get_the_same_verdict(
    message: dict[str, Any], refused_at: list[str]
) -> None:
    assert event_verdict(message) == refused_at
    assert document_verdict(message) == refused_at


def test_a_document_words_schema_problems_like_every_format_reader() -> None:
    message = {
        "role": "robot",
        "createdAt": "2026-01-01T10:00:00",
        "parts": [
            {"type": "audio"},
            {"type": "tool-call", "toolName": 3},
            {"type": "tool-result", "toolCallId": "c", "isError": "yes"},
        ],
    }
    with pytest.raises(FormatError) as caught:
        import_canonical(document(message))
    assert caught.value.problems == [
        ("$.messages[0].role", f"expected one of {', '.join(ROLES)}"),
        ("$.messages[0].createdAt", "createdAt must carry a timezone (e.g. Z)"),
        ("$.messages[0].parts[0].type", f"expected one of {', '.join(PART_TYPES)}"),
        ("$.messages[0].parts[1].toolCallId", "required field is missing"),
        ("$.messages[0].parts[1].toolName", "expected a string, got number"),
        ("$.messages[0].parts[2].isError", "expected a boolean, got string"),
    ]


PARTIAL = [
    {"role": "assistant", "parts": [{"type": "tool-call", "toolCallId": "c1", "toolName": "s"}]},
    {
        "role": "tool",
        "parts": [
            {"type": "tool-result", "toolCallId": "c1"},
            {"type": "tool-result", "toolCallId": "elsewhere", "toolName": None},
        ],
    },
    {
        "role": "assistant",
        "parts": [
            {"type": "reasoning", "text": "r", "signature": None},
            {"type": "file", "mimeType": "image/png", "url": "u", "name": None, "extra": 1},
        ],
    },
]
FULL = [
    [{"type": "tool-call", "toolCallId": "c1", "toolName": "s", "input": None}],
    [
        {
            "type": "tool-result",
            "toolCallId": "c1",
            "toolName": "s",
            "output": None,
            "isError": False,
        },
        {
            "type": "tool-result",
            "toolCallId": "elsewhere",
            "toolName": "",
            "output": None,
            "isError": False,
        },
    ],
    [
        {"type": "reasoning", "text": "r"},
        {"type": "file", "mimeType": "image/png", "url": "u", "extra": 1},
    ],
]


def test_the_projector_writes_every_part_of_a_message_event_in_full() -> None:
    events = [
        {"seq": seq, "kind": "message", "data": message}
        for seq, message in enumerate(PARTIAL, start=1)
    ]
    check_events(events)
    projection = project(events, run_id=new_ulid())
    assert [message["parts"] for message in projection.messages] == FULL


def test_a_document_is_read_with_every_part_in_full() -> None:
    [thread] = import_canonical(document(*PARTIAL))
    assert [message["parts"] for message in thread.messages] == FULL


def test_full_parts_fills_every_optional_field_the_schema_declares() -> None:
    # The defaults full_parts writes are the ones the part models declare.
    [result] = full_parts([{"type": "tool-result", "toolCallId": "c"}], {})
    defaults = {
        name: field.default
        for name, field in ToolResultPartModel.model_fields.items()
        if not field.is_required()
    }
    assert {key: result[key] for key in defaults} == {**defaults, "toolName": ""}
    optional = [n for n, f in ReasoningPartModel.model_fields.items() if not f.is_required()]
    assert optional == ["signature"]


@pytest.mark.django_db
def test_an_imported_document_stores_what_its_events_project_to() -> None:
    [thread_id] = interchange.import_data(document(*PARTIAL), project=default_project()).thread_ids
    thread = Thread.objects.get(pk=thread_id)
    check_all([thread])
    stored = Message.objects.filter(thread=thread).order_by("depth")
    assert [message.parts for message in stored] == FULL
