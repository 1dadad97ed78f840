"""Each convention's fixture through the receiver: one linear thread, stored exactly once, and
turn 2 asked differently becomes a sibling branch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.test import Client

from tests.base import Team
from transcripts.models import Message, Run, Thread

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).parent / "fixtures"
URL = "/api/v1/otlp/v1/traces"
# fixture, conversation id, agent, turn-2 trace id and the span id prefix of that trace
CASES = {
    "ai_sdk": (
        "ai_sdk_two_turns.json",
        "chat-42",
        "weather-agent",
        "0af7651916cd43dd8448eb211c80319c",
        "b2000000000000",
    ),
    "openllmetry": (
        "openllmetry_two_turns.json",
        "sess-7",
        "weather_chat",
        "6e0c63257de34c92bf9efcd03927272e",
        "d2000000000000",
    ),
    "openinference": (
        "openinference_two_turns.json",
        "sess-oi-1",
        "weather_agent",
        "8b4d5f2a0c3e5d7f9a1b2c3d4e5f6071",
        "f2000000000000",
    ),
}
TURN_2 = b"And tomorrow? This is the view from my window."


def send(team: Team, body: bytes) -> None:
    response = Client().post(
        URL,
        body,
        content_type="application/json",
        headers={"Authorization": f"Bearer {team.token(team.alpha, 'ingest')}"},
    )
    assert response.status_code == 200, response.content
    assert b"rejected" not in response.content


def path(thread: Thread) -> list[str]:
    rows = Message.objects.filter(thread=thread, active=True).order_by("depth")
    return [m.role + ": " + " | ".join(p.get("text") or p["type"] for p in m.parts) for m in rows]


@pytest.mark.parametrize("convention", CASES)
def test_a_fixture_becomes_one_linear_thread_exactly_once(team: Team, convention: str) -> None:
    name, conversation, agent, _trace, _prefix = CASES[convention]
    body = (FIXTURES / name).read_bytes()
    send(team, body)
    thread = Thread.objects.get(project=team.alpha, external_id=conversation)
    expected = [
        "user: What's the weather in Paris?",
        "assistant: tool-call",
        "tool: tool-result",
        "assistant: 18°C and sunny in Paris.",
        "user: And tomorrow? This is the view from my window. | file",
        "assistant: Tomorrow: 21°C, light clouds.",
    ]
    found = path(thread)
    assert found[0].startswith("system: ")
    # The AI SDK's first answer opens with its reasoning.
    assert [
        line.replace("The user wants current weather; call the tool. | ", "") for line in found[1:]
    ] == expected
    assert Message.objects.filter(thread=thread).count() == 7
    assert agent in thread.agents
    answer = Message.objects.get(thread=thread, active=True, depth=6)
    assert answer.metadata["otel"]["convention"] == convention
    runs = Run.objects.filter(thread=thread).count()

    send(team, body)
    assert Message.objects.filter(thread=thread).count() == 7
    assert Run.objects.filter(thread=thread).count() == runs


@pytest.mark.parametrize("convention", CASES)
def test_turn_two_asked_differently_is_a_sibling_branch(team: Team, convention: str) -> None:
    name, conversation, _agent, trace, prefix = CASES[convention]
    body = (FIXTURES / name).read_bytes()
    send(team, body)
    retry = body.replace(TURN_2, b"And next week?").replace(trace.encode(), b"9" * 32)
    send(team, retry.replace(prefix.encode(), b"99999999999999"))
    thread = Thread.objects.get(project=team.alpha, external_id=conversation)
    assert path(thread)[-2:] == [
        "user: And next week? | file",
        "assistant: Tomorrow: 21°C, light clouds.",
    ]
    asked = Message.objects.filter(thread=thread, role="user", depth=5)
    assert sorted(m.parts[0]["text"] for m in asked) == [
        "And next week?",
        "And tomorrow? This is the view from my window.",
    ]
    assert len({m.parent_id for m in asked}) == 1
    assert Message.objects.filter(thread=thread).count() == 9


def test_an_agent_named_only_on_the_openinference_agent_span_is_registered(team: Team) -> None:
    document = json.loads((FIXTURES / "openinference_two_turns.json").read_bytes())
    for resource in document["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                kinds = [a["value"].get("stringValue") for a in span["attributes"]]
                if "AGENT" not in kinds:  # the name stays on the AGENT span alone
                    span["attributes"] = [a for a in span["attributes"] if a["key"] != "agent.name"]
    send(team, json.dumps(document).encode())
    thread = Thread.objects.get(project=team.alpha, external_id="sess-oi-1")
    assert "weather_agent" in thread.agents
