"""Realistic demo threads, written through the ledger like any other client would."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from transcripts import ledger
from transcripts.ledger.default_project import default_project
from transcripts.models import Message, Run, Thread

DEMO_MARKER = "demo"

# Seconds each kind of event takes to arrive, so the demo runs carry timings like a real
# stream (the run page draws their waterfall); a kind not listed takes the default.
_PACE = {
    "text-delta": 0.035,
    "reasoning": 0.03,
    "step-started": 0.25,
    "tool-call": 0.15,
    "tool-result": 0.8,
}
_DEFAULT_PACE = 0.02
RUN_GAP = timedelta(seconds=0.5)
DEMO_SPAN = timedelta(seconds=30)  # the demo's events take about 15 s of it


def _words(text: str) -> Iterator[str]:
    """Split text into token-like deltas, as a model would stream it."""
    word = ""
    for char in text:
        word += char
        if char in " \n":
            yield word
            word = ""
    if word:
        yield word


class _Script:
    """Builds the event list of one run."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def add(self, kind: str, **data: Any) -> _Script:
        self.events.append({"seq": len(self.events) + 1, "kind": kind, "data": data})
        return self

    def user(self, text: str) -> _Script:
        return self.add("message", role="user", parts=[{"type": "text", "text": text}])

    def say(self, text: str) -> _Script:
        for delta in _words(text):
            self.add("text-delta", delta=delta)
        return self

    def think(self, text: str, signature: str | None = None) -> _Script:
        for delta in _words(text):
            self.add("reasoning", text=delta)
        if signature:
            self.add("reasoning", text="", signature=signature)
        return self


def _run(
    clock: _Clock,
    thread: Thread,
    script: _Script,
    *,
    fork_from: Any = ledger.HEAD,
    model: str = "demo-1",
) -> Run:
    run, _ = ledger.begin_run(thread=thread, fork_from=fork_from, generator="demo", model=model)
    ledger.append_events(run=run, events=clock.paced(script.events))
    return ledger.commit_run(run=run)


