"""The AI SDK chat backend live: uvicorn serves the UI message stream while a real worker
process writes the answer (demo generator), read by a Python SSE client."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.api.sse_client import frames
from tests.generation.support import run_status, wait_for
from transcripts.ledger.default_project import default_project
from transcripts.models import Message, Run, RunStatus, Thread

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "How do PostgreSQL advisory locks compare with row locks?"


@pytest.fixture
def chat_api(live_server_asgi: Any, make_token: Any, start_worker: Any) -> Iterator[ChatApi]:
    """The live server's chat endpoints with an ingest + read token, and a worker running."""
    start_worker()
    with httpx.Client(
        base_url=live_server_asgi.url + "/api/v1",
        headers={"Authorization": f"Bearer {make_token('ingest', 'read')}"},
        timeout=30,
    ) as client:
        yield ChatApi(client)


class ChatApi:
    """Chat calls as DefaultChatTransport makes them, each stream read as UI chunks."""

    def __init__(self, client: httpx.Client) -> None:
        self.client = client

    def body(self, chat_id: str, text: str, delay_ms: int, **extra: Any) -> dict[str, Any]:
        message = {"id": f"u-{chat_id}", "role": "user", "parts": [{"type": "text", "text": text}]}
        return {
            "id": chat_id,
            "messages": [message],
            "trigger": "submit-message",
            "parameters": {"delayMs": delay_ms},
            **extra,
        }

    def chunks(self, response: httpx.Response, until: Any = None) -> list[Any]:
        """The stream's chunks ("[DONE]" included) up to the end, or up to the first chunk
        for which until holds (the response is left then)."""
        assert response.status_code == 200, response.read()
        assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
        assert response.headers["content-type"].startswith("text/event-stream")
        received: list[Any] = []
        for frame in frames(response):
            if not frame.data:
                continue  # a keep-alive comment
            chunk = "[DONE]" if frame.data == "[DONE]" else json.loads(frame.data)
            received.append(chunk)
            if chunk == "[DONE]" or (until is not None and until(received)):
                break
        return received

    def send(self, body: dict[str, Any], until: Any = None) -> list[Any]:
        with self.client.stream("POST", "/chat", json=body) as response:
            return self.chunks(response, until)

    def resume(self, chat_id: str) -> list[Any]:
        with self.client.stream("GET", f"/chat/{chat_id}/stream") as response:
            return self.chunks(response)


def text_of(chunks: list[Any]) -> str:
    return "".join(c["delta"] for c in chunks if isinstance(c, dict) and c["type"] == "text-delta")


def types_of(chunks: list[Any]) -> list[str]:
    return [c if isinstance(c, str) else c["type"] for c in chunks]


def deltas(count: int) -> Any:
    return lambda received: sum(1 for c in received if c["type"] == "text-delta") >= count


def stored_answer(chat_id: str) -> list[Message]:
    thread = Thread.objects.get(project=default_project(), external_id=chat_id)
    return list(
        Message.objects.filter(thread=thread, active=True, role__in=["assistant", "tool"])
        .exclude(depth=0)
        .order_by("depth")
    )


def stored_text(messages: list[Message]) -> str:
    return "".join(p["text"] for m in messages for p in m.parts if p["type"] == "text")


def test_a_turn_streams_the_answer_as_the_worker_stores_it(chat_api):
    chunks = chat_api.send(chat_api.body("live-1", QUESTION, 0))

    kinds = types_of(chunks)
    assert kinds[0] == "start" and kinds[-2:] == ["finish", "[DONE]"]
    assert chunks[-2]["finishReason"] == "stop"
    wait_for(lambda: bool(stored_answer("live-1")), what="the committed answer")
    answer = stored_answer("live-1")
    assert chunks[0]["messageId"] == answer[0].id  # the id useChat keeps is the stored one
    assert text_of(chunks) == stored_text(answer)
    # Every text delta sits inside its text part, as the AI SDK's reader demands.
    opened: set[str] = set()
    for chunk in chunks[1:-1]:
        if chunk["type"] == "text-start":
            opened.add(chunk["id"])
        elif chunk["type"] in ("text-delta", "text-end"):
            assert chunk["id"] in opened
    assert kinds.count("start-step") == kinds.count("finish-step") >= 1


def test_resume_replays_the_active_answer_from_its_start_then_follows_it(chat_api):
    first = chat_api.send(chat_api.body("live-2", QUESTION, 60), until=deltas(3))
    assert text_of(first)  # the client went away here (a reload)

    resumed = chat_api.resume("live-2")

    assert types_of(resumed)[0] == "start" and resumed[-1] == "[DONE]"
    assert resumed[0]["messageId"] == first[0]["messageId"]
    assert text_of(resumed).startswith(text_of(first))
    wait_for(lambda: bool(stored_answer("live-2")), what="the committed answer")
    assert text_of(resumed) == stored_text(stored_answer("live-2"))
    assert chat_api.client.get("/chat/live-2/stream").status_code == 204


def test_stop_ends_the_stream_and_keeps_the_partial_answer(chat_api):
    received: list[Any] = []
    streaming = threading.Event()

    def read() -> None:
        body = chat_api.body("live-3", QUESTION, 150, model="demo-detailed")
        with chat_api.client.stream("POST", "/chat", json=body) as response:
            for frame in frames(response):
                if frame.data:
                    received.append("[DONE]" if frame.data == "[DONE]" else json.loads(frame.data))
                    if received[-1] != "[DONE]" and received[-1]["type"] == "text-delta":
                        streaming.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert streaming.wait(30)

    stopped = chat_api.client.post("/chat/live-3/stop")
    reader.join(30)

    assert stopped.status_code == 200
    (run,) = stopped.json()["stopped"]
    assert run["status"] == RunStatus.COMMITTED
    assert received[-2:] == [
        {"type": "finish", "finishReason": "other", "messageMetadata": {"finishReason": "stopped"}},
        "[DONE]",
    ]
    kept = stored_answer("live-3")
    assert kept[-1].metadata["finishReason"] == "stopped"
    assert stored_text(kept) == text_of(received)  # exactly what the client was shown
    assert run_status(run["runId"]) == RunStatus.COMMITTED


def test_regenerate_streams_a_new_answer_on_a_new_branch(chat_api):
    body = chat_api.body("live-4", QUESTION, 0)
    first = chat_api.send(body)
    wait_for(lambda: bool(stored_answer("live-4")), what="the first answer")

    again = chat_api.send(
        {**body, "trigger": "regenerate-message", "messageId": first[0]["messageId"]}
    )

    assert again[0]["messageId"] != first[0]["messageId"]
    assert again[-2:] == [{"type": "finish", "finishReason": "stop"}, "[DONE]"]
    wait_for(lambda: stored_answer("live-4")[0].id == again[0]["messageId"], what="the new answer")
    old = Message.objects.get(pk=first[0]["messageId"])
    assert not old.active
    assert Run.objects.get(pk=old.run_id).status == RunStatus.SUPERSEDED
    assert text_of(again) == stored_text(stored_answer("live-4"))
