"""Factories: build threads, runs and events through the ledger, as real clients do."""

from __future__ import annotations

from typing import Any

from transcripts import ledger
from transcripts.ledger.default_project import default_project
from transcripts.models import Message, Project, Run, Thread


def events(*items: tuple[str, dict[str, Any]], start: int = 1) -> list[dict[str, Any]]:
    """Number (kind, data) pairs into events from seq start."""
    return [{"seq": start + i, "kind": kind, "data": data} for i, (kind, data) in enumerate(items)]


def user_message(text: str) -> tuple[str, dict[str, Any]]:
    """A complete user message event."""
    return ("message", {"role": "user", "parts": [{"type": "text", "text": text}]})


def make_thread(
    title: str = "A thread", *, project: Project | None = None, **kwargs: Any
) -> Thread:
    """A new empty thread (in the default project unless told otherwise)."""
    thread, _ = ledger.create_thread(project=project or default_project(), title=title, **kwargs)
    return thread


def make_run(
    thread: Thread,
    *items: tuple[str, dict[str, Any]],
    fork_from: Any = ledger.HEAD,
    commit: bool = True,
    **kwargs: Any,
) -> Run:
    """A run holding the given events, committed unless commit=False."""
    run, _ = ledger.begin_run(thread=thread, fork_from=fork_from, **kwargs)
    if items:
        ledger.append_events(run=run, events=events(*items))
    if commit:
        run = ledger.commit_run(run=run)
    return run


def say(thread: Thread, text: str, **kwargs: Any) -> Run:
    """A committed run with one streamed assistant answer."""
    deltas = [("text-delta", {"delta": word + " "}) for word in text.split()]
    return make_run(thread, *deltas, **kwargs)


def ask(thread: Thread, text: str, **kwargs: Any) -> Run:
    """A committed run holding one user message."""
    return make_run(thread, user_message(text), **kwargs)


def conversation(turns: int = 2, title: str = "Conversation") -> Thread:
    """A linear thread of user/assistant turns, each message its own run."""
    thread = make_thread(title)
    for turn in range(turns):
        ask(thread, f"question {turn}")
        say(thread, f"answer {turn}")
    thread.refresh_from_db()
    return thread


def last_message(run: Run) -> Message:
    """The last message a committed run materialized."""
    message = run.messages.order_by("-position").first()
    assert message is not None
    return message
