"""Events → UI message chunks (formats/ai_sdk/chat_stream.UiChunker), without a database: the
chunks form a stream the AI SDK's reader accepts, name the answer by its stored id, and give
back what a real AI SDK stream stored through the adapter carried."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api.conftest import FIXTURES
from transcripts.formats.ai_sdk.chat_stream import UiChunker
from transcripts.formats.ai_sdk.stream import to_events
from transcripts.ids import new_ulid
from transcripts.projector import project


def chunks_of(
    events: list[tuple[str, dict[str, Any]]], *, status: str = "committed", error: Any = None
) -> tuple[list[dict[str, Any]], str]:
    """The chunks of a run holding events that ended with status; and the run's id."""
    run_id = new_ulid()
    chunker = UiChunker(run_id=run_id, parent_id=None)
    out: list[dict[str, Any]] = []
    for seq, (kind, data) in enumerate(events, start=1):
        out += chunker.event(seq=seq, kind=kind, data=data, at=None)
    return out + chunker.end(status=status, error=error), run_id


def assert_readable(chunks: list[dict[str, Any]]) -> None:
    """What the AI SDK's processUIMessageStream demands of a stream."""
    assert chunks[0]["type"] == "start"
    assert [c["type"] for c in chunks].count("start") == 1
    open_parts: set[str] = set()
    calls: set[str] = set()
    for chunk in chunks:
        kind = chunk["type"]
        if kind in ("text-start", "reasoning-start"):
            assert chunk["id"] not in open_parts
            open_parts.add(chunk["id"])
        elif kind in ("text-delta", "reasoning-delta"):
            assert chunk["id"] in open_parts and isinstance(chunk["delta"], str)
        elif kind in ("text-end", "reasoning-end"):
            open_parts.remove(chunk["id"])
        elif kind in ("finish-step", "finish"):
            assert not open_parts  # a step's end forgets its open parts
        elif kind in ("tool-input-available", "tool-input-error"):
            assert isinstance(chunk["toolName"], str)
            calls.add(chunk["toolCallId"])
        elif kind.startswith("tool-output"):
            assert chunk["toolCallId"] in calls
    assert not open_parts


