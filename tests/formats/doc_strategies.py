"""Hypothesis strategies for documents in each format, as the providers' own SDKs write them.

Each strategy draws a document the format defines (checked against the official package
types in test_round_trip_law.py), for the law export(import(doc)) == doc. The agent
frameworks' formats (Pydantic AI, AI SDK) are in doc_strategies_agents.py.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from hypothesis import strategies as st

from tests.formats.helpers import through_json
from tests.formats.strategies import JSON_OBJECTS, JSON_VALUES, NAMES, tree_threads
from transcripts.formats.canonical import export_canonical

TEXT = st.text(min_size=1, max_size=30)
IDS = st.from_regex(r"[a-zA-Z0-9_-]{1,16}", fullmatch=True)
B64 = st.binary(min_size=1, max_size=12).map(lambda data: base64.b64encode(data).decode())
# Names the OpenAI API accepts for `name` and for function names.
OPENAI_NAMES = st.from_regex(r"[A-Za-z0-9_-]{1,20}", fullmatch=True)


def counter() -> Any:
    """Ids call_1, call_2, … unique within one document."""
    state = [0]

    def next_id() -> str:
        state[0] += 1
        return f"call_{state[0]}"

    return next_id


# --- canonical -----------------------------------------------------------------------------


canonical_documents = tree_threads().map(lambda thread: through_json(export_canonical(thread)))


# --- OpenAI Chat Completions ---------------------------------------------------------------


@st.composite
def openai_user_part(draw: st.DrawFn) -> dict[str, Any]:
    """A content part of a user message."""
    kind = draw(st.sampled_from(["text", "image_url", "input_audio", "file", "file_id"]))
    if kind == "text":
        return {"type": "text", "text": draw(TEXT)}
    if kind == "image_url":
        url = draw(
            st.sampled_from(["https://example.com/a.png"])
            | B64.map(lambda data: f"data:image/png;base64,{data}")
        )
        image: dict[str, Any] = {"url": url}
        if draw(st.booleans()):
            image["detail"] = draw(st.sampled_from(["auto", "low", "high"]))
        return {"type": "image_url", "image_url": image}
    if kind == "input_audio":
        fmt = draw(st.sampled_from(["wav", "mp3"]))
        return {"type": "input_audio", "input_audio": {"data": draw(B64), "format": fmt}}
    file: dict[str, Any] = (
        {"file_id": f"file-{draw(IDS)}"}
        if kind == "file_id"
        else {"file_data": f"data:application/pdf;base64,{draw(B64)}"}
    )
    if draw(st.booleans()):
        file["filename"] = draw(NAMES) + ".pdf"
    return {"type": "file", "file": file}


def text_content(draw: st.DrawFn, *, refusals: bool = False) -> str | list[dict[str, Any]]:
    """A string or a list of text (and refusal) parts."""
    if draw(st.booleans()):
        return draw(TEXT)
    parts: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(min_value=1, max_value=2))):
        if refusals and draw(st.booleans()):
            parts.append({"type": "refusal", "refusal": draw(TEXT)})
        else:
            parts.append({"type": "text", "text": draw(TEXT)})
    return parts


def with_name(draw: st.DrawFn, message: dict[str, Any]) -> dict[str, Any]:
    """The message, with a participant name sometimes."""
    if draw(st.booleans()):
        message["name"] = draw(OPENAI_NAMES)
    return message


@st.composite
def openai_documents(draw: st.DrawFn) -> dict[str, Any]:
    """A Chat Completions request body: system?, then user turns and assistant steps."""
    next_id = counter()
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        role = draw(st.sampled_from(["system", "developer"]))
        messages.append(with_name(draw, {"role": role, "content": text_content(draw)}))
    for _ in range(draw(st.integers(min_value=1, max_value=2))):
        content: Any = (
            draw(TEXT)
            if draw(st.booleans())
            else draw(st.lists(openai_user_part(), min_size=1, max_size=3))
        )
        messages.append(with_name(draw, {"role": "user", "content": content}))
        for _ in range(draw(st.integers(min_value=1, max_value=2))):
            assistant: dict[str, Any] = {"role": "assistant"}
            calls = [
                {
                    "id": next_id(),
                    "type": "function",
                    "function": {
                        "name": draw(OPENAI_NAMES),
                        "arguments": draw(
                            JSON_OBJECTS.map(through_json).map(lambda v: json.dumps(v))
                            | st.sampled_from(['{"a": 1}', "{ }", "{}"])
                        ),
                    },
                }
                for _ in range(draw(st.integers(min_value=0, max_value=2)))
            ]
            shape = draw(st.sampled_from(["text", "list", "null", "absent", "empty"]))
            if shape == "text" or (not calls and shape != "list"):
                assistant["content"] = draw(TEXT)
            elif shape == "list":
                assistant["content"] = text_content(draw, refusals=True)
            elif shape == "null":
                assistant["content"] = None
            elif shape == "empty":
                assistant["content"] = ""
            if draw(st.integers(min_value=0, max_value=4)) == 0:
                assistant["refusal"] = draw(TEXT)
            if draw(st.integers(min_value=0, max_value=4)) == 0:
                assistant["audio"] = {"id": f"audio_{draw(IDS)}"}
            if calls:
                assistant["tool_calls"] = calls
            messages.append(with_name(draw, assistant))
            for call in calls:
                messages.append(
                    {"role": "tool", "tool_call_id": call["id"], "content": text_content(draw)}
                )
    body: dict[str, Any] = {"messages": messages}
    if draw(st.booleans()):
        body["model"] = draw(NAMES)
    if draw(st.booleans()):
        body["temperature"] = draw(st.floats(min_value=0, max_value=2))
    return body


# --- Anthropic Messages --------------------------------------------------------------------


@st.composite
def anthropic_user_block(draw: st.DrawFn) -> dict[str, Any]:
    """A text, image or document block of a user turn."""
    kind = draw(st.sampled_from(["text", "image", "image_url", "pdf", "pdf_url"]))
    block: dict[str, Any]
    if kind == "text":
        block = {"type": "text", "text": draw(TEXT)}
    elif kind == "image":
        mime = draw(st.sampled_from(["image/png", "image/jpeg"]))
        block = {
            "type": "image",
            "source": {"type": "base64", "media_type": mime, "data": draw(B64)},
        }
    elif kind == "image_url":
        block = {"type": "image", "source": {"type": "url", "url": "https://example.com/i.png"}}
    else:
        source: dict[str, Any] = (
            {"type": "base64", "media_type": "application/pdf", "data": draw(B64)}
            if kind == "pdf"
            else {"type": "url", "url": "https://example.com/d.pdf"}
        )
        block = {"type": "document", "source": source}
        if draw(st.booleans()):
            block["title"] = draw(TEXT)
    if draw(st.integers(min_value=0, max_value=4)) == 0:
        block["cache_control"] = {"type": "ephemeral"}
    return block


@st.composite
def anthropic_tool_result(draw: st.DrawFn, call_id: str) -> dict[str, Any]:
    """A tool_result block answering call_id."""
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id}
    shape = draw(st.sampled_from(["text", "blocks", "absent"]))
    if shape == "text":
        block["content"] = draw(st.text(max_size=20))
    elif shape == "blocks":
        block["content"] = [
            {"type": "text", "text": text} for text in draw(st.lists(TEXT, min_size=1, max_size=2))
        ]
    if draw(st.booleans()):
        block["is_error"] = draw(st.booleans())
    return block


@st.composite
def anthropic_assistant_blocks(draw: st.DrawFn, next_id: Any) -> list[dict[str, Any]]:
    """An assistant turn: thinking (signed or redacted), text and tool_use blocks."""
    blocks: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(min_value=0, max_value=2))):
        if draw(st.booleans()):
            blocks.append({"type": "thinking", "thinking": draw(TEXT), "signature": draw(B64)})
        else:
            blocks.append({"type": "redacted_thinking", "data": draw(B64)})
    if draw(st.booleans()):
        blocks.append({"type": "text", "text": draw(TEXT)})
    if draw(st.integers(min_value=0, max_value=3)) == 0:
        # A server tool: Anthropic runs it and answers in the same turn.
        search = {"type": "server_tool_use", "id": f"srv{next_id()}", "name": "web_search"}
        blocks.append({**search, "input": {"query": draw(TEXT)}})
        hit = {"type": "web_search_result", "title": draw(TEXT), "url": "https://example.com/"}
        hit["encrypted_content"] = draw(B64)
        blocks.append(
            {"type": "web_search_tool_result", "tool_use_id": search["id"], "content": [hit]}
        )
    for _ in range(draw(st.integers(min_value=0, max_value=2))):
        blocks.append(
            {"type": "tool_use", "id": next_id(), "name": draw(NAMES), "input": draw(JSON_OBJECTS)}
        )
    if not blocks:
        blocks.append({"type": "text", "text": draw(TEXT)})
    return blocks


@st.composite
def anthropic_documents(draw: st.DrawFn) -> dict[str, Any]:
    """A Messages API request body with alternating user and assistant turns."""
    next_id = counter()
    turns: list[dict[str, Any]] = []
    pending: list[str] = []
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        user: list[dict[str, Any]] = [draw(anthropic_tool_result(call)) for call in pending]
        user += draw(st.lists(anthropic_user_block(), min_size=0 if pending else 1, max_size=2))
        content: Any = user
        if not pending and len(user) == 1 and set(user[0]) == {"type", "text"}:
            content = draw(st.sampled_from([user, user[0]["text"]]))
        turns.append({"role": "user", "content": content})
        blocks = draw(anthropic_assistant_blocks(next_id))
        pending = [block["id"] for block in blocks if block["type"] == "tool_use"]
        plain = len(blocks) == 1 and blocks[0]["type"] == "text"
        turns.append(
            {
                "role": "assistant",
                "content": blocks[0]["text"] if plain and draw(st.booleans()) else blocks,
            }
        )
    body: dict[str, Any] = {"messages": turns}
    if draw(st.booleans()):
        body["system"] = (
            draw(TEXT)
            if draw(st.booleans())
            else [{"type": "text", "text": t} for t in draw(st.lists(TEXT, min_size=1, max_size=2))]
        )
    if draw(st.booleans()):
        body["model"] = "claude-sonnet-4-5"
        body["max_tokens"] = draw(st.integers(min_value=1, max_value=64000))
    return body


# --- Gemini --------------------------------------------------------------------------------


def signed(draw: st.DrawFn, part: dict[str, Any]) -> dict[str, Any]:
    """The part, with a thought signature sometimes."""
    if draw(st.booleans()):
        part["thoughtSignature"] = draw(B64)
    return part


def gemini_call(draw: st.DrawFn, call_id: str | None) -> dict[str, Any]:
    """A functionCall, with an id when given one."""
    call: dict[str, Any] = {"name": draw(NAMES), "args": draw(JSON_OBJECTS)}
    if call_id is not None:
        call["id"] = call_id
    return call


@st.composite
def gemini_documents(draw: st.DrawFn) -> dict[str, Any]:
    """A generateContent body in REST camelCase, thoughts and thought signatures included."""
    next_id = counter()
    contents: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        parts: list[dict[str, Any]] = [{"text": draw(TEXT)}]
        if draw(st.booleans()):
            parts.append({"inlineData": {"mimeType": "image/png", "data": draw(B64)}})
        if draw(st.booleans()):
            parts.append(
                {"fileData": {"mimeType": "application/pdf", "fileUri": "gs://bucket/a.pdf"}}
            )
        contents.append({"role": "user", "parts": draw(st.permutations(parts))})
        model: list[dict[str, Any]] = []
        if draw(st.booleans()):
            model.append(signed(draw, {"text": draw(TEXT), "thought": True}))
        if draw(st.booleans()):
            model.append(signed(draw, {"text": draw(TEXT)}))
        # Gemini often sends calls without an id: the response then names the function only.
        with_ids = draw(st.booleans())
        calls = [
            signed(draw, {"functionCall": gemini_call(draw, next_id() if with_ids else None)})
            for _ in range(draw(st.integers(min_value=0, max_value=2)))
        ]
        if draw(st.integers(min_value=0, max_value=3)) == 0:
            model.append({"executableCode": {"language": "PYTHON", "code": draw(TEXT)}})
            outcome = draw(st.sampled_from(["OUTCOME_OK", "OUTCOME_FAILED"]))
            model.append({"codeExecutionResult": {"outcome": outcome, "output": draw(TEXT)}})
        contents.append({"role": "model", "parts": model + calls or [{"text": draw(TEXT)}]})
        if calls:
            responses = [
                {
                    "functionResponse": {
                        **{k: v for k, v in call["functionCall"].items() if k != "args"},
                        "response": {draw(st.sampled_from(["output", "error"])): draw(JSON_VALUES)},
                    }
                }
                for call in calls
            ]
            contents.append({"role": "user", "parts": responses})
            contents.append({"role": "model", "parts": [{"text": draw(TEXT)}]})
    body: dict[str, Any] = {"contents": contents}
    if draw(st.booleans()):
        body["systemInstruction"] = {"parts": [{"text": draw(TEXT)}]}
    if draw(st.booleans()):
        body["generationConfig"] = {"temperature": 0.5}
    return body
