"""ThreadProtocol v1.0.0: every validation rule, the spec's example, lossless round trips,
UUID ids and branch export."""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from tests.formats.helpers import keep_metadata, rekeyed, through_json
from tests.formats.strategies import Features, linear_threads, tree_threads
from tests.formats.threadprotocol_strategies import threadprotocol_threads
from transcripts.errors import FormatError
from transcripts.formats.document import TreeThread, active_path, leaves, make_message
from transcripts.formats.threadprotocol import (
    export_threadprotocol,
    export_threadprotocol_branches,
    import_threadprotocol,
)
from transcripts.formats.threadprotocol_read import ACTION_STEP
from transcripts.ids import new_ulid, ulid_to_uuid, uuid_to_ulid

EXAMPLE = json.loads(
    (Path(__file__).parent / "fixtures" / "threadprotocol_example.json").read_text()
)


def problems_of(document: Any) -> list[tuple[str, str]]:
    """The problems import reports for a document (it must report some)."""
    with pytest.raises(FormatError) as caught:
        import_threadprotocol(document)
    return caught.value.problems


def paths_of(document: Any) -> list[str]:
    """The JSON paths of the problems import reports."""
    return [path for path, _ in problems_of(document)]


def broken(change: Any) -> dict[str, Any]:
    """A copy of the spec's example after change(example) edits it."""
    document: dict[str, Any] = copy.deepcopy(EXAMPLE)
    change(document)
    return document


def test_it_reads_the_spec_example() -> None:
    (thread,) = import_threadprotocol(EXAMPLE)
    # The thread's id is the ULID with the document's UUID bits.
    assert thread.id == uuid_to_ulid("550e8400-e29b-41d4-a716-446655440000")
    assert [m["role"] for m in thread.messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "assistant",
    ]
    assert thread.messages[1]["metadata"]["agentId"] == "agent_001"
    assert [p["type"] for p in thread.messages[1]["parts"]] == ["text", "tool-call"]
    assert thread.messages[4]["metadata"]["agentId"] == "agent_002"
    assert thread.messages[3]["metadata"]["annotations"] == [
        {
            "action_type": "system.agent_join",
            "data": {"agent_id": "agent_002", "invited_by": "user"},
        }
    ]
    assert thread.agents == EXAMPLE["agents"]
    assert thread.messages[0]["createdAt"] == "2025-01-15T10:00:00Z"


def test_it_rejects_a_wrong_version() -> None:
    assert paths_of(broken(lambda d: d.update(version="2.0"))) == ["$.version"]


def test_it_rejects_duplicate_sequences() -> None:
    problems = problems_of(broken(lambda d: d["actions"][2].update(sequence=2)))
    assert ("$.actions[2].sequence", "duplicate sequence 2 (also at $.actions[1])") in problems


def test_it_rejects_a_gap_in_sequences() -> None:
    problems = problems_of(broken(lambda d: d["actions"][6].update(sequence=9)))
    assert problems == [("$.actions[6].sequence", "expected sequence 7, got 9")]


def test_it_rejects_a_sequence_that_is_not_an_integer() -> None:
    assert "$.actions[0].sequence" in paths_of(
        broken(lambda d: d["actions"][0].update(sequence="1"))
    )


def test_it_rejects_a_tool_return_without_an_earlier_call() -> None:
    problems = problems_of(broken(lambda d: d["actions"][3].update(tool_call_id="call_999")))
    assert problems == [("$.actions[3].tool_call_id", "no earlier tool_call has id 'call_999'")]


def test_it_rejects_a_tool_return_before_its_call() -> None:
    def swap(document: dict[str, Any]) -> None:
        actions = document["actions"]
        actions[2], actions[3] = actions[3], actions[2]
        actions[2]["sequence"], actions[3]["sequence"] = 3, 4

    assert "$.actions[2].tool_call_id" in paths_of(broken(swap))


def test_it_rejects_a_tool_return_naming_another_tool() -> None:
    assert paths_of(broken(lambda d: d["actions"][3].update(tool_name="other"))) == [
        "$.actions[3].tool_name"
    ]


def test_it_rejects_an_agent_missing_from_the_registry() -> None:
    problems = problems_of(broken(lambda d: d["actions"][1].update(agent_id="agent_404")))
    assert problems == [
        ("$.actions[1].agent_id", "agent 'agent_404' is not in the agents registry")
    ]


def test_it_rejects_an_unregistered_agent_in_system_action_data() -> None:
    document = broken(lambda d: d["actions"][5]["data"].update(agent_id="ghost"))
    assert paths_of(document) == ["$.actions[5].data.agent_id"]


