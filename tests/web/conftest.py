"""UI fixtures: members of the default project (where the factories put threads) with each role,
and an anonymous client. Tests of who may do what across projects use the `team` fixture."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.base import make_user
from tests.factories import events, make_thread
from transcripts import ledger
from transcripts.ledger.default_project import default_project
from transcripts.ledger.projects import set_member
from transcripts.models import Message, Thread


def _member(username: str, role: str) -> User:
    user = make_user(username)
    set_member(project=default_project(), user=user, role=role)
    return user


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def viewer(db: Any) -> User:
    """A viewer of the default project: reads and reports."""
    return _member("default-viewer", "viewer")


@pytest.fixture
def editor(db: Any) -> User:
    """An editor of the default project: also regenerates, edits, replies, stops, restores."""
    return _member("default-editor", "editor")


@pytest.fixture
def moderator(db: Any) -> User:
    """A moderator of the default project: also sees hidden threads and handles reports."""
    return _member("default-moderator", "moderator")


@pytest.fixture
def viewer_client(viewer: User) -> Client:
    """A client logged in as the default project's viewer."""
    return _client(viewer)


@pytest.fixture
def editor_client(editor: User) -> Client:
    """A client logged in as the default project's editor."""
    return _client(editor)


@pytest.fixture
def moderator_client(moderator: User) -> Client:
    """A client logged in as the default project's moderator."""
    return _client(moderator)


@pytest.fixture
def outsider(db: Any) -> Client:
    """An anonymous client."""
    return Client()


@pytest.fixture
def htmx() -> dict[str, str]:
    """Headers of an htmx request."""
    return {"HX-Request": "true"}


def long_thread(count: int, title: str = "Long thread", **kwargs: Any) -> Thread:
    """A linear thread of count messages (user/assistant alternating) in one committed run."""
    thread = make_thread(title, **kwargs)
    items = [
        (
            "message",
            {
                "role": "user" if i % 2 == 0 else "assistant",
                "parts": [{"type": "text", "text": f"message number {i}"}],
            },
        )
        for i in range(count)
    ]
    run, _ = ledger.begin_run(thread=thread, model="bench-model")
    for start in range(0, count, 2000):
        ledger.append_events(run=run, events=events(*items[start : start + 2000], start=start + 1))
    ledger.commit_run(run=run)
    thread.refresh_from_db()
    return thread


def message_at(thread: Thread, depth: int, *, active: bool = True) -> Message:
    """The message at depth (on the active path by default)."""
    return Message.objects.get(thread=thread, depth=depth, active=active)
