"""Hypothesis strategies for event sequences drawn from the v1 vocabulary."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import strategies as st

from transcripts.ids import derived_ulid

EPOCH_2027 = datetime(2027, 1, 15, 10, 0, tzinfo=UTC)
# Text PostgreSQL can store: no NUL, no lone surrogates (the ledger refuses those on append).
CHARS = st.characters(exclude_characters="\x00", exclude_categories=("Cs",))
TEXT = st.text(CHARS, max_size=12)
NAMES = st.sampled_from(["search", "get_forecast", "run_tests"])
CALL_IDS = st.sampled_from(["call_1", "call_2", "call_3"])
JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**31), max_value=2**31)
    | st.floats(min_value=-1e9, max_value=1e9, allow_nan=False)
    | st.text(CHARS, max_size=8)
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(CHARS, max_size=6), children, max_size=3)
    ),
    max_leaves=6,
)
# A few fixed ULIDs so message ids sometimes repeat inside one run.
MESSAGE_IDS = st.sampled_from([derived_ulid(1_700_000_000_000, n, "fixed") for n in range(3)])
USAGE = st.fixed_dictionaries(
    {},
    optional={
        "inputTokens": st.integers(0, 1000),
        "outputTokens": st.integers(0, 1000),
        "details": st.fixed_dictionaries({"cached": st.integers(0, 100)}),
    },
)
PARTS = st.lists(
    st.one_of(
        st.builds(lambda t: {"type": "text", "text": t}, TEXT),
        st.builds(lambda t: {"type": "reasoning", "text": t}, TEXT),
        st.builds(
            lambda c, n, i: {"type": "tool-call", "toolCallId": c, "toolName": n, "input": i},
            CALL_IDS,
            NAMES,
            JSON_VALUES,
        ),
    ),
    max_size=3,
)


def _drop_none(data: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if value is not None}


EVENT_DATA: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "message-start": st.builds(
        lambda role, message_id, agent, meta: _drop_none(
            {"role": role, "messageId": message_id, "agentId": agent, "metadata": meta}
        ),
        st.sampled_from(["user", "assistant", "system", "tool"]),
        st.none() | MESSAGE_IDS | st.just("msg_provider_1"),
        st.none() | st.sampled_from(["agent-a", "agent-b"]),
        st.none() | st.dictionaries(st.sampled_from(["k", "tag"]), JSON_LEAVES, max_size=2),
    ),
    "text-delta": st.builds(lambda d: {"delta": d}, TEXT),
    "reasoning": st.builds(
        lambda t, s: _drop_none({"text": t, "signature": s}),
        TEXT,
        st.none() | st.just("sig"),
    ),
    "tool-call": st.builds(
        lambda c, n, i: {"toolCallId": c, "toolName": n, "input": i}, CALL_IDS, NAMES, JSON_VALUES
    ),
    "tool-result": st.builds(
        lambda c, n, o, e: _drop_none({"toolCallId": c, "toolName": n, "output": o, "isError": e}),
        CALL_IDS,
        st.none() | NAMES,
        JSON_VALUES,
        st.booleans(),
    ),
    "file": st.builds(
        lambda n: _drop_none(
            {"mimeType": "image/png", "url": "https://example.com/a.png", "name": n}
        ),
        st.none() | st.just("a.png"),
    ),
    "step-started": st.just({}),
    "step-finished": st.builds(
        lambda r, u: _drop_none({"finishReason": r, "usage": u}),
        st.none() | st.sampled_from(["stop", "tool-calls"]),
        st.none() | USAGE,
    ),
    "error": st.builds(
        lambda m, c: _drop_none({"message": m, "code": c}), TEXT, st.none() | st.just("E1")
    ),
    "message": st.builds(
        lambda role, parts, message_id: _drop_none(
            {"role": role, "parts": parts, "id": message_id}
        ),
        st.sampled_from(["user", "assistant", "system"]),
        PARTS,
        st.none() | MESSAGE_IDS,
    ),
    "message-end": st.just({}),
    "data-progress": st.builds(lambda v: {"value": v}, JSON_VALUES),
}
# data-* and system.* events may carry any JSON value, not only objects.
ANY_DATA: dict[str, st.SearchStrategy[Any]] = {**EVENT_DATA, "system.notice": JSON_VALUES}

KIND_WEIGHTS = st.sampled_from(
    ["text-delta"] * 4 + ["reasoning"] * 2 + ["tool-call", "tool-result"] * 2 + list(ANY_DATA)
)


@st.composite
def event_sequences(
    draw: st.DrawFn, *, min_size: int = 0, max_size: int = 30
) -> list[dict[str, Any]]:
    """Events numbered from seq 1, with timestamps that mostly move forward."""
    kinds = draw(st.lists(KIND_WEIGHTS, min_size=min_size, max_size=max_size))
    moment = EPOCH_2027
    events: list[dict[str, Any]] = []
    for seq, kind in enumerate(kinds, start=1):
        moment += timedelta(milliseconds=draw(st.integers(-5, 50)))
        event: dict[str, Any] = {"seq": seq, "kind": kind, "data": draw(ANY_DATA[kind])}
        if draw(st.integers(0, 9)):
            event["at"] = moment.isoformat()
        events.append(event)
    return events
