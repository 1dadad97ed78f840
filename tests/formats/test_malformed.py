"""Importers reject bad input with FormatError and JSON paths, never with a crash."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.formats.strategies import json_documents
from transcripts.errors import FormatError
from transcripts.formats import FORMATS, detect_format
from transcripts.formats.chatgpt import iter_chatgpt

IMPORTERS = {key: spec.importer for key, spec in FORMATS.items() if spec.importer is not None}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_documents)
def test_every_importer_returns_or_raises_format_error_on_any_json(document: Any) -> None:
    for key, importer in IMPORTERS.items():
        try:
            threads = importer(document)
        except FormatError as error:
            assert error.problems, key
            assert all(path.startswith("$") for path, _ in error.problems), key
        else:
            assert isinstance(threads, list), key
    detect_format(document)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_documents)
def test_streaming_chatgpt_import_returns_or_raises_format_error(document: Any) -> None:
    try:
        list(iter_chatgpt(io.BytesIO(json.dumps(document).encode())))
    except FormatError as error:
        assert error.problems


def problems(key: str, document: Any) -> list[tuple[str, str]]:
    """The problems one importer reports."""
    importer = IMPORTERS[key]
    with pytest.raises(FormatError) as caught:
        importer(document)
    return caught.value.problems


def paths(key: str, document: Any) -> list[str]:
    """The JSON paths one importer reports."""
    return [path for path, _ in problems(key, document)]


@pytest.mark.parametrize("key", sorted(IMPORTERS))
@pytest.mark.parametrize("document", [None, 3, "text", True])
def test_every_importer_rejects_scalars(key: str, document: Any) -> None:
    assert paths(key, document)


def test_canonical_import_reports_every_broken_field() -> None:
    document = {
        "format": "transcripts.message_schema",
        "version": 1,
        "thread": {"title": 5, "activeLeafId": "nope"},
        "messages": [
            {
                "id": "a",
                "parentMessageId": "b",
                "role": "robot",
                "parts": [{"type": "x"}],
                "createdAt": None,
                "metadata": {"schemaVersion": 9},
            },
            {
                "id": "a",
                "parentMessageId": None,
                "role": "user",
                "parts": [{"type": "tool-result", "toolCallId": 1, "toolName": 5, "isError": "no"}],
                "createdAt": 3,
                "metadata": {},
            },
        ],
    }
    assert paths("canonical", document) == [
        "$.thread.title",
        "$.messages[0].parentMessageId",
        "$.messages[0].role",
        "$.messages[0].metadata.schemaVersion",
        "$.messages[0].parts[0].type",
        "$.messages[1].createdAt",
        "$.messages[1].metadata.schemaVersion",
        "$.messages[1].parts[0].toolCallId",
        "$.messages[1].parts[0].toolName",
        "$.messages[1].parts[0].isError",
        "$.messages[1].id",
        "$.thread.activeLeafId",
    ]
    assert paths("canonical", {"format": "other", "version": 2, "thread": {}}) == [
        "$.format",
        "$.version",
    ]


def test_openai_import_reports_bad_messages() -> None:
    document = {
        "messages": [
            {"role": "wizard", "content": "x"},
            {"role": "user", "content": [{"type": "image_url", "image_url": {}}]},
            {"role": "assistant", "tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]},
            {"role": "tool", "content": "x"},
            "hello",
        ]
    }
    assert paths("openai", document) == [
        "$.messages[0].role",
        "$.messages[1].content[0].image_url.url",
        "$.messages[2].tool_calls[0].function.name",
        "$.messages[3].tool_call_id",
        "$.messages[4]",
    ]


def test_anthropic_import_reports_bad_turns_and_blocks() -> None:
    document = {
        "system": [{"type": "text"}],
        "messages": [
            {"role": "system", "content": "x"},
            {"role": "user", "content": [{"type": "image", "source": {"type": "ftp"}}]},
            {"role": "assistant", "content": [{"type": "tool_use", "name": "t"}]},
            {"role": "user", "content": [{"type": "tool_result"}]},
            {"role": "user", "content": [{"type": "thinking", "thinking": "x"}]},
        ],
    }
    assert paths("anthropic", document) == [
        "$.system[0].text",
        "$.messages[0].role",
        "$.messages[1].content[0].source.type",
        "$.messages[2].content[0].id",
        "$.messages[3].content[0].tool_use_id",
        "$.messages[4].content[0].type",
    ]


def test_gemini_import_reports_bad_contents_and_parts() -> None:
    document = {
        "contents": [
            {"role": "assistant", "parts": []},
            {"role": "user", "parts": [{"text": 3}, {"inlineData": {"data": "x"}}]},
            {"role": "model", "parts": [{"functionCall": {"args": {}}}]},
            {"role": "user", "parts": "hi"},
        ]
    }
    assert paths("gemini", document) == [
        "$.contents[0].role",
        "$.contents[1].parts[0].text",
        "$.contents[1].parts[1].inlineData.mimeType",
        "$.contents[2].parts[0].functionCall.name",
        "$.contents[3].parts",
    ]


def test_pydantic_ai_import_reports_bad_messages_and_parts() -> None:
    document = [
        {"kind": "chat", "parts": []},
        {
            "kind": "request",
            "parts": [
                {"part_kind": "system-prompt"},
                {"part_kind": "tool-return", "tool_name": "t"},
            ],
        },
        {
            "kind": "response",
            "parts": [{"part_kind": "tool-call", "tool_name": "t"}, {"content": "x"}],
        },
        {"kind": "request"},
    ]
    assert paths("pydantic-ai", document) == [
        "$[0].kind",
        "$[1].parts[0].content",
        "$[1].parts[1].tool_call_id",
        "$[2].parts[0].tool_call_id",
        "$[2].parts[1].part_kind",
        "$[3].parts",
    ]


def test_ai_sdk_import_reports_bad_ui_messages_and_parts() -> None:
    document = [
        {"id": "1", "role": "tool", "parts": []},
        {"role": "user", "parts": []},
        {
            "id": "3",
            "role": "assistant",
            "parts": [
                {"type": "text"},
                {"type": "tool-x", "toolCallId": "c", "state": "running"},
                {"type": "dynamic-tool", "toolCallId": "c", "state": "input-available"},
                {"type": "file", "url": "u"},
            ],
        },
    ]
    assert paths("ai-sdk", document) == [
        "$[0].role",
        "$[1].id",
        "$[2].parts[0].text",
        "$[2].parts[1].state",
        "$[2].parts[2].toolName",
        "$[2].parts[3].mediaType",
    ]


def test_threadprotocol_import_reports_a_thread_that_is_not_an_object() -> None:
    assert paths("threadprotocol", [1]) == ["$[0]"]
    assert set(paths("threadprotocol", {})) == {
        "$.version",
        "$.thread_id",
        "$.created_at",
        "$.updated_at",
        "$.title",
        "$.agents",
        "$.actions",
    }


def test_chatgpt_import_reports_a_conversation_without_mapping() -> None:
    assert paths("chatgpt", [{"title": "x"}]) == ["$[0].mapping"]
    assert paths("chatgpt", {"conversations": 3}) == ["$.conversations"]


FIXTURE_FORMATS = {
    "pydantic_ai_run.json": "pydantic-ai",
    "openai_chat.json": "openai",
    "anthropic_messages.json": "anthropic",
    "gemini_rest.json": "gemini",
    "gemini_snake.json": "gemini",
    "ai_sdk_ui_messages.json": "ai-sdk",
    "chatgpt_conversations.json": "chatgpt",
    "threadprotocol_example.json": "threadprotocol",
}
FIXTURE_DIR = __import__("pathlib").Path(__file__).parent / "fixtures"


def locations(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a JSON value (keys and indexes), the root included."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(locations(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(locations(item, (*prefix, index)))
    return found


def replaced(document: Any, location: tuple[Any, ...], new: Any) -> Any:
    """A copy of document with the value at location replaced (or a key deleted when new is ...)."""
    copy_ = json.loads(json.dumps(document))
    if not location:
        return new
    target = copy_
    for step in location[:-1]:
        target = target[step]
    if new is ... and isinstance(target, dict):
        del target[location[-1]]
    else:
        target[location[-1]] = None if new is ... else new
    return copy_


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(FIXTURE_FORMATS)),
    pick=st.integers(min_value=0),
    new=json_documents | st.just(...),
)
def test_importers_survive_any_single_corruption_of_a_real_document(
    name: str, pick: int, new: Any
) -> None:
    document = json.loads((FIXTURE_DIR / name).read_text())
    spots = locations(document)
    corrupted = replaced(document, spots[pick % len(spots)], new)
    for key, importer in IMPORTERS.items():
        try:
            importer(corrupted)
        except FormatError as error:
            assert error.problems, (FIXTURE_FORMATS[name], key)
    exporter = FORMATS[FIXTURE_FORMATS[name]].exporter
    try:
        threads = IMPORTERS[FIXTURE_FORMATS[name]](corrupted)
    except FormatError:
        return
    # What imports must also export, to every format.
    for spec in FORMATS.values():
        if spec.exporter is not None:
            for thread in threads:
                json.dumps(spec.exporter(thread))
    assert exporter is None or threads is not None
