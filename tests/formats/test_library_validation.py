"""Exports validate against the real SDKs' own types."""

from __future__ import annotations

import itertools
from typing import Any

import anthropic.types
import pydantic
from google.genai import types as genai_types
from hypothesis import HealthCheck, given, settings
from openai.types import chat
from pydantic_ai.messages import ModelMessagesTypeAdapter

from tests.formats.helpers import through_json
from tests.formats.strategies import Features, linear_threads
from transcripts.formats.anthropic import export_anthropic
from transcripts.formats.document import TreeThread
from transcripts.formats.gemini import export_gemini
from transcripts.formats.openai import export_openai
from transcripts.formats.pydantic_ai import export_pydantic_ai

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
OPENAI_MESSAGES = pydantic.TypeAdapter(list[chat.ChatCompletionMessageParam])
ANTHROPIC_MESSAGES = pydantic.TypeAdapter(list[anthropic.types.MessageParam])
ANTHROPIC_SYSTEM = pydantic.TypeAdapter(str | list[anthropic.types.TextBlockParam])


def keys_of(typed_dict: Any) -> set[str]:
    """Every key a TypedDict declares."""
    return set(typed_dict.__required_keys__ | typed_dict.__optional_keys__)


OPENAI_ROLES = {
    "system": chat.ChatCompletionSystemMessageParam,
    "developer": chat.ChatCompletionDeveloperMessageParam,
    "user": chat.ChatCompletionUserMessageParam,
    "assistant": chat.ChatCompletionAssistantMessageParam,
    "tool": chat.ChatCompletionToolMessageParam,
}
OPENAI_PARTS = {
    "text": chat.ChatCompletionContentPartTextParam,
    "image_url": chat.ChatCompletionContentPartImageParam,
    "input_audio": chat.ChatCompletionContentPartInputAudioParam,
    "file": chat.chat_completion_content_part_param.File,
}
ANTHROPIC_BLOCKS = {
    "text": anthropic.types.TextBlockParam,
    "image": anthropic.types.ImageBlockParam,
    "document": anthropic.types.DocumentBlockParam,
    "tool_use": anthropic.types.ToolUseBlockParam,
    "tool_result": anthropic.types.ToolResultBlockParam,
    "thinking": anthropic.types.ThinkingBlockParam,
    "redacted_thinking": anthropic.types.RedactedThinkingBlockParam,
}


def assert_openai_keys_declared(messages: list[dict[str, Any]]) -> None:
    """TypedDict validation ignores unknown keys, so check them against the SDK's declarations."""
    for message in messages:
        assert set(message) <= keys_of(OPENAI_ROLES[message["role"]])
        if isinstance(message.get("content"), list):
            for part in message["content"]:
                assert set(part) <= keys_of(OPENAI_PARTS[part["type"]])


def assert_anthropic_keys_declared(messages: list[dict[str, Any]]) -> None:
    """Every turn and block key is one the SDK declares."""
    for turn in messages:
        turn_type = {
            "user": anthropic.types.UserMessageParam,
            "assistant": anthropic.types.AssistantMessageParam,
        }[turn["role"]]
        assert set(turn) <= keys_of(turn_type)
        for block in turn["content"]:
            assert set(block) <= keys_of(ANTHROPIC_BLOCKS[block["type"]])


@SETTINGS
@given(linear_threads(Features(user_files=("image/png", "application/pdf", "audio/wav"))))
def test_openai_export_validates_as_chat_completion_messages(thread: TreeThread) -> None:
    body = through_json(export_openai(thread))
    OPENAI_MESSAGES.validate_python(body["messages"])
    assert_openai_keys_declared(body["messages"])


@SETTINGS
@given(linear_threads(Features(user_files=("image/png", "application/pdf"), assistant_files=True)))
def test_anthropic_export_validates_as_message_params(thread: TreeThread) -> None:
    body = through_json(export_anthropic(thread))
    ANTHROPIC_MESSAGES.validate_python(body["messages"])
    assert_anthropic_keys_declared(body["messages"])
    if "system" in body:
        ANTHROPIC_SYSTEM.validate_python(body["system"])
    roles = [turn["role"] for turn in body["messages"]]
    assert all(a != b for a, b in itertools.pairwise(roles)), "turns must alternate"


@SETTINGS
@given(linear_threads(Features(assistant_files=True)))
def test_gemini_export_validates_as_genai_contents(thread: TreeThread) -> None:
    body = through_json(export_gemini(thread))
    for content in body["contents"]:
        model = genai_types.Content.model_validate(content)
        assert model.role in ("user", "model")
        assert len(model.parts or []) == len(content["parts"])
    if "systemInstruction" in body:
        genai_types.Content.model_validate(body["systemInstruction"])


@SETTINGS
@given(linear_threads(Features(assistant_files=True, any_tool_input=True)))
def test_pydantic_ai_export_validates_with_model_messages_type_adapter(thread: TreeThread) -> None:
    exported = through_json(export_pydantic_ai(thread))
    messages = ModelMessagesTypeAdapter.validate_python(exported)
    assert len(messages) == len(exported)
    ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(messages))