def parts(chunks: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The UIMessage content chunks amount to (ids, steps and metadata aside)."""
    texts: dict[str, list[str]] = {}
    out: list[tuple[Any, ...]] = []
    for chunk in chunks:
        kind = chunk["type"]
        if kind in ("text-start", "reasoning-start"):
            texts[chunk["id"]] = []
            out.append((kind.split("-")[0], texts[chunk["id"]]))
        elif kind in ("text-delta", "reasoning-delta"):
            texts[chunk["id"]].append(chunk["delta"])
        elif kind == "tool-input-available":
            out.append(("tool", chunk["toolCallId"], chunk["toolName"], chunk["input"]))
        elif kind == "tool-output-available":
            out.append(("output", chunk["toolCallId"], chunk["output"]))
        elif kind == "tool-output-error":
            out.append(("output-error", chunk["toolCallId"], chunk["errorText"]))
        elif kind == "file":
            out.append(("file", chunk["url"], chunk["mediaType"]))
        elif kind in ("source-url", "error") or kind.startswith("data-"):
            out.append((kind, {k: v for k, v in chunk.items() if k != "type"}))
    return [(p[0], "".join(p[1])) if isinstance(p[1], list) else p for p in out]


DEMO_RUN = [
    ("step-started", {}),
    ("reasoning", {"text": "The user asked "}),
    ("reasoning", {"text": "about locks."}),
    ("tool-call", {"toolCallId": "call_1", "toolName": "lookup", "input": {"term": "locks"}}),
    ("step-finished", {"finishReason": "tool-calls", "usage": {"outputTokens": 12}}),
    ("tool-result", {"toolCallId": "call_1", "toolName": "lookup", "output": {"found": True}}),
    ("step-started", {}),
    ("text-delta", {"delta": "Locks "}),
    ("text-delta", {"delta": "serialize."}),
    ("step-finished", {"finishReason": "stop", "usage": {"outputTokens": 2}}),
]


def test_a_generated_run_streams_as_its_parts_inside_a_start_and_a_finish():
    chunks, _ = chunks_of(DEMO_RUN)

    assert_readable(chunks)
    assert parts(chunks) == [
        ("reasoning", "The user asked about locks."),
        ("tool", "call_1", "lookup", {"term": "locks"}),
        ("output", "call_1", {"found": True}),
        ("text", "Locks serialize."),
    ]
    kinds = [c["type"] for c in chunks]
    assert kinds[:2] == ["start", "start-step"]
    assert kinds.count("start-step") == kinds.count("finish-step") == 2
    assert chunks[-1] == {"type": "finish", "finishReason": "stop"}


def test_the_start_chunk_names_the_answer_by_the_id_it_is_stored_under():
    chunks, run_id = chunks_of(DEMO_RUN)
    numbered = [{"seq": n, "kind": k, "data": d} for n, (k, d) in enumerate(DEMO_RUN, start=1)]

    stored = project(numbered, run_id=run_id).messages

    assert chunks[0] == {"type": "start", "messageId": stored[0]["id"]}
    again, _ = chunks_of(DEMO_RUN)
    assert again[0]["messageId"] != chunks[0]["messageId"]  # another run, another answer


def test_an_edited_user_message_in_the_run_is_not_streamed_back():
    edited = ("message", {"role": "user", "parts": [{"type": "text", "text": "Edited?"}]})
    chunks, run_id = chunks_of([edited, ("text-delta", {"delta": "Yes."})])

    assert parts(chunks) == [("text", "Yes.")]
    numbered = [
        {"seq": 1, "kind": edited[0], "data": edited[1]},
        {"seq": 2, "kind": "text-delta", "data": {"delta": "Yes."}},
    ]
    assert chunks[0]["messageId"] == project(numbered, run_id=run_id).messages[1]["id"]


@pytest.mark.parametrize(
    ("status", "error", "ending"),
    [
        (
            "failed",
            {"message": "the model refused", "code": "x"},
            [
                {"type": "error", "errorText": "the model refused"},
                {"type": "finish", "finishReason": "error"},
            ],
        ),
        ("cancelled", None, [{"type": "abort", "reason": "the run was cancelled"}]),
    ],
)
def test_a_failed_or_cancelled_run_ends_its_stream_saying_so(status, error, ending):
    streamed = [("step-started", {}), ("text-delta", {"delta": "Par"})]
    chunks, _ = chunks_of(streamed, status=status, error=error)

    assert chunks[-len(ending) :] == ending
    assert_readable(chunks)
    assert parts(chunks)[0] == ("text", "Par")  # what streamed before is kept


def test_a_stopped_answer_finishes_with_the_reason_in_its_metadata():
    stopped = ("step-finished", {"finishReason": "stopped"})  # what ledger.stop_run appends
    chunks, _ = chunks_of([("text-delta", {"delta": "Half"}), stopped])
    assert chunks[-1] == {
        "type": "finish",
        "finishReason": "other",
        "messageMetadata": {"finishReason": "stopped"},
    }


def test_a_run_that_answered_nothing_still_starts_and_finishes():
    chunks, _ = chunks_of([("step-started", {})], status="failed", error={"message": "boom"})

    assert chunks[0] == {"type": "start"}
    assert [c["type"] for c in chunks] == ["start", "start-step", "finish-step", "error", "finish"]


def test_a_result_whose_call_came_before_the_run_gets_a_part_of_its_own():
    result = {"toolCallId": "early", "toolName": "search", "output": "3 hits", "isError": False}
    chunks, _ = chunks_of([("tool-result", result)])

    assert_readable(chunks)
    assert chunks[1] == {
        "type": "tool-input-available",
        "toolCallId": "early",
        "toolName": "search",
        "input": None,
        "dynamic": True,
    }


@pytest.mark.parametrize("fixture", ["multi_step_tools", "tool_error_with_data", "model_error"])
def test_a_real_ai_sdk_stream_stored_through_the_adapter_streams_back_the_same_content(fixture):
    original = json.loads((FIXTURES / f"{fixture}.json").read_text())
    events = to_events(original, after_seq=0)

    chunks, _ = chunks_of([(e["kind"], e["data"]) for e in events])

    assert_readable(chunks)
    assert parts(chunks) == parts(original)


def test_a_signed_reasoning_part_keeps_its_signature_for_the_client():
    original = json.loads((FIXTURES / "multi_step_tools.json").read_text())
    chunks, _ = chunks_of([(e["kind"], e["data"]) for e in to_events(original, after_seq=0)])

    signed = [c for c in chunks if c["type"] == "reasoning-delta" and "providerMetadata" in c]
    assert signed[0]["providerMetadata"] == {"anthropic": {"signature": "sig-1"}}