def test_it_rejects_an_action_type_outside_the_naming_rules() -> None:
    assert paths_of(broken(lambda d: d["actions"][5].update(action_type="agent_join"))) == [
        "$.actions[5].action_type"
    ]
    assert paths_of(broken(lambda d: d["actions"][5].update(action_type="system."))) == [
        "$.actions[5].action_type"
    ]
    assert paths_of(broken(lambda d: d["actions"][0].update(action_type="UserMessage"))) == [
        "$.actions[0].action_type"
    ]


def test_it_rejects_timestamps_that_go_back_in_sequence_order() -> None:
    problems = problems_of(
        broken(lambda d: d["actions"][4].update(timestamp="2025-01-15T09:59:00Z"))
    )
    assert problems == [("$.actions[4].timestamp", "earlier than the action before it in sequence")]


def test_it_rejects_timestamps_that_are_not_iso_8601() -> None:
    assert paths_of(broken(lambda d: d["actions"][0].update(timestamp="yesterday"))) == [
        "$.actions[0].timestamp"
    ]
    assert paths_of(broken(lambda d: d.update(created_at=12))) == ["$.created_at"]


def test_it_rejects_missing_required_fields() -> None:
    def strip(document: dict[str, Any]) -> None:
        del document["title"]
        del document["actions"][0]["content"]
        del document["actions"][2]["args"]
        del document["actions"][3]["status"]
        del document["agents"]["agent_001"]["agent_name"]

    assert sorted(paths_of(broken(strip))) == [
        "$.actions[0].content",
        "$.actions[2].args",
        "$.actions[3].status",
        "$.agents.agent_001.agent_name",
        "$.title",
    ]


def test_it_rejects_fields_of_the_wrong_type() -> None:
    def corrupt(document: dict[str, Any]) -> None:
        document["actions"][1]["content"] = 5
        document["actions"][1]["finish_reason"] = "done"
        document["actions"][1]["usage"] = {"input_tokens": "1", "output_tokens": 2}
        document["actions"][0]["content"] = [{"type": "hologram"}]
        document["agents"]["agent_002"]["agent_id"] = "agent_001"

    assert sorted(paths_of(broken(corrupt))) == [
        "$.actions[0].content[0].type",
        "$.actions[1].content",
        "$.actions[1].finish_reason",
        "$.actions[1].usage.input_tokens",
        "$.agents.agent_002.agent_id",
    ]


def test_it_rejects_a_thinking_action_without_provider_name() -> None:
    def add_thinking(document: dict[str, Any]) -> None:
        document["actions"].insert(
            1,
            {
                "action_type": "thinking",
                "timestamp": "2025-01-15T10:00:00Z",
                "agent_id": "agent_001",
            },
        )
        for sequence, action in enumerate(document["actions"], start=1):
            action["sequence"] = sequence

    assert paths_of(broken(add_thinking)) == ["$.actions[1].provider_name"]


def test_it_reports_every_problem_at_once() -> None:
    def many(document: dict[str, Any]) -> None:
        document["version"] = "0.9"
        document["actions"][1]["agent_id"] = "nobody"
        document["actions"][3]["tool_call_id"] = "missing"

    assert len(problems_of(broken(many))) == 3


def test_it_rejects_agent_identifiers_that_are_not_unique() -> None:
    document = broken(
        lambda d: d["agents"]["agent_002"].update(agent_identifier="weather_assistant_v1")
    )
    assert paths_of(document) == ["$.agents.agent_002.agent_identifier"]


def test_it_reports_paths_inside_a_list_of_threads() -> None:
    assert paths_of([EXAMPLE, broken(lambda d: d.update(version=1))]) == ["$[1].version"]


def exported(thread: TreeThread) -> Any:
    """The thread's ThreadProtocol export after a trip through JSON."""
    return through_json(export_threadprotocol(thread))


def round_trip(document: Any) -> Any:
    """export(import(document)), each side through JSON as files carry them."""
    (thread,) = import_threadprotocol(through_json(document))
    thread.messages = through_json(thread.messages)
    thread.metadata = through_json(thread.metadata)
    return exported(thread)


def test_the_spec_example_exports_back_identical() -> None:
    assert round_trip(EXAMPLE) == EXAMPLE


def test_an_action_keeps_its_own_timestamp_inside_a_message() -> None:
    (thread,) = import_threadprotocol(EXAMPLE)
    # The tool call (10:00:02) shares a message with the text before it (10:00:01).
    assert [p["type"] for p in thread.messages[1]["parts"]] == ["text", "tool-call"]
    assert exported(thread)["actions"][2]["timestamp"] == "2025-01-15T10:00:02Z"


