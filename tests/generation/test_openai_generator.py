"""The openai generator against a local OpenAI-compatible server that streams chunks."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.factories import conversation, make_run
from transcripts import selectors
from transcripts.generation.runner import generate
from transcripts.generation.start import start_generation
from transcripts.models import Event, Message, RunStatus

pytestmark = pytest.mark.django_db(transaction=True)


def _chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> dict[str, Any]:
    choices = [] if usage else [{"index": 0, "delta": delta, "finish_reason": finish}]
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "local-model",
        "choices": choices,
    }
    if usage:
        body["usage"] = usage
    return body


CHUNKS = [
    _chunk({"role": "assistant", "content": ""}),
    _chunk({"content": "Let me "}),
    _chunk({"content": "check."}),
    _chunk(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_abc",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": ""},
                }
            ]
        }
    ),
    _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": "Par'}}]}),
    _chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'is"}'}}]}),
    _chunk({}, finish="tool_calls"),
    _chunk({}, usage={"prompt_tokens": 21, "completion_tokens": 9, "total_tokens": 30}),
]


class _Server(ThreadingHTTPServer):
    requests: list[dict[str, Any]]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        length = int(self.headers["content-length"])
        self.server.requests.append(
            {
                "path": self.path,
                "auth": self.headers.get("authorization"),
                "body": json.loads(self.rfile.read(length)),
            }
        )
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        for chunk in CHUNKS:
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def openai_server(settings, monkeypatch) -> Iterator[_Server]:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    settings.TRANSCRIPTS_OPENAI_BASE_URL = f"http://127.0.0.1:{server.server_port}/v1"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    yield server
    server.shutdown()


def test_it_sends_the_conversation_and_records_the_streamed_answer(openai_server):
    thread = conversation(turns=1)
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]
    run = start_generation(
        thread=thread,
        generator="openai",
        model="local-model",
        parameters={
            "temperature": 0.2,
            "maxTokens": 64,
            "tools": tools,
            "systemPrompt": "Be brief.",
        },
    )
    assert generate(run.id, worker="test-worker") == RunStatus.COMMITTED

    [request] = openai_server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["auth"] == "Bearer sk-test-key"
    body = request["body"]
    assert body["model"] == "local-model" and body["stream"] is True
    assert body["temperature"] == 0.2 and body["max_tokens"] == 64
    assert body["tools"] == tools
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "question 0"},
        {"role": "assistant", "content": "answer 0 "},
    ]

    assert body["stream_options"] == {"include_usage": True}
    assert set(body) == {
        "model",
        "messages",
        "stream",
        "stream_options",
        "temperature",
        "max_tokens",
        "tools",
    }

    # Every chunk is recorded, the tool call split over three chunks as one event, and the
    # usage of the last chunk on the step's end; the tool is not executed (no tool-result).
    stored = list(
        Event.objects.filter(run_id=run.id).order_by("seq").values_list("seq", "kind", "data")
    )
    assert stored == [
        (1, "step-started", {}),
        (2, "text-delta", {"delta": "Let me "}),
        (3, "text-delta", {"delta": "check."}),
        (
            4,
            "tool-call",
            {"toolCallId": "call_abc", "toolName": "get_weather", "input": {"city": "Paris"}},
        ),
        (
            5,
            "step-finished",
            {
                "finishReason": "tool-calls",
                "usage": {"inputTokens": 21, "outputTokens": 9, "totalTokens": 30},
            },
        ),
    ]
    [answer] = Message.objects.filter(run_id=run.id)
    assert answer.parts == [
        {"type": "text", "text": "Let me check."},
        {
            "type": "tool-call",
            "toolCallId": "call_abc",
            "toolName": "get_weather",
            "input": {"city": "Paris"},
        },
    ]
    assert answer.metadata["finishReason"] == "tool-calls"
    assert answer.metadata["usage"] == {"inputTokens": 21, "outputTokens": 9, "totalTokens": 30}


def test_tool_calls_and_results_in_the_history_use_the_openai_shapes(openai_server):
    thread = conversation(turns=0)
    make_run(
        thread,
        ("message", {"role": "user", "parts": [{"type": "text", "text": "Paris?"}]}),
        ("tool-call", {"toolCallId": "c1", "toolName": "get_weather", "input": {"q": 1}}),
        ("tool-result", {"toolCallId": "c1", "output": {"t": 20}, "isError": False}),
    )
    run = start_generation(thread=thread, generator="openai", model="m")
    generate(run.id, worker="w")
    messages = openai_server.requests[0]["body"]["messages"]
    assert messages[1]["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": '{"q":1}',
    }
    assert messages[2]["role"] == "tool" and messages[2]["tool_call_id"] == "c1"


def test_the_api_key_can_come_from_transcripts_openai_api_key(openai_server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("TRANSCRIPTS_OPENAI_API_KEY", "sk-transcripts-only")
    run = start_generation(thread=conversation(turns=1), generator="openai", model="m")
    assert generate(run.id, worker="w") == RunStatus.COMMITTED
    assert openai_server.requests[0]["auth"] == "Bearer sk-transcripts-only"
    run.refresh_from_db()
    assert "sk-transcripts-only" not in str(run.parameters) + str(run.metadata)


def test_a_provider_error_fails_the_run_with_its_message(settings, monkeypatch):
    settings.TRANSCRIPTS_OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    thread = conversation(turns=1)
    run = start_generation(thread=thread, generator="openai", model="m")
    assert generate(run.id, worker="w") == RunStatus.FAILED
    run.refresh_from_db()
    assert run.error is not None and "APIConnectionError" in run.error["message"]
    assert selectors.project_run(run.id).messages == []
