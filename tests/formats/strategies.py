"""Hypothesis strategies for canonical threads, shaped by what a format can carry."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from transcripts.formats.document import TreeThread, make_message
from transcripts.times import epoch_to_iso

NAMES = st.from_regex(r"[a-zA-Z][a-zA-Z0-9_]{0,12}", fullmatch=True)
TEXT = st.text(min_size=1, max_size=40)
JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text(max_size=20)
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)
JSON_OBJECTS = st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=4)


@dataclass(frozen=True)
class Features:
    """What the generated threads may contain."""

    reasoning: bool = True
    signatures: bool = True
    user_files: tuple[str, ...] = ("image/png", "application/pdf")
    url_files: bool = True
    assistant_files: bool = False
    any_tool_input: bool = False
    errors: bool = True
    timestamps: bool = True
    metadata: bool = True
    extra_metadata: dict[str, Any] = field(default_factory=dict)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@st.composite
def file_parts(draw: st.DrawFn, mimes: tuple[str, ...], url_files: bool) -> dict[str, Any]:
    """A file part with a data URL (or an https URL when allowed)."""
    mime = draw(st.sampled_from(mimes))
    if url_files and draw(st.booleans()):
        url = f"https://example.com/{draw(NAMES)}"
    else:
        url = f"data:{mime};base64,{_b64(draw(st.binary(min_size=1, max_size=12)))}"
    part = {"type": "file", "mimeType": mime, "url": url}
    if draw(st.booleans()):
        part["name"] = draw(NAMES) + ".bin"
    return part


@st.composite
def linear_threads(draw: st.DrawFn, features: Features = Features()) -> TreeThread:
    """A valid linear thread: system?, then user turns with assistant steps and tool results."""
    messages: list[dict[str, Any]] = []
    clock = [1_700_000_000]
    calls = [0]

    def stamp() -> str | None:
        if not features.timestamps or not draw(st.booleans()):
            return None
        clock[0] += draw(st.integers(min_value=0, max_value=5000))
        return epoch_to_iso(clock[0])

    def add(role: str, parts: list[dict[str, Any]], metadata: dict[str, Any] | None = None) -> None:
        key = f"k{len(messages)}"
        parent = messages[-1]["id"] if messages else None
        messages.append(make_message(key, parent, role, parts, stamp(), metadata))

    if draw(st.booleans()):
        add(
            "system",
            [{"type": "text", "text": t} for t in draw(st.lists(TEXT, min_size=1, max_size=2))],
        )
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        user: list[dict[str, Any]] = [{"type": "text", "text": draw(TEXT)}]
        if features.user_files:
            user += draw(st.lists(file_parts(features.user_files, features.url_files), max_size=2))
        add("user", draw(st.permutations(user)))
        steps = draw(st.integers(min_value=1, max_value=3))
        for step in range(steps):
            last = step == steps - 1
            parts: list[dict[str, Any]] = []
            if features.reasoning and draw(st.booleans()):
                reasoning = {"type": "reasoning", "text": draw(TEXT)}
                if features.signatures and draw(st.booleans()):
                    reasoning["signature"] = draw(NAMES)
                parts.append(reasoning)
            parts.append({"type": "text", "text": draw(TEXT)})
            if features.assistant_files and draw(st.booleans()):
                parts.append(draw(file_parts(("image/png",), False)))
            tool_calls = []
            if not last:
                for _ in range(draw(st.integers(min_value=1, max_value=2))):
                    calls[0] += 1
                    tool_input = draw(JSON_VALUES if features.any_tool_input else JSON_OBJECTS)
                    tool_calls.append(
                        {
                            "type": "tool-call",
                            "toolCallId": f"call_{calls[0]}",
                            "toolName": draw(NAMES),
                            "input": tool_input,
                        }
                    )
            metadata: dict[str, Any] = {}
            if features.metadata:
                if draw(st.booleans()):
                    metadata["agentId"] = draw(NAMES)
                if draw(st.booleans()):
                    metadata["model"] = draw(NAMES)
                if draw(st.booleans()):
                    metadata["finishReason"] = "tool_call" if tool_calls else "stop"
                if draw(st.booleans()):
                    usage_in = draw(st.integers(min_value=0, max_value=10_000))
                    usage_out = draw(st.integers(min_value=0, max_value=10_000))
                    metadata["usage"] = {
                        "inputTokens": usage_in,
                        "outputTokens": usage_out,
                        "totalTokens": usage_in + usage_out,
                    }
            add("assistant", parts + tool_calls, metadata)
            if tool_calls:
                results = [
                    {
                        "type": "tool-result",
                        "toolCallId": call["toolCallId"],
                        "toolName": call["toolName"],
                        "output": draw(JSON_VALUES),
                        "isError": features.errors and draw(st.booleans()),
                    }
                    for call in tool_calls
                ]
                add("tool", results)
    return TreeThread(
        title=draw(st.text(max_size=20)),
        messages=messages,
        active_leaf=messages[-1]["id"],
    )


@st.composite
def tree_threads(draw: st.DrawFn) -> TreeThread:
    """A branched thread with thread fields and runs set, for lossless formats."""
    base = draw(linear_threads())
    messages = base.messages
    # Re-parent some messages onto any earlier one to make branches.
    for index in range(1, len(messages)):
        if draw(st.integers(min_value=0, max_value=3)) == 0:
            messages[index]["parentMessageId"] = messages[draw(st.integers(0, index - 1))]["id"]
    messages[0]["parentMessageId"] = None
    return TreeThread(
        title=base.title,
        messages=messages,
        active_leaf=draw(st.sampled_from([m["id"] for m in messages] + [None])),
        metadata=draw(JSON_OBJECTS),
        agents={"a1": {"agent_id": "a1", "agent_identifier": "a1", "agent_name": "A"}},
        id=draw(st.none() | NAMES),
        parent_thread_id=draw(st.none() | NAMES),
        created_at=draw(st.none() | st.just("2024-01-01T00:00:00Z")),
        updated_at=draw(st.none() | st.just("2024-01-02T00:00:00Z")),
        runs=draw(st.lists(JSON_OBJECTS.map(_free_fields), max_size=2)),
    )


# What an importer reads of a run (and checks: e.g. `usage` is an object); a generated run
# holds the other, free fields, which a lossless format keeps as they are.
RUN_FIELDS = frozenset(
    ("createdAt", "error", "events", "finishedAt", "forkFromMessageId", "generator", "id",
     "messageIds", "metadata", "model", "parameters", "status", "supersededBy", "usage")
)  # fmt: skip


def _free_fields(run: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in run.items() if key not in RUN_FIELDS}


json_documents = st.recursive(
    JSON_LEAVES,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "messages",
                    "role",
                    "content",
                    "parts",
                    "type",
                    "text",
                    "id",
                    "kind",
                    "part_kind",
                    "mapping",
                    "message",
                    "author",
                    "actions",
                    "version",
                    "contents",
                    "system",
                    "format",
                    "thread",
                    "conversations",
                    "tool_calls",
                    "function",
                    "children",
                    "parent",
                    "current_node",
                    "state",
                    "toolCallId",
                    "sequence",
                    "action_type",
                    "timestamp",
                    "agents",
                    "source",
                    "functionCall",
                    "x",
                ]
            )
            | st.text(max_size=6),
            children,
            max_size=5,
        )
    ),
    max_leaves=25,
)