def test_action_ids_metadata_and_unknown_fields_come_back() -> None:
    def enrich(document: dict[str, Any]) -> None:
        document["actions"][0]["action_id"] = "6f1c1f9e-8a57-4d1e-9a36-0c0f2bb1f0a1"
        document["actions"][2]["metadata"] = {"latency_ms": 12}
        document["actions"][3]["x_vendor"] = [1, {"a": None}]
        document["metadata"] = {"project": "weather", "extra": "theirs"}
        document["parent_thread_id"] = None

    document = broken(enrich)
    assert round_trip(document) == document


def test_content_arrays_attachments_and_prompts_keep_their_shape() -> None:
    def shape(document: dict[str, Any]) -> None:
        document["actions"][0]["content"] = [
            {"type": "text", "text": "What's this?"},
            {"type": "image", "image_base64": "iVBORw0KGgo=", "media_type": "image/png"},
            {"type": "file", "url": "https://example.com/a.pdf", "name": "a.pdf"},
            {"type": "video"},
        ]
        document["actions"][0]["attachments"] = [
            {"name": "notes.txt", "data": "aGk=", "media_type": "text/plain", "size_bytes": 2}
        ]
        document["actions"][1]["content"] = [{"type": "text", "text": ""}]
        document["actions"][5] = {
            "action_type": "system.prompt",
            "timestamp": "2025-01-15T10:00:05Z",
            "sequence": 6,
            "data": {"content": "Be brief.", "agent_id": "agent_002"},
        }

    document = broken(shape)
    (thread,) = import_threadprotocol(document)
    assert [p["type"] for p in thread.messages[0]["parts"]] == ["text", "file", "file", "file"]
    assert thread.messages[0]["parts"][1]["url"] == "data:image/png;base64,iVBORw0KGgo="
    assert thread.messages[4]["role"] == "system"
    assert round_trip(document) == document


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(threadprotocol_threads())
def test_export_of_import_is_the_document(document: dict[str, Any]) -> None:
    assert round_trip(document) == document


def test_ids_we_mint_are_uuids_holding_ulids() -> None:
    thread_id, user, answer = new_ulid(), new_ulid(), new_ulid()
    messages = [
        make_message(user, None, "user", [{"type": "text", "text": "hi"}]),
        make_message(
            answer,
            user,
            "assistant",
            [{"type": "text", "text": "let me look"}, tool_call("c1")],
            metadata={"agentId": "bot"},
        ),
    ]
    document = exported(TreeThread(title="t", messages=messages, active_leaf=answer, id=thread_id))
    assert document["thread_id"] == ulid_to_uuid(thread_id)
    ids = [action["action_id"] for action in document["actions"]]
    assert all(uuid_to_ulid(value) is not None for value in ids)
    # A message's actions are numbered on from its own id: import reads them as one message.
    assert ids[1] == ulid_to_uuid(answer)
    assert uuid.UUID(ids[2]).int == uuid.UUID(ids[1]).int + ACTION_STEP
    (back,) = import_threadprotocol(document)
    assert [m["id"] for m in back.messages] == [user, answer]
    assert back.id == thread_id
    assert "#" not in json.dumps(document)


def tool_call(call_id: str) -> dict[str, Any]:
    """A tool-call part."""
    return {"type": "tool-call", "toolCallId": call_id, "toolName": "search", "input": {}}


def branched_thread() -> TreeThread:
    """u1 → a1 (active) and u1 → a2 (a regenerated branch)."""
    messages = [
        make_message("u1", None, "user", [{"type": "text", "text": "hi"}], "2025-01-01T00:00:00Z"),
        make_message(
            "a1",
            "u1",
            "assistant",
            [{"type": "text", "text": "one"}],
            "2025-01-01T00:00:01Z",
            {"agentId": "bot"},
        ),
        make_message(
            "a2",
            "u1",
            "assistant",
            [{"type": "text", "text": "two"}],
            "2025-01-01T00:00:02Z",
        ),
    ]
    return TreeThread(title="Branches", messages=messages, active_leaf="a1", id="t-1")


def test_a_thread_exports_as_one_document_of_its_active_path() -> None:
    document = exported(branched_thread())
    assert isinstance(document, dict)
    assert [a["content"] for a in document["actions"]] == ["hi", "one"]
    assert uuid_to_ulid(document["thread_id"]) is not None


