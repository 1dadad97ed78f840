"""Canonical → format → canonical gives the same content, modulo each format's normalisations."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings

from tests.formats.helpers import (
    data_mime,
    drop_parts,
    keep_metadata,
    messages_of,
    no_timestamps,
    rekeyed,
    stringify_outputs,
    through_json,
    without_extra,
)
from tests.formats.strategies import Features, linear_threads, tree_threads
from transcripts.formats import FORMATS
from transcripts.formats.canonical import export_canonical, import_canonical
from transcripts.formats.document import TreeThread

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
Messages = list[dict[str, Any]]


def round_trip(key: str, thread: TreeThread) -> Messages:
    """Messages of the thread after export to the format, JSON text, and import."""
    spec = FORMATS[key]
    assert spec.exporter is not None and spec.importer is not None
    threads = spec.importer(through_json(spec.exporter(thread)))
    assert len(threads) == 1
    imported = threads[0]
    assert imported.active_leaf == (imported.messages[-1]["id"] if imported.messages else None)
    return imported.messages


def check(key: str, thread: TreeThread, normalize: Callable[[Messages], None], *extra: str) -> None:
    """The round trip equals the normalised original."""
    expected = messages_of(thread)
    normalize(expected)
    got = without_extra(round_trip(key, thread), *extra)
    assert rekeyed(got) == rekeyed(expected)


@SETTINGS
@given(tree_threads())
def test_canonical_round_trip_is_exact(thread: TreeThread) -> None:
    assert import_canonical(through_json(export_canonical(thread))) == [thread]


OPENAI_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def normalize_openai(messages: Messages) -> None:
    """No reasoning, ids, timestamps or metadata but agentId; outputs as text; no error flag."""
    drop_parts(messages, "reasoning")
    drop_parts(messages, "file", ("assistant", "tool"))
    keep_metadata(messages, ("agentId",))
    no_timestamps(messages)
    stringify_outputs(messages)
    for message in messages:
        parts = message["parts"]
        if message["role"] == "assistant":
            message["parts"] = [p for p in parts if p["type"] == "text"] + [
                p for p in parts if p["type"] == "tool-call"
            ]
        for part in parts:
            if part["type"] == "tool-result":
                part["isError"] = False
            if part["type"] == "file" and part["mimeType"].startswith("image/"):
                part.pop("name", None)
                part["mimeType"] = data_mime(part["url"], "image/*")
            elif part["type"] == "file":
                part["mimeType"] = data_mime(part["url"], "application/octet-stream")


@SETTINGS
@given(linear_threads(Features(user_files=("image/png", "application/pdf", "text/csv"))))
def test_openai_round_trip(thread: TreeThread) -> None:
    check("openai", thread, normalize_openai, "openai")


def normalize_anthropic(messages: Messages) -> None:
    """System texts joined; no ids, timestamps, metadata, image names; outputs as text."""
    keep_metadata(messages, ())
    no_timestamps(messages)
    stringify_outputs(messages)
    drop_parts(messages, "file", ("assistant",))
    for message in messages:
        if message["role"] == "system":
            joined = "\n\n".join(p["text"] for p in message["parts"])
            message["parts"] = [{"type": "text", "text": joined}]
        for part in message["parts"]:
            if part["type"] == "file" and part["mimeType"].startswith("image/"):
                part.pop("name", None)
                part["mimeType"] = data_mime(part["url"], "image/*")


@SETTINGS
@given(linear_threads(Features(user_files=("image/png", "image/jpeg", "application/pdf"))))
def test_anthropic_round_trip(thread: TreeThread) -> None:
    check("anthropic", thread, normalize_anthropic, "claude")


def normalize_gemini(messages: Messages) -> None:
    """No ids, timestamps, metadata, file names or reasoning signatures."""
    keep_metadata(messages, ())
    no_timestamps(messages)
    for message in messages:
        for part in message["parts"]:
            part.pop("name", None)
            if part["type"] == "reasoning":
                part.pop("signature", None)


@SETTINGS
@given(linear_threads(Features(assistant_files=True)))
def test_gemini_round_trip(thread: TreeThread) -> None:
    check("gemini", thread, normalize_gemini, "gemini")


def normalize_pydantic_ai(messages: Messages) -> None:
    """No agentId, file names, or assistant files that are not inline."""
    keep_metadata(messages, ("model", "finishReason", "usage"))
    for message in messages:
        finish = message["metadata"].get("finishReason")
        if finish is not None and finish not in ("stop", "length", "content_filter", "tool_call"):
            del message["metadata"]["finishReason"]
        for part in message["parts"]:
            part.pop("name", None)


@SETTINGS
@given(linear_threads(Features(assistant_files=True, any_tool_input=True)))
def test_pydantic_ai_round_trip(thread: TreeThread) -> None:
    check("pydantic-ai", thread, normalize_pydantic_ai, "pydantic_ai")


@SETTINGS
@given(linear_threads(Features(assistant_files=True, any_tool_input=True)))
def test_ai_sdk_round_trip(thread: TreeThread) -> None:
    # Only error outputs change: errorText is text.
    expected = messages_of(thread)
    stringify_outputs(expected, errors_too=True)
    for original, message in zip(thread.messages, expected, strict=True):
        for before, after in zip(original["parts"], message["parts"], strict=True):
            if before["type"] == "tool-result" and not before["isError"]:
                after["output"] = before["output"]
    got = without_extra(round_trip("ai-sdk", thread), "ai_sdk")
    assert rekeyed(got) == rekeyed(expected)
