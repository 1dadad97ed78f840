"""Fixtures dumped by the real libraries import as expected and export back unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessagesTypeAdapter

from tests.formats.helpers import through_json
from transcripts.formats import FORMATS, detect_format
from transcripts.formats.ai_sdk.messages import export_ai_sdk, import_ai_sdk
from transcripts.formats.anthropic import import_anthropic
from transcripts.formats.gemini import export_gemini, import_gemini
from transcripts.formats.openai import import_openai
from transcripts.formats.pydantic_ai import export_pydantic_ai, import_pydantic_ai

FIXTURES = Path(__file__).parent / "fixtures"


def load(name: str) -> Any:
    """A fixture's parsed JSON."""
    return json.loads((FIXTURES / name).read_text())


def shape(messages: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    """(role, part types) of each message."""
    return [(message["role"], [part["type"] for part in message["parts"]]) for message in messages]


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("pydantic_ai_run.json", "pydantic-ai"),
        ("openai_chat.json", "openai"),
        ("anthropic_messages.json", "anthropic"),
        ("gemini_rest.json", "gemini"),
        ("ai_sdk_ui_messages.json", "ai-sdk"),
    ],
)
def test_it_exports_an_imported_fixture_back_unchanged(name: str, key: str) -> None:
    spec = FORMATS[key]
    assert spec.importer is not None and spec.exporter is not None
    document = load(name)
    (thread,) = spec.importer(document)
    assert through_json(spec.exporter(thread)) == document


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("pydantic_ai_run.json", "pydantic-ai"),
        ("openai_chat.json", "openai"),
        ("anthropic_messages.json", "anthropic"),
        ("gemini_rest.json", "gemini"),
        ("gemini_snake.json", "gemini"),
        ("ai_sdk_ui_messages.json", "ai-sdk"),
        ("chatgpt_conversations.json", "chatgpt"),
        ("threadprotocol_example.json", "threadprotocol"),
    ],
)
def test_it_detects_the_format_of_each_fixture(name: str, key: str) -> None:
    assert detect_format(load(name)) == key


def test_it_reads_a_real_pydantic_ai_run() -> None:
    (thread,) = import_pydantic_ai(load("pydantic_ai_run.json"))
    assert shape(thread.messages) == [
        ("system", ["text"]),
        ("user", ["text", "file", "file"]),
        ("assistant", ["reasoning", "tool-call"]),
        ("tool", ["tool-result"]),
        ("assistant", ["tool-call"]),
        ("tool", ["tool-result"]),
        ("assistant", ["text"]),
    ]
    reasoning = thread.messages[2]["parts"][0]
    assert reasoning["signature"] == "EqQBCkYIBxgCKkD-signature"
    retry = thread.messages[3]["parts"][0]
    assert retry["isError"] is True
    assert thread.messages[4]["parts"][0]["input"] == {"city": "PARIS"}
    assert thread.messages[5]["parts"][0]["isError"] is False
    final = thread.messages[6]["metadata"]
    assert final["finishReason"] == "stop"
    assert set(final["usage"]) == {"inputTokens", "outputTokens", "totalTokens"}
    assert final["extra"]["pydantic_ai"]["usage"]["input_tokens"] == final["usage"]["inputTokens"]
    assert all(message["createdAt"] for message in thread.messages)


def test_its_pydantic_ai_export_of_a_real_run_validates() -> None:
    (thread,) = import_pydantic_ai(load("pydantic_ai_run.json"))
    exported = json.dumps(export_pydantic_ai(thread))
    assert len(ModelMessagesTypeAdapter.validate_json(exported)) == 6


def test_it_reads_openai_developer_messages_as_system() -> None:
    (thread,) = import_openai(load("openai_chat.json"))
    system = thread.messages[0]
    assert system["role"] == "system"
    assert system["metadata"]["extra"]["openai"] == {"role": "developer"}
    tool = thread.messages[3]["parts"][0]
    assert tool["toolName"] == "get_weather"
    assert tool["output"] == '{"tempC": 18}'
    assert thread.metadata == {"extra": {"openai": {"model": "gpt-4.1"}}}