def test_it_exports_other_branches_as_child_threads() -> None:
    main, child = through_json(export_threadprotocol_branches(branched_thread()))
    assert main == exported(branched_thread())
    assert child["parent_thread_id"] == main["thread_id"]
    assert child["metadata"]["fork_from_action_id"] == main["actions"][0]["action_id"]
    assert [a["content"] for a in child["actions"]] == ["hi", "two"]
    assert child["actions"][1]["agent_id"] == "assistant"
    assert set(main["agents"]) == set(child["agents"]) == {"bot", "assistant"}
    assert child["actions"][0] == main["actions"][0]


def test_child_threads_read_back_as_branches_of_one_tree() -> None:
    documents = through_json(export_threadprotocol_branches(branched_thread()))
    (thread,) = import_threadprotocol(documents)
    assert len(thread.messages) == 3 and len(leaves(thread)) == 2
    assert [m["parts"][0]["text"] for m in active_path(thread)] == ["hi", "one"]
    thread.messages = through_json(thread.messages)
    assert through_json(export_threadprotocol_branches(thread)) == documents


def test_a_child_thread_that_would_not_export_back_stays_a_thread_of_its_own() -> None:
    main, child = through_json(export_threadprotocol_branches(branched_thread()))
    child["title"] = "Renamed"
    threads = import_threadprotocol([main, child])
    assert len(threads) == 2
    assert exported(threads[1]) == child


def test_one_thread_id_twice_in_a_file_is_refused() -> None:
    assert paths_of([EXAMPLE, EXAMPLE]) == ["$[1].thread_id"]


def test_it_exports_annotations_as_system_actions_and_reads_them_back() -> None:
    thread = branched_thread()
    thread.messages[1]["metadata"]["annotations"] = [
        {"action_type": "system.tool_grant", "data": {"agent_id": "bot", "tool_name": "search"}}
    ]
    main = export_threadprotocol(thread)
    assert main["actions"][-1]["action_type"] == "system.tool_grant"
    (back,) = import_threadprotocol(main)
    assert (
        back.messages[1]["metadata"]["annotations"] == thread.messages[1]["metadata"]["annotations"]
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(linear_threads(Features(user_files=("image/png", "application/pdf"))))
def test_its_exports_validate_and_read_back_the_same_messages(thread: TreeThread) -> None:
    document = exported(thread)
    (back,) = import_threadprotocol(document)
    expected = copy.deepcopy(thread.messages)
    clock = document["created_at"]
    for message in expected:
        # Documented: a missing timestamp takes the previous one, a missing agent is "assistant".
        clock = message["createdAt"] = message["createdAt"] or clock
        if message["role"] == "assistant":
            message["metadata"].setdefault("agentId", "assistant")
    keep_metadata(expected, ("agentId", "finishReason", "usage"))
    got = copy.deepcopy(back.messages)
    keep_metadata(got, ("agentId", "finishReason", "usage"))
    for message in got + expected:
        message["createdAt"] = times_of(message["createdAt"])
    assert rekeyed(got) == rekeyed(expected)


def times_of(stamp: str | None) -> Any:
    """A timestamp as the instant it names."""
    from transcripts.times import parse_iso_utc

    return parse_iso_utc(stamp)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree_threads())
def test_every_branch_of_any_tree_exports_as_a_valid_thread(thread: TreeThread) -> None:
    thread.messages[0]["metadata"]["annotations"] = [
        {"action_type": "system.note", "data": {"agent_id": "a1"}},
        {"action_type": "not-a-system-action", "data": None},
    ]
    documents = through_json(export_threadprotocol_branches(thread))
    main_path = active_path(thread)
    # An active leaf inside the tree still gets its own (main) thread.
    assert len(documents) == len(leaves(thread)) + (main_path[-1]["id"] not in leaves(thread))
    threads = import_threadprotocol(documents)
    # Tool messages answering calls off the path turn into system actions; the rest stay.
    kept = [m["parts"] for m in main_path if m["role"] != "tool"]
    assert [m["parts"] for m in active_path(threads[0]) if m["role"] != "tool"] == kept
    # A child joins the main thread as a branch, unless such a system action would come back
    # as an annotation of the message before it: then it stays a thread, and either way
    # every document exports back as it was.
    separate = threads[1:]
    if not any(
        action["action_type"] == "system.orphan_tool_return"
        for document in documents
        for action in document["actions"]
    ):
        assert separate == []
    for thread in threads:
        thread.messages = through_json(thread.messages)
    joined = through_json(export_threadprotocol_branches(threads[0]))
    alone = [exported(thread) for thread in separate]
    assert sorted_documents(joined + alone) == sorted_documents(documents)


def sorted_documents(documents: list[Any]) -> list[str]:
    """Documents as sorted JSON texts (key order aside)."""
    return sorted(json.dumps(document, sort_keys=True) for document in documents)
