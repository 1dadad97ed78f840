"""The demo threads: written through the ledger, created once."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from tests.ledger.invariants import check_all
from transcripts.demo import load_demo
from transcripts.models import Message, Run, RunStatus, Thread

pytestmark = pytest.mark.django_db


def thread_titled(fragment: str) -> Thread:
    return Thread.objects.get(title__icontains=fragment)


def active_path(thread: Thread) -> list[Message]:
    return list(Message.objects.filter(thread=thread, active=True).order_by("depth"))


def test_load_demo_creates_three_consistent_threads() -> None:
    assert load_demo() is True
    threads = list(Thread.objects.all())
    assert len(threads) == 3
    assert all(t.metadata.get("demo") is True for t in threads)
    check_all(threads)


def test_the_tool_agent_thread_has_reasoning_a_tool_call_and_its_result() -> None:
    load_demo()
    path = active_path(thread_titled("Weather agent"))
    assert [m.role for m in path] == ["user", "assistant", "tool", "assistant"]
    assert [p["type"] for p in path[1].parts] == ["reasoning", "text", "tool-call"]
    assert path[1].parts[0]["signature"] == "sig-demo-1"
    assert path[2].parts[0]["toolName"] == "get_forecast"
    assert path[2].parts[0]["toolCallId"] == path[1].parts[2]["toolCallId"]
    assert path[3].metadata["finishReason"] == "stop"
    assert Run.objects.get(
        thread=path[1].thread, generator="demo", model="demo-1", fork_from=path[0]
    ).usage == {
        "inputTokens": 942,
        "outputTokens": 154,
    }


def test_the_regeneration_thread_keeps_every_branch_and_activates_the_edit() -> None:
    load_demo()
    thread = thread_titled("Haiku")
    roots = Message.objects.filter(thread=thread, depth=0)
    assert roots.count() == 2
    original = roots.get(active=False)
    answers = Run.objects.filter(thread=thread, fork_from=original).order_by("created_at")
    assert [r.status for r in answers] == ["superseded", "superseded", "committed"]
    assert [r.superseded_by_id for r in answers[:2]] == [answers[1].id, answers[2].id]
    path = active_path(thread)
    assert "MVCC" in path[0].parts[0]["text"]
    assert [m.role for m in path] == ["user", "assistant"]
    assert Message.objects.filter(thread=thread).count() == 6
    assert Run.objects.get(thread=thread, fork_from=None, status=RunStatus.SUPERSEDED)


def test_the_multi_agent_thread_attributes_messages_to_registered_agents() -> None:
    load_demo()
    thread = thread_titled("agents")
    assert set(thread.agents) == {"agent-planner", "agent-coder"}
    path = active_path(thread)
    agents = [m.metadata.get("agentId") for m in path]
    assert agents == [None, "agent-planner", "agent-coder", None, "agent-coder"]
    assert [m.role for m in path] == ["user", "assistant", "assistant", "tool", "assistant"]
    assert path[3].parts[0]["isError"] is True
    assert path[3].parts[0]["toolName"] == "run_tests"
    assert path[4].metadata["annotations"][0]["kind"] == "data-diff"


def test_load_demo_is_idempotent() -> None:
    assert load_demo() is True
    counts = (Thread.objects.count(), Run.objects.count(), Message.objects.count())
    assert load_demo() is False
    assert (Thread.objects.count(), Run.objects.count(), Message.objects.count()) == counts


def test_the_load_demo_command_loads_once() -> None:
    out = StringIO()
    call_command("load_demo", stdout=out)
    call_command("load_demo", stdout=out)
    assert out.getvalue().splitlines() == ["Demo data loaded.", "Demo data already present."]
    assert Thread.objects.count() == 3