class _Clock:
    """When the demo's events happened: one clock for the whole demo, starting DEMO_SPAN ago
    and paced by kind, so runs follow each other in the order they are written and every
    moment is in the past."""

    def __init__(self) -> None:
        self.moment = datetime.now(UTC) - DEMO_SPAN

    def paced(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The events stamped with when they happened (a pause before each run)."""
        self.moment += RUN_GAP
        paced = []
        for event in events:
            self.moment += timedelta(seconds=_PACE.get(event["kind"], _DEFAULT_PACE))
            paced.append({**event, "at": self.moment.isoformat()})
        return paced


def _last_message(run: Run) -> Message:
    return run.messages.order_by("-position").first()  # type: ignore[return-value]


def _tool_agent(clock: _Clock) -> None:
    thread, _ = ledger.create_thread(
        project=default_project(),
        title="Weather agent: should I bike to work?",
        metadata={DEMO_MARKER: True, "tags": ["tools", "reasoning"]},
    )
    _run(clock, thread, _Script().user("Should I bike to work in Amsterdam tomorrow morning?"))
    script = (
        _Script()
        .add("step-started")
        .think(
            "The user wants a recommendation for tomorrow morning in Amsterdam. "
            "I need the forecast: call the weather tool for the 07:00-09:00 window.",
            signature="sig-demo-1",
        )
        .say("Let me check the forecast for your commute.")
        .add(
            "tool-call",
            toolCallId="call_weather_1",
            toolName="get_forecast",
            input={"city": "Amsterdam", "date": "tomorrow", "hours": [7, 8, 9]},
        )
        .add(
            "step-finished",
            finishReason="tool-calls",
            usage={"inputTokens": 412, "outputTokens": 58},
        )
        .add(
            "tool-result",
            toolCallId="call_weather_1",
            toolName="get_forecast",
            output={"07:00": "light rain, 9°C", "08:00": "cloudy, 10°C", "09:00": "dry, 11°C"},
            isError=False,
        )
        .add("step-started")
        .say(
            "**Yes, but leave a little later.** Light rain is forecast at 07:00, "
            "clearing by 08:00:\n\n"
            "| time | forecast |\n|---|---|\n| 07:00 | light rain, 9°C |\n"
            "| 08:00 | cloudy, 10°C |\n| 09:00 | dry, 11°C |\n\n"
            "If you leave after 08:00 you should stay dry. Take a light jacket either way."
        )
        .add("step-finished", finishReason="stop", usage={"inputTokens": 530, "outputTokens": 96})
    )
    _run(clock, thread, script, model="demo-1")


def _regenerations(clock: _Clock) -> None:
    thread, _ = ledger.create_thread(
        project=default_project(),
        title="Haiku about PostgreSQL (regenerated twice, prompt edited)",
        metadata={DEMO_MARKER: True, "tags": ["branches"]},
    )
    user_run = _run(clock, thread, _Script().user("Write a haiku about PostgreSQL."))
    prompt = _last_message(user_run)
    answers = [
        ("demo-1", "Rows in quiet pages\nwrite-ahead log keeps the promise\ncommit, and it stays"),
        ("demo-1", "Tables wake at dawn\nvacuum sweeps the dead tuples\nindexes hum along"),
        ("demo-2", "One elephant stands\nholding every row you wrote\nnever forgetting"),
    ]
    for model, text in answers:
        _run(
            clock,
            thread,
            _Script()
            .add("step-started")
            .say(text)
            .add(
                "step-finished", finishReason="stop", usage={"inputTokens": 14, "outputTokens": 19}
            ),
            fork_from=prompt.id,
            model=model,
        )
    # The user edits the prompt: a run forked from the prompt's parent (none: a new root).
    edited = _run(
        clock, thread, _Script().user("Write a haiku about PostgreSQL's MVCC."), fork_from=None
    )
    _run(
        clock,
        thread,
        _Script().say("Each reader sees its\nown snapshot of the same rows\nwriters never wait"),
        fork_from=_last_message(edited).id,
    )


def _multi_agent(clock: _Clock) -> None:
    agents = {
        "agent-planner": {
            "agent_id": "agent-planner",
            "agent_identifier": "planner_v1",
            "agent_name": "Planner",
            "created_at": "2026-11-01T09:00:00Z",
        },
        "agent-coder": {
            "agent_id": "agent-coder",
            "agent_identifier": "coder_v2",
            "agent_name": "Coder",
            "created_at": "2026-11-01T09:00:00Z",
        },
    }
    thread, _ = ledger.create_thread(
        project=default_project(),
        title="Planner and coder agents fix a failing test",
        metadata={DEMO_MARKER: True, "tags": ["multi-agent"]},
        agents=agents,
    )
    _run(clock, thread, _Script().user("test_parse_dates fails on leap years. Can you fix it?"))
    script = (
        _Script()
        .add("message-start", role="assistant", agentId="agent-planner")
        .say("Plan: 1) reproduce with 2024-02-29, 2) fix the parser, 3) add a regression test.")
        .add("message-end")
        .add("message-start", role="assistant", agentId="agent-coder")
        .add(
            "tool-call",
            toolCallId="call_run_tests",
            toolName="run_tests",
            input={"path": "tests/test_dates.py", "k": "leap"},
        )
        .add(
            "tool-result",
            toolCallId="call_run_tests",
            output="FAILED test_parse_dates - ValueError: day is out of range for month",
            isError=True,
        )
        .add("message-start", role="assistant", agentId="agent-coder")
        .say(
            "Reproduced. The parser builds `date(year, 2, 29)` before checking the year.\n\n"
            "```python\ndef parse(text: str) -> date:\n    return date.fromisoformat(text)\n```\n\n"
            "`date.fromisoformat` validates leap years itself."
        )
        .add("data-diff", file="dates.py", added=2, removed=9)
        .add("message-end")
    )
    _run(clock, thread, script, model="demo-2")


def load_demo() -> bool:
    """Create the demo threads unless they exist; returns whether it created them."""
    if Thread.objects.filter(metadata__contains={DEMO_MARKER: True}).exists():
        return False
    clock = _Clock()
    _tool_agent(clock)
    _regenerations(clock)
    _multi_agent(clock)
    return True
