"""A thread with a fork point of three answers, one of them rated preferred."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from tests.base import Team
from tests.factories import ask, last_message, make_run, make_thread
from transcripts.ledger.ratings import rate_run
from transcripts.models import Message, Run, Thread


@dataclass
class Regenerated:
    """system, user; answers first (superseded), second (rated), third (active); a follow-up."""

    thread: Thread
    system: Message
    prompt: Message
    first: Run
    second: Run
    third: Run
    follow_up: Run
    final: Run


def answer(thread: Thread, text: str, **kwargs: Any) -> Run:
    """A committed run with one assistant answer streamed as a single delta."""
    return make_run(thread, ("text-delta", {"delta": text}), **kwargs)


def regenerated_thread(team: Team, *, title: str = "Arithmetic") -> Regenerated:
    """A thread whose answer was regenerated twice, the middle answer rated preferred."""
    thread = make_thread(title, project=team.alpha)
    system = make_run(
        thread, ("message", {"role": "system", "parts": [{"type": "text", "text": "Be brief."}]})
    )
    prompt = last_message(ask(thread, "What is two plus two?"))
    first = answer(thread, "It is four.", model="model-a")
    second = answer(thread, "Four.", fork_from=prompt.id, model="model-b")
    third = answer(thread, "2 + 2 = 4", fork_from=prompt.id, model="model-c")
    rate_run(user=team.editor, run=second, preferred=True)
    follow_up = ask(thread, "And three plus three?")
    final = answer(thread, "Six.", model="model-c")
    thread.refresh_from_db()
    return Regenerated(thread, last_message(system), prompt, first, second, third, follow_up, final)


@pytest.fixture
def regenerated(team: Team) -> Regenerated:
    """The regenerated thread in project alpha."""
    return regenerated_thread(team)
