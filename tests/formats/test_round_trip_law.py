"""export(import(doc)) == doc for documents in each format (key order aside)."""

from __future__ import annotations

from typing import Any

import anthropic.types
import pydantic
from google.genai import types as genai_types
from hypothesis import HealthCheck, given, settings
from openai.types import chat
from pydantic_ai.messages import ModelMessagesTypeAdapter

from tests.formats.doc_strategies import (
    anthropic_documents,
    canonical_documents,
    gemini_documents,
    openai_documents,
)
from tests.formats.doc_strategies_agents import ai_sdk_documents, pydantic_ai_documents
from tests.formats.helpers import through_json
from transcripts.formats import FORMATS

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
OPENAI_MESSAGES = pydantic.TypeAdapter(list[chat.ChatCompletionMessageParam])
ANTHROPIC_MESSAGES = pydantic.TypeAdapter(list[anthropic.types.MessageParam])
ANTHROPIC_SYSTEM = pydantic.TypeAdapter(str | list[anthropic.types.TextBlockParam])


def round_trip(key: str, document: Any) -> Any:
    """The document imported, exported and written as JSON text again."""
    spec = FORMATS[key]
    assert spec.importer is not None and spec.exporter is not None
    (thread,) = spec.importer(through_json(document))
    return through_json(spec.exporter(thread))


@SETTINGS
@given(canonical_documents)
def test_a_canonical_document_comes_back_exactly(document: dict[str, Any]) -> None:
    assert round_trip("canonical", document) == document


@SETTINGS
@given(openai_documents())
def test_an_openai_request_body_comes_back_exactly(document: dict[str, Any]) -> None:
    OPENAI_MESSAGES.validate_python(document["messages"])
    assert round_trip("openai", document) == document


@SETTINGS
@given(anthropic_documents())
def test_an_anthropic_request_body_comes_back_exactly(document: dict[str, Any]) -> None:
    ANTHROPIC_MESSAGES.validate_python(document["messages"])
    if "system" in document:
        ANTHROPIC_SYSTEM.validate_python(document["system"])
    assert round_trip("anthropic", document) == document


@SETTINGS
@given(gemini_documents())
def test_a_gemini_request_body_comes_back_exactly(document: dict[str, Any]) -> None:
    for content in document["contents"]:
        genai_types.Content.model_validate(content)
    assert round_trip("gemini", document) == document


@SETTINGS
@given(pydantic_ai_documents())
def test_a_pydantic_ai_history_comes_back_exactly(document: list[dict[str, Any]]) -> None:
    ModelMessagesTypeAdapter.validate_python(document)
    assert round_trip("pydantic-ai", document) == document


@SETTINGS
@given(ai_sdk_documents())
def test_ai_sdk_ui_messages_come_back_exactly(document: list[dict[str, Any]]) -> None:
    assert round_trip("ai-sdk", document) == document
