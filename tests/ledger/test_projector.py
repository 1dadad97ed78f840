"""The projector on its own: events in, canonical messages out (no database)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.ledger.strategies import event_sequences
from transcripts.ids import derived_ulid, is_ulid, ulid_timestamp_ms
from transcripts.jsonvalue import object_of
from transcripts.projector import REDACTION_TEXT, Projection, Projector, project

RUN_ID = "01HZX3K5Q7R8S9T0V1W2X3Y4Z5"
OTHER_RUN_ID = "01HZX3K5Q7R8S9T0V1W2X3Y4Z6"
FORK_POINT = "01HZX3K5Q7R8S9T0V1W2X3Y400"
AT = "2026-11-21T10:00:00+00:00"


def ev(kind: str, **data: Any) -> tuple[str, dict[str, Any]]:
    return (kind, data)


def run(*items: tuple[str, Any], run_id: str = RUN_ID, **kwargs: Any) -> Projection:
    """Project (kind, data) pairs numbered from seq 1, all at the same moment."""
    events = [
        {"seq": seq, "kind": kind, "data": data, "at": AT}
        for seq, (kind, data) in enumerate(items, start=1)
    ]
    return project(events, run_id=run_id, **kwargs)


def roles(projection: Projection) -> list[str]:
    return [m["role"] for m in projection.messages]


def part_types(message: dict[str, Any]) -> list[str]:
    return [p["type"] for p in message["parts"]]


# --- content -------------------------------------------------------------------------------


def test_text_deltas_accumulate_into_one_text_part() -> None:
    result = run(
        ev("text-delta", delta="Hel"),
        ev("text-delta", delta="lo, "),
        ev("text-delta", delta="world"),
    )
    assert result.messages[0]["parts"] == [{"type": "text", "text": "Hello, world"}]


def test_text_and_reasoning_alternate_as_separate_parts_in_order() -> None:
    result = run(
        ev("reasoning", text="think "),
        ev("reasoning", text="hard"),
        ev("text-delta", delta="say "),
        ev("text-delta", delta="this"),
        ev("reasoning", text="again"),
        ev("text-delta", delta="done"),
    )
    assert result.messages[0]["parts"] == [
        {"type": "reasoning", "text": "think hard"},
        {"type": "text", "text": "say this"},
        {"type": "reasoning", "text": "again"},
        {"type": "text", "text": "done"},
    ]


def test_a_reasoning_signature_is_kept_on_its_part_and_closes_it() -> None:
    result = run(
        ev("reasoning", text="a "),
        ev("reasoning", text="b", signature="sig-1"),
        ev("reasoning", text="c"),
        ev("reasoning", text="", signature="sig-2"),
    )
    assert result.messages[0]["parts"] == [
        {"type": "reasoning", "text": "a b", "signature": "sig-1"},
        {"type": "reasoning", "text": "c", "signature": "sig-2"},
    ]


def test_content_without_message_start_opens_an_assistant_message() -> None:
    result = run(ev("text-delta", delta="hi"))
    assert roles(result) == ["assistant"]
    assert result.open


def test_a_tool_call_is_a_part_of_the_assistant_message() -> None:
    result = run(
        ev("text-delta", delta="Let me check."),
        ev("tool-call", toolCallId="call_1", toolName="search", input={"q": "x"}),
    )
    assert result.messages[0]["parts"][1] == {
        "type": "tool-call",
        "toolCallId": "call_1",
        "toolName": "search",
        "input": {"q": "x"},
    }


def test_a_tool_result_opens_a_tool_message_and_the_next_content_opens_a_new_assistant_one() -> (
    None
):
    result = run(
        ev("tool-call", toolCallId="call_1", toolName="search", input={}),
        ev("tool-result", toolCallId="call_1", toolName="search", output="42", isError=False),
        ev("text-delta", delta="It is 42."),
    )
    assert roles(result) == ["assistant", "tool", "assistant"]
    assert result.messages[1]["parts"] == [
        {
            "type": "tool-result",
            "toolCallId": "call_1",
            "toolName": "search",
            "output": "42",
            "isError": False,
        }
    ]
    assert result.messages[2]["parts"] == [{"type": "text", "text": "It is 42."}]


def test_several_tool_results_share_one_tool_message() -> None:
    result = run(
        ev("tool-call", toolCallId="a", toolName="one", input=None),
        ev("tool-call", toolCallId="b", toolName="two", input=None),
        ev("tool-result", toolCallId="a", output=1, isError=False),
        ev("tool-result", toolCallId="b", output=2, isError=True),
    )
    assert roles(result) == ["assistant", "tool"]
    tool = result.messages[1]
    assert [(p["toolCallId"], p["toolName"], p["output"], p["isError"]) for p in tool["parts"]] == [
        ("a", "one", 1, False),
        ("b", "two", 2, True),
    ]


def test_a_file_event_is_a_file_part() -> None:
    result = run(
        ev("file", mimeType="image/png", url="https://example.com/a.png", name="a.png"),
        ev("file", mimeType="text/plain", url="data:text/plain;base64,aGk="),
    )
    assert result.messages[0]["parts"] == [
        {
            "type": "file",
            "mimeType": "image/png",
            "url": "https://example.com/a.png",
            "name": "a.png",
        },
        {"type": "file", "mimeType": "text/plain", "url": "data:text/plain;base64,aGk="},
    ]


# --- message boundaries ----------------------------------------------------------------------


def test_message_start_sets_the_role_agent_and_metadata() -> None:
    result = run(
        ev("message-start", role="user", agentId="agent-planner", metadata={"lang": "en"}),
        ev("text-delta", delta="Hi"),
    )
    message = result.messages[0]
    assert message["role"] == "user"
    assert message["parts"] == [{"type": "text", "text": "Hi"}]
    assert message["metadata"] == {"schemaVersion": 1, "lang": "en", "agentId": "agent-planner"}


def test_message_start_cannot_override_the_schema_version() -> None:
    result = run(ev("message-start", role="assistant", metadata={"schemaVersion": 99}))
    assert result.messages[0]["metadata"]["schemaVersion"] == 1


def test_message_start_honours_a_valid_ulid_message_id() -> None:
    wanted = "01JABCDEFGHJKMNPQRSTVWXYZ0"
    result = run(ev("message-start", role="assistant", messageId=wanted))
    assert result.messages[0]["id"] == wanted
    assert "sourceMessageId" not in object_of(result.messages[0]["metadata"])


def test_message_start_keeps_a_non_ulid_message_id_as_source_message_id() -> None:
    result = run(ev("message-start", role="assistant", messageId="msg_abc123"))
    message = result.messages[0]
    assert is_ulid(message["id"])
    assert message["metadata"]["sourceMessageId"] == "msg_abc123"


def test_a_message_id_requested_twice_is_honoured_only_once() -> None:
    wanted = "01JABCDEFGHJKMNPQRSTVWXYZ0"
    result = run(
        ev("message-start", role="assistant", messageId=wanted),
        ev("message-start", role="assistant", messageId=wanted),
    )
    first, second = result.messages
    assert first["id"] == wanted
    assert second["id"] != wanted
    assert second["metadata"]["sourceMessageId"] == wanted


def test_a_lowercase_ulid_message_id_is_honoured_in_canonical_form() -> None:
    wanted = "01JABCDEFGHJKMNPQRSTVWXYZ0"
    result = run(
        ev("message-start", role="assistant", messageId=wanted.lower()),
        ev("message-start", role="assistant", messageId=wanted),
    )
    first, second = result.messages
    assert first["id"] == wanted
    assert second["id"] != wanted


def test_a_message_event_is_one_complete_closed_message() -> None:
    parts = [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "file", "mimeType": "image/png", "url": "https://example.com/cat.png"},
    ]
    result = run(
        ev("message", role="user", parts=parts, metadata={"source": "import"}),
        ev("text-delta", delta="A cat."),
    )
    assert roles(result) == ["user", "assistant"]
    assert result.messages[0]["parts"] == parts
    assert result.messages[0]["metadata"] == {"schemaVersion": 1, "source": "import"}
    assert result.seq_ranges == [(1, 1), (2, 2)]


def test_a_message_event_honours_its_id_and_created_at() -> None:
    wanted = "01JABCDEFGHJKMNPQRSTVWXYZ0"
    result = run(
        ev(
            "message",
            role="assistant",
            parts=[{"type": "text", "text": "old answer"}],
            id=wanted,
            createdAt="2024-02-29T12:00:00+00:00",
        )
    )
    assert result.messages[0]["id"] == wanted
    assert result.messages[0]["createdAt"] == "2024-02-29T12:00:00+00:00"
    assert not result.open


def test_a_message_event_teaches_tool_names_to_later_results() -> None:
    call = {"type": "tool-call", "toolCallId": "c9", "toolName": "lookup", "input": {}}
    result = run(
        ev("message", role="assistant", parts=[call]),
        ev("tool-result", toolCallId="c9", output="found", isError=False),
    )
    assert result.messages[1]["parts"][0]["toolName"] == "lookup"


def test_message_end_closes_the_message_so_the_next_delta_opens_another() -> None:
    result = run(
        ev("message-start", role="assistant", agentId="planner"),
        ev("text-delta", delta="plan"),
        ev("message-end"),
        ev("text-delta", delta="more"),
    )
    assert roles(result) == ["assistant", "assistant"]
    assert [m["parts"][0]["text"] for m in result.messages] == ["plan", "more"]
    assert "agentId" not in object_of(result.messages[1]["metadata"])
    assert result.seq_ranges == [(1, 3), (4, 4)]


def test_message_end_without_an_open_message_changes_nothing() -> None:
    result = run(ev("message-end"), ev("text-delta", delta="x"))
    assert roles(result) == ["assistant"]
    assert result.seq_ranges == [(2, 2)]


def test_a_projection_is_open_until_its_last_message_ends() -> None:
    assert run(ev("text-delta", delta="x")).open
    assert not run(ev("text-delta", delta="x"), ev("message-end")).open
    assert not run().open


# --- steps, usage, errors, annotations -------------------------------------------------------


def test_step_started_counts_steps_in_run_metadata() -> None:
    result = run(ev("step-started"), ev("text-delta", delta="x"), ev("step-started"))
    assert result.metadata["stepCount"] == 2


def test_step_finished_sums_usage_into_the_last_assistant_message_and_the_run() -> None:
    result = run(
        ev("step-started"),
        ev("tool-call", toolCallId="c", toolName="t", input={}),
        ev(
            "step-finished",
            finishReason="tool-calls",
            usage={"inputTokens": 10, "outputTokens": 2, "details": {"cached": 4}},
        ),
        ev("tool-result", toolCallId="c", output="ok", isError=False),
        ev("step-started"),
        ev("text-delta", delta="answer"),
        ev(
            "step-finished",
            finishReason="stop",
            usage={"inputTokens": 15, "outputTokens": 5, "details": {"cached": 1}},
        ),
    )
    first, _tool, last = result.messages
    assert first["metadata"]["finishReason"] == "tool-calls"
    assert first["metadata"]["usage"] == {
        "inputTokens": 10,
        "outputTokens": 2,
        "details": {"cached": 4},
    }
    assert last["metadata"]["finishReason"] == "stop"
    assert last["metadata"]["usage"] == {
        "inputTokens": 15,
        "outputTokens": 5,
        "details": {"cached": 1},
    }
    assert [s["seq"] for s in last["metadata"]["steps"]] == [7]
    assert result.metadata["usage"] == {
        "inputTokens": 25,
        "outputTokens": 7,
        "details": {"cached": 5},
    }


def test_usage_of_several_steps_in_one_message_is_summed() -> None:
    result = run(
        ev("text-delta", delta="a"),
        ev("step-finished", usage={"inputTokens": 1}),
        ev("text-delta", delta="b"),
        ev("step-finished", finishReason="stop", usage={"inputTokens": 2}),
    )
    assert roles(result) == ["assistant"]
    assert result.messages[0]["metadata"]["usage"] == {"inputTokens": 3}
    assert result.messages[0]["metadata"]["finishReason"] == "stop"
    assert result.seq_ranges == [(1, 4)]


def test_step_finished_before_any_assistant_message_goes_to_run_metadata() -> None:
    result = run(ev("step-finished", finishReason="stop", usage={"inputTokens": 3}))
    assert result.messages == []
    assert result.metadata["usage"] == {"inputTokens": 3}
    assert result.metadata["finishReason"] == "stop"


def test_an_error_is_kept_in_message_metadata_and_projection_errors_not_as_a_part() -> None:
    result = run(ev("text-delta", delta="partial"), ev("error", message="rate limited", code=429))
    message = result.messages[0]
    assert message["parts"] == [{"type": "text", "text": "partial"}]
    assert message["metadata"]["errors"] == [{"seq": 2, "message": "rate limited", "code": 429}]
    assert result.errors == [{"seq": 2, "message": "rate limited", "code": 429}]


def test_an_error_outside_a_message_is_kept_in_projection_errors_only() -> None:
    result = run(ev("error", message="boom"))
    assert result.messages == []
    assert result.errors == [{"seq": 1, "message": "boom"}]


def test_data_and_system_events_are_annotations_not_parts() -> None:
    result = run(
        ev("system.start", model="demo"),
        ev("text-delta", delta="x"),
        ev("data-diff", file="a.py", added=1),
        ev("message-end"),
        ("data-list", [1, 2]),
    )
    assert result.annotations == [
        {"seq": 1, "kind": "system.start", "data": {"model": "demo"}},
        {"seq": 5, "kind": "data-list", "data": [1, 2]},
    ]
    message = result.messages[0]
    assert message["parts"] == [{"type": "text", "text": "x"}]
    assert message["metadata"]["annotations"] == [
        {"seq": 3, "kind": "data-diff", "data": {"file": "a.py", "added": 1}}
    ]


def test_an_unknown_kind_raises_at_projection() -> None:
    with pytest.raises(ValueError, match="unknown event kind 'text-deltaa'"):
        run(ev("text-deltaa", delta="x"))


def test_a_seq_that_does_not_move_forward_raises() -> None:
    events = [
        {"seq": 2, "kind": "text-delta", "data": {"delta": "a"}},
        {"seq": 2, "kind": "text-delta", "data": {"delta": "b"}},
    ]
    with pytest.raises(ValueError, match="not after 2"):
        project(events, run_id=RUN_ID)


# --- parents, ids, seq ranges ----------------------------------------------------------------


def test_the_first_message_hangs_off_the_fork_point_and_the_rest_chain() -> None:
    result = run(
        ev("message", role="user", parts=[{"type": "text", "text": "q"}]),
        ev("text-delta", delta="a"),
        ev("tool-result", toolCallId="c", output=None, isError=False),
        parent_id=FORK_POINT,
    )
    parents = [m["parentMessageId"] for m in result.messages]
    ids = [m["id"] for m in result.messages]
    assert parents == [FORK_POINT, ids[0], ids[1]]


def test_a_new_root_has_no_parent() -> None:
    assert run(ev("text-delta", delta="a")).messages[0]["parentMessageId"] is None


def test_the_same_events_give_the_same_ids() -> None:
    items = [ev("text-delta", delta="a"), ev("message-end"), ev("text-delta", delta="b")]
    assert run(*items) == run(*items)
    assert all(is_ulid(m["id"]) for m in run(*items).messages)


def test_another_run_id_gives_other_ids() -> None:
    items = [ev("text-delta", delta="a"), ev("message-end"), ev("text-delta", delta="b")]
    ours = {m["id"] for m in run(*items).messages}
    theirs = {m["id"] for m in run(*items, run_id=OTHER_RUN_ID).messages}
    assert ours.isdisjoint(theirs)


def test_ids_sort_in_creation_order_even_within_one_millisecond() -> None:
    items = []
    for n in range(40):
        items += [ev("text-delta", delta=str(n)), ev("message-end")]
    ids = [str(m["id"]) for m in run(*items).messages]
    assert len(set(ids)) == 40
    assert ids == sorted(ids)


def test_ids_and_timestamps_follow_event_time_and_never_go_back() -> None:
    events = [
        {"seq": 1, "kind": "text-delta", "data": {"delta": "a"}, "at": "2026-01-01T00:00:01Z"},
        {"seq": 2, "kind": "message-end", "data": {}, "at": "2026-01-01T00:00:01Z"},
        {"seq": 3, "kind": "text-delta", "data": {"delta": "b"}, "at": "2026-01-01T00:00:00Z"},
        {"seq": 4, "kind": "message-end", "data": {}},
        {"seq": 5, "kind": "text-delta", "data": {"delta": "c"}, "at": "2026-01-01T00:00:05Z"},
    ]
    messages = project(events, run_id=RUN_ID).messages
    assert [m["createdAt"] for m in messages] == [
        "2026-01-01T00:00:01Z",
        "2026-01-01T00:00:01Z",
        "2026-01-01T00:00:05Z",
    ]
    ids = [str(m["id"]) for m in messages]
    assert ids == sorted(ids)
    assert ulid_timestamp_ms(ids[2]) - ulid_timestamp_ms(ids[0]) == 4000


def test_without_timestamps_messages_take_the_time_of_the_run_id() -> None:
    messages = project(
        [{"seq": 1, "kind": "text-delta", "data": {"delta": "a"}}], run_id=RUN_ID
    ).messages
    assert ulid_timestamp_ms(messages[0]["id"]) == ulid_timestamp_ms(RUN_ID)


def test_derived_ids_do_not_depend_on_anything_but_their_inputs() -> None:
    assert derived_ulid(5, 1, "a", 1) == derived_ulid(5, 1, "a", 1)
    assert derived_ulid(5, 1, "a", 1) != derived_ulid(5, 1, "b", 1)
    assert derived_ulid(5, 1, "a") < derived_ulid(5, 2, "a") < derived_ulid(6, 0, "a")


def test_seq_ranges_cover_the_events_of_each_message() -> None:
    result = run(
        ev("system.start"),
        ev("message", role="user", parts=[]),
        ev("step-started"),
        ev("text-delta", delta="a"),
        ev("text-delta", delta="b"),
        ev("step-finished", finishReason="tool-calls"),
        ev("tool-result", toolCallId="c", output=None, isError=False),
        ev("tool-result", toolCallId="d", output=None, isError=False),
        ev("text-delta", delta="c"),
        ev("error", message="late"),
    )
    assert result.seq_ranges == [(2, 2), (4, 6), (7, 8), (9, 10)]
    assert result.last_seq == 10


# --- snapshots -----------------------------------------------------------------------------


def _through_json(snapshot: dict[str, Any]) -> dict[str, Any]:
    """What a snapshot looks like after a trip through a jsonb column."""
    return json.loads(json.dumps(snapshot))


@settings(max_examples=300, deadline=None)
@given(events=event_sequences(max_size=40), parent=st.none() | st.just(FORK_POINT), data=st.data())
def test_a_snapshot_at_any_cut_point_plus_the_rest_equals_the_full_projection(
    events: list[dict[str, Any]], parent: str | None, data: st.DataObject
) -> None:
    full = project(events, run_id=RUN_ID, parent_id=parent)
    assert full == project(events, run_id=RUN_ID, parent_id=parent)
    cuts = data.draw(st.lists(st.integers(0, len(events)), max_size=3, unique=True).map(sorted))
    projector = Projector(run_id=RUN_ID, parent_id=parent)
    done = 0
    for cut in cuts:
        projector.apply_all(events[done:cut])
        done = cut
        assert projector.result() == project(events[:cut], run_id=RUN_ID, parent_id=parent)
        projector = Projector.from_snapshot(_through_json(projector.to_snapshot()))
    projector.apply_all(events[done:])
    assert projector.result() == full
    resumed = project(
        events[done:],
        run_id=RUN_ID,
        parent_id=parent,
        snapshot=_through_json(
            Projector(run_id=RUN_ID, parent_id=parent).apply_all(events[:done]).to_snapshot()
        ),
    )
    assert resumed == full


@settings(max_examples=100, deadline=None)
@given(events=event_sequences(min_size=1, max_size=30))
def test_every_message_has_a_unique_sorted_id_and_a_chained_parent(
    events: list[dict[str, Any]],
) -> None:
    result = project(events, run_id=RUN_ID, parent_id=FORK_POINT)
    ids = [m["id"] for m in result.messages]
    assert len(set(ids)) == len(ids)
    assert [m["parentMessageId"] for m in result.messages] == [FORK_POINT, *ids][: len(ids)]
    assert len(result.seq_ranges) == len(result.messages)
    for first, last in result.seq_ranges:
        assert 1 <= first <= last <= result.last_seq
    starts = [first for first, _ in result.seq_ranges]
    assert starts == sorted(starts)


def test_a_snapshot_of_another_run_or_fork_point_is_refused() -> None:
    snapshot = Projector(run_id=RUN_ID).apply_all([]).to_snapshot()
    with pytest.raises(ValueError, match="another run"):
        project([], run_id=OTHER_RUN_ID, snapshot=snapshot)
    with pytest.raises(ValueError, match="another run"):
        project([], run_id=RUN_ID, parent_id=FORK_POINT, snapshot=snapshot)


def test_a_snapshot_of_an_unknown_version_is_refused() -> None:
    snapshot = {**Projector(run_id=RUN_ID).to_snapshot(), "version": 99}
    with pytest.raises(ValueError, match="unsupported snapshot version"):
        Projector.from_snapshot(snapshot)


def test_a_snapshot_taken_mid_text_keeps_appending_to_the_same_part() -> None:
    projector = Projector(run_id=RUN_ID)
    projector.apply({"seq": 1, "kind": "text-delta", "data": {"delta": "Hel"}, "at": AT})
    resumed = Projector.from_snapshot(_through_json(projector.to_snapshot()))
    resumed.apply({"seq": 2, "kind": "text-delta", "data": {"delta": "lo"}, "at": AT})
    assert resumed.result().messages[0]["parts"] == [{"type": "text", "text": "Hello"}]


def test_a_message_with_scrubbed_events_projects_to_the_redaction_marker_only() -> None:
    result = run(
        ev("message", role="user", parts=[{"type": "text", "text": "keep me"}]),
        ev("reasoning", text="", redacted=True),
        ev("text-delta", delta="", redacted=True),
        ev("tool-call", toolCallId="c1", toolName="t", input=None, redacted=True),
        ev("tool-result", toolCallId="c1", toolName="t", output=None, redacted=True),
        ev("text-delta", delta="after"),
    )
    user, redacted, tool, after = result.messages
    assert user["parts"] == [{"type": "text", "text": "keep me"}]
    marker = [{"type": "text", "text": REDACTION_TEXT}]
    assert redacted["parts"] == marker and redacted["metadata"]["redacted"] is True
    assert tool["parts"] == marker and tool["role"] == "tool"
    assert after["parts"] == [{"type": "text", "text": "after"}]
    assert "redacted" not in object_of(after["metadata"])
