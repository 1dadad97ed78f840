"""POST /runs/{runId}/ai-sdk: real AI SDK streams stored as events, optionally committed."""

from __future__ import annotations

import pytest

from tests.api.conftest import FIXTURES, error_of
from tests.factories import conversation, make_run, make_thread
from transcripts.models import Event, Message, Run, RunStatus

pytestmark = pytest.mark.django_db


def test_it_stores_a_raw_event_stream_body_and_commits_on_request(api):
    thread = conversation(turns=1)
    run = make_run(thread, commit=False)
    body = (FIXTURES / "multi_step_tools.sse").read_bytes()

    response = api.post_raw(f"/runs/{run.id}/ai-sdk?commit=true", body, "text/event-stream")

    assert response.status_code == 200, response.content
    assert response.json() == {
        "lastSeq": 13,
        "accepted": 13,
        "duplicates": 0,
        "status": "committed",
        "committed": True,
    }
    messages = list(Message.objects.filter(run_id=run.id).order_by("position"))
    assert [m.role for m in messages] == ["assistant", "tool", "assistant"]
    assert messages[0].parent_id == thread.head_id
    assert Run.objects.get(pk=run.id).usage["totalTokens"] == 112


def test_it_accepts_a_json_array_of_chunks_and_leaves_the_run_open(api):
    run = make_run(make_thread(), commit=False)
    body = (FIXTURES / "tool_error_with_data.json").read_bytes()

    response = api.post_raw(f"/runs/{run.id}/ai-sdk", body, "application/json")

    assert response.json()["status"] == "streaming" and not response.json()["committed"]
    kinds = list(Event.objects.filter(run=run).order_by("seq").values_list("kind", flat=True))
    assert kinds[:2] == ["data-progress", "data-notice"]
    assert "tool-result" in kinds and "file" in kinds
    projection = api.get(f"/runs/{run.id}/messages").json()
    assert projection["messages"][1]["parts"][0]["isError"] is True
    assert [a["kind"] for a in projection["annotations"]] == ["data-progress", "data-notice"]


def test_it_appends_after_the_events_already_there(api):
    run = make_run(make_thread(), ("text-delta", {"delta": "before "}), commit=False)
    body = (FIXTURES / "model_error.sse").read_bytes()

    response = api.post_raw(f"/runs/{run.id}/ai-sdk", body, "text/event-stream")

    assert response.json()["lastSeq"] == 1 + response.json()["accepted"]
    assert Event.objects.filter(run=run, kind="error").exists()


def test_a_malformed_stream_is_a_422_naming_the_chunk(api):
    run = make_run(make_thread(), commit=False)
    body = b'data: {"type":"start"}\n\ndata: {"type":"text-delta","id":"t","delta":7}\n\n'

    response = api.post_raw(f"/runs/{run.id}/ai-sdk", body, "text/event-stream")

    assert response.status_code == 422
    assert error_of(response)["details"]["problems"][0]["path"] == "chunks[1].delta"
    assert not Event.objects.filter(run=run).exists()


def test_a_stream_for_a_closed_run_is_a_409(api):
    run = make_run(make_thread(), ("text-delta", {"delta": "x"}))
    body = (FIXTURES / "model_error.json").read_bytes()

    response = api.post_raw(f"/runs/{run.id}/ai-sdk", body, "application/json")

    assert response.status_code == 409
    assert Run.objects.get(pk=run.id).status == RunStatus.COMMITTED


def test_a_retry_with_the_same_after_seq_is_a_no_op(api):
    run = make_run(make_thread(), commit=False)
    body = (FIXTURES / "multi_step_tools.sse").read_bytes()
    url = f"/runs/{run.id}/ai-sdk?afterSeq=0&commit=true"

    first = api.post_raw(url, body, "text/event-stream")
    again = api.post_raw(url, body, "text/event-stream")

    assert first.status_code == again.status_code == 200, again.content
    assert again.json() == {**first.json(), "accepted": 0, "duplicates": 13}
    assert Event.objects.filter(run=run).count() == 13
    assert Run.objects.get(pk=run.id).status == RunStatus.COMMITTED


def test_an_after_seq_past_the_last_seq_is_a_409(api):
    run = make_run(make_thread(), commit=False)
    body = (FIXTURES / "model_error.json").read_bytes()

    response = api.post_raw(f"/runs/{run.id}/ai-sdk?afterSeq=5", body, "application/json")

    assert response.status_code == 409
    assert error_of(response)["details"]["expectedSeq"] == 1
    assert not Event.objects.filter(run=run).exists()


def test_a_refused_commit_stores_none_of_the_stream(api):
    thread = make_thread()
    taken = make_run(
        thread, ("message", {"role": "user", "parts": [{"type": "text", "text": "hi"}]})
    )
    message_id = Message.objects.get(run_id=taken.id).id
    run = make_run(thread, commit=False)
    chunks = [
        {"type": "steering-message", "id": message_id, "parts": [{"type": "text", "text": "x"}]}
    ]

    response = api.post(f"/runs/{run.id}/ai-sdk?commit=true", chunks)

    assert response.status_code == 409
    assert error_of(response)["details"]["messageIds"] == [message_id]
    assert not Event.objects.filter(run=run).exists()
    assert Run.objects.get(pk=run.id).status == RunStatus.STREAMING


def test_a_denied_approval_in_a_new_run_recovers_the_tool_name_from_the_thread(api):
    thread = conversation(turns=1)
    first = make_run(thread, commit=False)
    request = (FIXTURES / "tool_approval_request.sse").read_bytes()
    stored = api.post_raw(f"/runs/{first.id}/ai-sdk?commit=true", request, "text/event-stream")
    assert stored.status_code == 200
    second = make_run(thread, commit=False)
    denied = (FIXTURES / "tool_approval_denied.sse").read_bytes()

    response = api.post_raw(f"/runs/{second.id}/ai-sdk?commit=true", denied, "text/event-stream")

    assert response.status_code == 200, response.content
    messages = api.get(f"/threads/{thread.id}/messages").json()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "assistant", "tool", "assistant"]
    assert messages[3]["parts"] == [
        {
            "type": "tool-result",
            "toolCallId": "call-del",
            "toolName": "deleteFile",
            "output": "The tool call was denied.",
            "isError": True,
        }
    ]
    assert messages[4]["parts"][0]["text"] == "Understood, I left it alone."