def test_it_keeps_claude_thinking_blocks_redacted_ones_included() -> None:
    (thread,) = import_anthropic(load("anthropic_messages.json"))
    assistant = thread.messages[2]
    assert assistant["parts"][0] == {
        "type": "reasoning",
        "text": "Call the tool.",
        "signature": "EqQBsig",
    }
    # Redacted thinking is reasoning without text; its data rides in the part's source fields.
    redacted = assistant["parts"][1]
    assert (redacted["type"], redacted["text"]) == ("reasoning", "")
    kept = redacted["sourceFields"]["anthropic"]["set"]
    assert kept["type"] == "redacted_thinking" and isinstance(kept["data"], str)
    # The user turn holding a tool result splits into a tool message, then the user's text.
    assert shape(thread.messages[3:5]) == [("tool", ["tool-result"]), ("user", ["text"])]
    assert thread.messages[3]["parts"][0]["toolName"] == "get_weather"
    assert thread.messages[1]["parts"][1]["url"] == "data:image/png;base64,iVBORw0KGgo="


def test_it_reads_gemini_snake_case_like_camel_case() -> None:
    assert import_gemini(load("gemini_snake.json")) == import_gemini(load("gemini_rest.json"))


def test_it_round_trips_gemini_thought_signatures() -> None:
    (thread,) = import_gemini(load("gemini_rest.json"))
    model_turn = thread.messages[2]
    assert model_turn["parts"][0]["type"] == "reasoning"
    assert model_turn["metadata"]["extra"]["gemini"]["thought_signatures"] == {
        "1": "EjRzaWduYXR1cmU="
    }
    exported = export_gemini(thread)
    assert exported["contents"][1]["parts"][1]["thoughtSignature"] == "EjRzaWduYXR1cmU="
    assert thread.messages[3]["parts"][0]["output"] == {"tempC": 18}


def test_it_splits_an_ai_sdk_assistant_message_into_steps_and_tool_results() -> None:
    (thread,) = import_ai_sdk(load("ai_sdk_ui_messages.json"))
    assert shape(thread.messages) == [
        ("system", ["text"]),
        ("user", ["text", "file"]),
        ("assistant", ["reasoning", "text", "tool-call", "tool-call"]),
        ("tool", ["tool-result", "tool-result"]),
        ("assistant", ["text", "tool-call"]),
    ]
    results = thread.messages[3]["parts"]
    assert results[0]["output"] == {"tempC": 18, "sky": "cloudy"}
    assert results[1] == {
        "type": "tool-result",
        "toolCallId": "call_2",
        "toolName": "lookup",
        "output": "lookup failed: timeout",
        "isError": True,
    }
    assert thread.messages[2]["parts"][0]["signature"] == "sig-abc"
    assert thread.messages[1]["parts"][1]["name"] == "map.png"


def test_it_falls_back_to_a_fresh_ui_message_when_the_stored_layout_no_longer_fits() -> None:
    (thread,) = import_ai_sdk(load("ai_sdk_ui_messages.json"))
    thread.messages[2]["parts"].pop(1)
    exported = export_ai_sdk(thread)
    assistant = exported[2]
    assert assistant["id"] == "msg_assistant_1"
    assert [part["type"] for part in assistant["parts"]] == [
        "step-start",
        "reasoning",
        "tool-getWeather",
        "tool-lookup",
        "step-start",
        "text",
        "tool-getForecast",
    ]
    assert assistant["parts"][3]["state"] == "output-error"


@pytest.mark.parametrize(
    "name",
    [
        "pydantic_ai_run.json",
        "openai_chat.json",
        "anthropic_messages.json",
        "gemini_rest.json",
        "ai_sdk_ui_messages.json",
        "chatgpt_conversations.json",
        "threadprotocol_example.json",
    ],
)
def test_every_export_of_every_fixture_reads_back_with_its_own_importer(name: str) -> None:
    document = load(name)
    key = detect_format(document)
    assert key is not None
    importer = FORMATS[key].importer
    assert importer is not None
    for thread in importer(document):
        for target, spec in FORMATS.items():
            if spec.exporter is None:
                continue
            exported = through_json(spec.exporter(thread))
            if spec.importer is not None:
                assert spec.importer(exported), target
            else:
                assert isinstance(exported, str) and exported.startswith("# ")
