"""UI fixtures: a staff reader, a non-staff viewer and an anonymous outsider."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.factories import events, make_thread
from transcripts import ledger
from transcripts.models import Message, Thread


@pytest.fixture
def staff(db: Any) -> Any:
    """A staff user."""
    return get_user_model().objects.create_user("staff", password="pw-staff-123", is_staff=True)


@pytest.fixture
def viewer(db: Any) -> Any:
    """A logged-in user without staff rights."""
    return get_user_model().objects.create_user("viewer", password="pw-viewer-123")


@pytest.fixture
def staff_client(staff: Any) -> Client:
    """A client logged in as staff."""
    client = Client()
    client.force_login(staff)
    return client


@pytest.fixture
def viewer_client(viewer: Any) -> Client:
    """A client logged in as a non-staff viewer."""
    client = Client()
    client.force_login(viewer)
    return client


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
