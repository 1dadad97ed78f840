"""The AI SDK convention against spans the real `ai` package emits (skipped without npm)."""

from __future__ import annotations

import gzip
import http.server
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.base import Team
from tests.live_server import LiveServer
from transcripts.formats.otlp.conventions import ai_sdk
from transcripts.formats.otlp.decode import PROTOBUF, parse_request, spans_of
from transcripts.formats.otlp.model import LlmCall
from transcripts.models import Message, Thread

EMITTER = Path(__file__).parent / "fixtures" / "ai_sdk_emitter.mjs"
# v6 is the last major with `experimental_telemetry` spans; v7 emits GenAI semconv spans.
PACKAGES = (
    "ai@6",
    "@opentelemetry/sdk-trace-base@2",
    "@opentelemetry/exporter-trace-otlp-proto@0",
)


class _Collector(http.server.BaseHTTPRequestHandler):
    """Keeps every OTLP body posted to it (the JS exporter sends them chunked)."""

    bodies: list[bytes] = []

    def do_POST(self) -> None:
        length = self.headers.get("content-length")
        body = self.rfile.read(int(length)) if length else self._read_chunked()
        if self.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        self.bodies.append(body)
        self.send_response(200)
        self.send_header("content-type", PROTOBUF)
        self.send_header("content-length", "0")
        self.end_headers()

    def _read_chunked(self) -> bytes:
        body = b""
        while size := int(self.rfile.readline().strip(), 16):
            body += self.rfile.read(size)
            self.rfile.readline()
        self.rfile.readline()
        return body

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the test reports what matters."""


def _run(
    command: list[str], cwd: Path, timeout: int, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="module")
def emitter_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with the AI SDK and an OTLP exporter installed from the npm registry."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Node and npm are not installed: the AI SDK emitter test needs them")
    directory = tmp_path_factory.mktemp("ai-sdk")
    try:
        probe = _run(["npm", "view", "ai@6", "version"], directory, 20)
    except subprocess.TimeoutExpired:
        pytest.skip("the npm registry did not answer within 20 s")
    if probe.returncode != 0:
        pytest.skip(f"the npm registry is unreachable: {probe.stderr.strip()[-200:]}")
    (directory / "package.json").write_text('{"name": "emitter", "private": true}')
    install = _run(["npm", "install", "--no-audit", "--no-fund", *PACKAGES], directory, 300)
    if install.returncode != 0:
        pytest.skip(f"npm install failed: {install.stderr.strip()[-300:]}")
    shutil.copy(EMITTER, directory / EMITTER.name)
    return directory


@pytest.fixture(scope="module")
def node_calls(emitter_dir: Path) -> Iterator[list[LlmCall]]:
    """The LLM calls read from every span the emitter exported."""
    _Collector.bodies = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/v1/traces"
        run = _run(["node", EMITTER.name], emitter_dir, 120, OTLP_TRACES_URL=url)
        assert run.returncode == 0, run.stderr
    finally:
        server.shutdown()
        server.server_close()
    spans = [span for body in _Collector.bodies for span in spans_of(parse_request(body, PROTOBUF))]
    read = (ai_sdk.to_call(span) for span in sorted(spans, key=lambda span: span.start_ns))
    yield [call for call in read if call is not None]


def test_each_model_step_of_both_turns_is_a_call(node_calls: list[LlmCall]) -> None:
    assert [len(call.input_messages) for call in node_calls] == [2, 4, 6]
    assert [call.finish_reason for call in node_calls] == ["tool-calls", "stop", "stop"]
    for call in node_calls:
        assert call.conversation_id == "chat-node-1"
        assert call.agent_name == "weather-agent"
        assert call.model == "mock-model-id"
        assert call.provider == "mock-provider"


def test_the_tool_call_and_its_result_keep_their_id(node_calls: list[LlmCall]) -> None:
    first, second, _third = node_calls
    assert first.output_messages[0]["parts"] == [
        {"type": "reasoning", "text": "The user wants the weather; call the tool."},
        {
            "type": "tool-call",
            "toolCallId": "call-node-1",
            "toolName": "weather",
            "input": {"city": "Paris"},
        },
    ]
    assistant, tool = second.input_messages[2:]
    assert assistant["parts"] == first.output_messages[0]["parts"]
    assert assistant["metadata"]["extra"]["ai_sdk"]["reasoningSignatures"] == ["sig-node-1"]
    assert tool["parts"][0] == {
        "type": "tool-result",
        "toolCallId": "call-node-1",
        "toolName": "weather",
        "output": {"city": "Paris", "tempC": 18, "sky": "sunny"},
        "isError": False,
    }
    assert first.usage["inputTokens"] == 40
    assert first.usage["outputTokens"] == 12


def test_turn_two_repeats_the_first_turn_as_its_history(node_calls: list[LlmCall]) -> None:
    _first, second, third = node_calls
    assert third.input_messages[:4] == second.input_messages
    assert third.input_messages[4:] == [
        *second.output_messages,
        {"role": "user", "parts": [{"type": "text", "text": "And tomorrow?"}], "metadata": {}},
    ]
    assert third.output_messages[0]["parts"] == [
        {"type": "text", "text": "Tomorrow: 21°C, light clouds."}
    ]


@pytest.mark.django_db(transaction=True)
def test_the_live_receiver_builds_one_linear_thread_from_it(
    emitter_dir: Path, team: Team, live_server_asgi: LiveServer
) -> None:
    url = live_server_asgi.url + "/api/v1/otlp/v1/traces"
    token = team.token(team.alpha, "ingest")
    run = _run(["node", EMITTER.name], emitter_dir, 120, OTLP_TRACES_URL=url, OTLP_TOKEN=token)
    assert run.returncode == 0, run.stderr
    thread = Thread.objects.get(project=team.alpha, external_id="chat-node-1")
    rows = Message.objects.filter(thread=thread, active=True).order_by("depth")
    assert [(m.role, [p["type"] for p in m.parts]) for m in rows] == [
        ("system", ["text"]),
        ("user", ["text"]),
        ("assistant", ["reasoning", "tool-call"]),
        ("tool", ["tool-result"]),
        ("assistant", ["text"]),
        ("user", ["text"]),
        ("assistant", ["text"]),
    ]
    assert Message.objects.filter(thread=thread).count() == 7
    assert "weather-agent" in thread.agents
