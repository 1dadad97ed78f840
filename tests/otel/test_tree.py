"""The tree the receiver builds: turns, branches at divergences, one run per trace, exactly once."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.base import Team
from tests.otel.spans import SECOND, T0, chat, request, span, text
from transcripts.formats.otlp.model import LlmCall, SpanData
from transcripts.ledger import record_llm_calls
from transcripts.models import Event, Message, Run, Thread

pytestmark = pytest.mark.django_db
URL = "/api/v1/otlp/v1/traces"
CONV = "conv-tree"
T1, T2, T3 = "1" * 32, "2" * 32, "3" * 32


def send(team: Team, *spans: Span) -> None:
    response = Client().post(
        URL,
        request(*spans).SerializeToString(),
        content_type="application/x-protobuf",
        headers={"Authorization": f"Bearer {team.token(team.alpha, 'ingest')}"},
    )
    assert response.status_code == 200, response.content


def tool_call(call_id: str = "c1") -> dict[str, Any]:
    return {
        "role": "assistant",
        "parts": [
            {"type": "thinking", "content": "Look it up", "signature": "sig-1"},
            {
                "type": "tool_call",
                "id": call_id,
                "name": "get_weather",
                "arguments": {"city": "Paris"},
            },
        ],
    }


def tool_result(call_id: str = "c1") -> dict[str, Any]:
    # Pydantic AI sends tool results in a user message.
    return {
        "role": "user",
        "parts": [
            {"type": "tool_call_response", "id": call_id, "name": "get_weather", "result": "rainy"}
        ],
    }


U1, A1 = text("user", "Weather in Paris?"), text("assistant", "Rainy.")
U2, A2 = text("user", "And London?"), text("assistant", "Foggy.")


def turn_1_calls(trace: str = T1, start: int = T0) -> list[Span]:
    """An agent run: the model asks for a tool, gets its result, answers."""
    return [
        chat(
            trace=trace,
            span_id="a" * 16,
            inputs=[U1],
            outputs=[tool_call()],
            conversation=CONV,
            start=start,
        ),
        chat(
            trace=trace,
            span_id="b" * 16,
            inputs=[U1, tool_call(), tool_result()],
            outputs=[A1],
            conversation=CONV,
            start=start + SECOND,
        ),
    ]


def turn_2(
    question: dict[str, Any], answer: dict[str, Any], trace: str, span_id: str, start: int
) -> Span:
    history = [U1, tool_call(), tool_result(), A1, question]
    return chat(
        trace=trace,
        span_id=span_id,
        inputs=history,
        outputs=[answer],
        conversation=CONV,
        start=start,
    )


def tree(thread: Thread) -> set[tuple[Any, ...]]:
    """The tree as (path of role/content) tuples of every message, ids left out."""
    messages = {m.id: m for m in Message.objects.filter(thread=thread)}

    def path(message: Message) -> tuple[Any, ...]:
        out: list[Any] = []
        node: Message | None = message
        while node is not None:
            out.append((node.role, json.dumps(node.parts, sort_keys=True)))
            node = messages.get(node.parent_id) if node.parent_id else None
        return tuple(reversed(out))

    return {path(m) for m in messages.values()}


def active_texts(thread: Thread) -> list[str]:
    rows = Message.objects.filter(thread=thread, active=True).order_by("depth")
    return [m.role + ":" + ",".join(p.get("text") or p["type"] for p in m.parts) for m in rows]


def counts() -> tuple[int, int, int]:
    return Run.objects.count(), Event.objects.count(), Message.objects.count()


def test_an_agent_run_of_two_calls_is_one_run(team: Team) -> None:
    send(team, *turn_1_calls())
    thread = Thread.objects.get(external_id=CONV)
    assert active_texts(thread) == [
        "system:Be brief.",
        "user:Weather in Paris?",
        "assistant:Look it up,tool-call",
        "tool:tool-result",
        "assistant:Rainy.",
    ]
    assert Run.objects.filter(thread=thread).count() == 1
    calling = Message.objects.get(thread=thread, depth=2)
    assert calling.parts[0] == {"type": "reasoning", "text": "Look it up", "signature": "sig-1"}
    assert calling.parts[1]["input"] == {"city": "Paris"}
    result = Message.objects.get(thread=thread, depth=3).parts[0]
    assert result == {
        "type": "tool-result",
        "toolCallId": "c1",
        "toolName": "get_weather",
        "output": "rainy",
        "isError": False,
    }
    # Each answer keeps its own call's finish reason and usage; the run sums them.
    assert calling.metadata["otel"]["spanId"] == "a" * 16
    assert Run.objects.get(thread=thread).usage == {"inputTokens": 20, "outputTokens": 10}


def test_turns_continue_and_a_different_turn_2_branches_at_turn_2(team: Team) -> None:
    send(team, *turn_1_calls())
    send(team, turn_2(U2, A2, T2, "c" * 16, T0 + 10 * SECOND))
    thread = Thread.objects.get(external_id=CONV)
    assert active_texts(thread)[-2:] == ["user:And London?", "assistant:Foggy."]
    london = Message.objects.get(thread=thread, role="user", parts__0__text="And London?")
    send(
        team,
        turn_2(
            text("user", "And Rome?"), text("assistant", "Sunny."), T3, "d" * 16, T0 + 20 * SECOND
        ),
    )
    rome = Message.objects.get(thread=thread, role="user", parts__0__text="And Rome?")
    assert rome.parent_id == london.parent_id  # siblings at the divergence
    assert active_texts(thread)[-2:] == ["user:And Rome?", "assistant:Sunny."]
    old = Run.objects.get(pk=london.run_id)
    assert old.status == "superseded"
    assert Message.objects.filter(thread=thread).count() == 9


def test_a_regenerated_answer_is_a_sibling_of_the_old_one(team: Team) -> None:
    send(team, turn_2(U2, A2, T2, "c" * 16, T0))
    send(team, turn_2(U2, text("assistant", "Cloudy."), T3, "d" * 16, T0 + SECOND))
    thread = Thread.objects.get(external_id=CONV)
    answers = Message.objects.filter(thread=thread, role="assistant", depth=6)
    assert sorted(m.parts[0]["text"] for m in answers) == ["Cloudy.", "Foggy."]
    assert len({m.parent_id for m in answers}) == 1
    assert active_texts(thread)[-1] == "assistant:Cloudy."


def test_the_same_spans_again_change_nothing(team: Team) -> None:
    spans = [*turn_1_calls(), turn_2(U2, A2, T2, "c" * 16, T0 + 10 * SECOND)]
    send(team, *spans)
    before = counts()
    thread = Thread.objects.get(external_id=CONV)
    head = thread.head_id
    send(team, *spans)
    send(team, spans[1])
    assert counts() == before
    thread.refresh_from_db()
    assert thread.head_id == head


def test_spans_split_over_requests_or_out_of_order_give_the_same_tree(team: Team) -> None:
    spans = [*turn_1_calls(), turn_2(U2, A2, T2, "c" * 16, T0 + 10 * SECOND)]
    send(team, *spans)
    one_request = tree(Thread.objects.get(external_id=CONV))
    Thread.objects.filter(external_id=CONV).update(external_id="first")
    for piece in reversed(spans):
        send(team, piece)
    assert tree(Thread.objects.get(external_id=CONV)) == one_request
    Thread.objects.filter(external_id=CONV).update(external_id="second")
    send(team, spans[0])
    send(team, spans[2])
    send(team, spans[1])
    assert tree(Thread.objects.get(external_id=CONV)) == one_request


def test_the_agent_name_of_the_parent_span_goes_into_the_agents_registry(team: Team) -> None:
    agent = span(
        trace=T1,
        span_id="f" * 16,
        name="agent run",
        attributes={"agent_name": "support", "gen_ai.operation.name": "invoke_agent"},
    )
    call = chat(
        trace=T1, span_id="a" * 16, parent="f" * 16, inputs=[U1], outputs=[A1], conversation=CONV
    )
    send(team, call, agent)
    thread = Thread.objects.get(external_id=CONV)
    assert thread.agents["support"]["agent_name"] == "support"
    assert Message.objects.get(thread=thread, role="assistant").metadata["agentId"] == "support"


def test_the_older_per_message_events_are_read(team: Team) -> None:
    events = [
        {"event.name": "gen_ai.system.message", "content": "Be kind.", "role": "system"},
        {"event.name": "gen_ai.user.message", "content": "Hi there", "role": "user"},
        {
            "event.name": "gen_ai.choice",
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": "Hello!"},
        },
    ]
    legacy = span(
        trace=T1,
        span_id="e" * 16,
        attributes={
            "gen_ai.system": "openai",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.conversation.id": CONV,
            "events": json.dumps(events),
        },
    )
    send(team, legacy)
    thread = Thread.objects.get(external_id=CONV)
    assert active_texts(thread) == ["system:Be kind.", "user:Hi there", "assistant:Hello!"]
    answer = Message.objects.get(thread=thread, role="assistant")
    assert (answer.metadata["finishReason"], answer.metadata["provider"]) == ("stop", "openai")


@pytest.mark.django_db(transaction=True)
def test_two_exports_of_one_new_conversation_at_once_store_it_once(team: Team) -> None:
    body = request(*turn_1_calls()).SerializeToString()
    token = team.token(team.alpha, "ingest")
    statuses: list[int] = []

    def export() -> None:
        try:
            response = Client().post(
                URL,
                body,
                content_type="application/x-protobuf",
                headers={"Authorization": f"Bearer {token}"},
            )
            statuses.append(response.status_code)
        finally:
            connection.close()

    workers = [threading.Thread(target=export) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert statuses == [200] * 4
    thread = Thread.objects.get(external_id=CONV)
    assert Run.objects.filter(thread=thread).count() == 1
    assert Message.objects.filter(thread=thread).count() == 5


def test_a_late_older_call_is_stored_but_the_newest_branch_stays_active(team: Team) -> None:
    send(team, *turn_1_calls())
    send(
        team,
        turn_2(
            text("user", "And Rome?"), text("assistant", "Sunny."), T3, "d" * 16, T0 + 20 * SECOND
        ),
    )
    send(team, turn_2(U2, A2, T2, "c" * 16, T0 + 10 * SECOND))
    thread = Thread.objects.get(external_id=CONV)
    assert active_texts(thread)[-2:] == ["user:And Rome?", "assistant:Sunny."]
    assert Message.objects.filter(thread=thread, parts__0__text="And London?").exists()
    assert Message.objects.filter(thread=thread).count() == 9


def test_a_call_that_is_not_canonical_is_refused_and_the_others_are_stored(team: Team) -> None:
    def call(conversation: str, parts: list[dict[str, Any]]) -> LlmCall:
        data = SpanData(
            trace_id=T1,
            span_id="a" * 16,
            parent_span_id=None,
            name="chat",
            start_ns=T0,
            end_ns=T0 + SECOND,
            attributes={},
        )
        return LlmCall(
            span=data,
            convention="test",
            input_messages=[{"role": "user", "parts": [{"type": "text", "text": "Hi"}]}],
            output_messages=[
                {"role": "assistant", "parts": parts, "metadata": {"raw": b"\x00\x01"}}
            ],
            conversation_id=conversation,
        )

    bad = call("bad", [{"type": "tool-call", "toolName": "x"}])
    good = call("good", [{"type": "text", "text": "Hello"}])
    result = record_llm_calls(project=team.alpha, calls=[bad, good])
    assert [(c.conversation_id, reason.split(":")[0]) for c, reason in result.rejected] == [
        ("bad", "not a canonical assistant message")
    ]
    answer = Message.objects.get(thread__external_id="good", role="assistant")
    assert answer.metadata["raw"] == "AAE="  # bytes kept, as base64
    assert not Thread.objects.filter(external_id="bad").exists()
