"""A real emitter: Pydantic AI's OpenTelemetry instrumentation and the OTel SDK's OTLP/HTTP
exporter (protobuf) posting to a live server on the test database; FunctionModel, no network."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent, InstrumentationSettings
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ThinkingPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.base import Team
from transcripts.models import Event, Message, Run, Thread

pytestmark = pytest.mark.django_db(transaction=True)
CONVERSATION = "pydantic-ai-conversation-1"


def _answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Think and call the tool for a new question; answer from the tool's result."""
    last = messages[-1]
    returned = [p for p in last.parts if p.part_kind == "tool-return"]
    if returned:
        return ModelResponse(parts=[TextPart(f"It is {returned[0].content}.")])
    question = next(p.content for p in last.parts if p.part_kind == "user-prompt")
    city = str(question).rstrip("?").split()[-1]
    return ModelResponse(
        parts=[
            ThinkingPart(f"I should look up {city}.", signature=f"sig-{city}"),
            ToolCallPart("get_weather", {"city": city}, tool_call_id=f"call-{city}"),
        ]
    )


class Emitter:
    """An instrumented agent whose spans go to the live server (and are kept to send again)."""

    def __init__(self, endpoint: str, token: str, version: int) -> None:
        self.exporter = OTLPSpanExporter(
            endpoint=endpoint, headers={"Authorization": f"Bearer {token}"}
        )
        self.kept = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(BatchSpanProcessor(self.exporter))
        self.provider.add_span_processor(SimpleSpanProcessor(self.kept))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # formats 2-4 are deprecated, and still emitted
            settings = InstrumentationSettings(
                tracer_provider=self.provider,
                include_content=True,
                version=version,  # type: ignore[arg-type]
            )
        self.agent = Agent(FunctionModel(_answer), name="weather", instructions="Be brief.")
        Agent.instrument_all(settings)

        @self.agent.tool_plain
        def get_weather(city: str) -> str:
            return {"Paris": "rainy", "London": "foggy", "Rome": "sunny"}[city]

    def run(self, prompt: str, history: list[ModelMessage] | None = None) -> Any:
        result = self.agent.run_sync(prompt, message_history=history, conversation_id=CONVERSATION)
        assert self.provider.force_flush(10_000)
        return result

    def spans(self) -> tuple[ReadableSpan, ...]:
        return self.kept.get_finished_spans()

    def close(self) -> None:
        self.provider.shutdown()
        Agent.instrument_all(False)


@pytest.fixture(params=[3, 5], ids=["format-3", "format-5"])
def emitter(request: Any, team: Team, live_server_asgi: Any) -> Iterator[Emitter]:
    endpoint = live_server_asgi.url + "/api/v1/otlp/v1/traces"
    emitter = Emitter(endpoint, team.token(team.alpha, "ingest"), request.param)
    yield emitter
    emitter.close()


def _path(thread: Thread) -> list[str]:
    rows = Message.objects.filter(thread=thread, active=True).order_by("depth")
    return [m.role + ": " + " | ".join(p.get("text") or p["type"] for p in m.parts) for m in rows]


def test_a_pydantic_ai_conversation_becomes_a_branching_tree_exactly_once(
    emitter: Emitter, team: Team
) -> None:
    first = emitter.run("Weather in Paris?")
    emitter.run("And London?", first.all_messages())
    thread = Thread.objects.get(project=team.alpha, external_id=CONVERSATION)
    turn_1 = [
        "system: Be brief.",
        "user: Weather in Paris?",
        "assistant: I should look up Paris. | tool-call",
        "tool: tool-result",
        "assistant: It is rainy.",
    ]
    assert _path(thread) == [
        *turn_1,
        "user: And London?",
        "assistant: I should look up London. | tool-call",
        "tool: tool-result",
        "assistant: It is foggy.",
    ]
    # One agent run (model, tool, model) is one run; each turn one more.
    assert Run.objects.filter(thread=thread, status="committed").count() == 2
    assert thread.agents["weather"]["agent_name"] == "weather"
    call = Message.objects.get(thread=thread, active=True, depth=2)
    assert call.parts[1] == {
        "type": "tool-call",
        "toolCallId": "call-Paris",
        "toolName": "get_weather",
        "input": {"city": "Paris"},
    }
    assert call.metadata["agentId"] == "weather"
    assert call.metadata["usage"]["inputTokens"] > 0
    assert call.metadata["model"].startswith("function:")
    london = Message.objects.get(thread=thread, role="user", parts__0__text="And London?")

    # Turn 2 asked differently: a sibling of "And London?", the old branch kept.
    emitter.run("And Rome?", first.all_messages())
    thread.refresh_from_db()
    assert _path(thread)[-4:] == [
        "user: And Rome?",
        "assistant: I should look up Rome. | tool-call",
        "tool: tool-result",
        "assistant: It is sunny.",
    ]
    assert _path(thread)[:5] == turn_1
    rome = Message.objects.get(thread=thread, role="user", parts__0__text="And Rome?")
    assert rome.parent_id == london.parent_id
    assert Run.objects.get(pk=london.run_id).status == "superseded"
    assert Message.objects.filter(thread=thread).count() == 13

    # The exporter sends everything again (a retry): nothing changes.
    before = (
        Run.objects.count(),
        Event.objects.count(),
        Message.objects.count(),
        thread.head_id,
    )
    assert emitter.exporter.export(emitter.spans()) == SpanExportResult.SUCCESS
    thread.refresh_from_db()
    after = (Run.objects.count(), Event.objects.count(), Message.objects.count(), thread.head_id)
    assert after == before
