"""The project's live stream (`/p/<slug>/live/`) and the list's one-row answer (`?only=`):
members only, hidden threads only to those who see them, never another project's events, and
a row only when the thread passes the list's filters."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client

from tests.base import Team
from tests.factories import make_run, make_thread
from tests.live_server import LiveServer
from transcripts import ledger
from transcripts.ids import ulid_to_uuid
from transcripts.ledger import project_event
from transcripts.ledger.default_project import default_project
from transcripts.ledger.moderation import hide_thread

LIVE = pytest.mark.django_db(transaction=True)


def test_a_project_event_names_the_thread_and_run_as_ulids() -> None:
    thread, run = "01JC0000000000000000000001", "01JC0000000000000000000002"
    payload = {"kind": "run", "thread": ulid_to_uuid(thread), "run": ulid_to_uuid(run)}

    event = project_event(json.dumps({**payload, "status": "streaming", "hidden": False}))

    assert event == {
        "kind": "run", "thread": thread, "run": run, "status": "streaming", "hidden": False
    }  # fmt: skip
    assert project_event("not json") is None
    assert project_event(json.dumps({"kind": "drop", "thread": payload["thread"]})) is None
    assert project_event(json.dumps({"kind": "thread", "thread": "x"})) is None


@pytest.mark.django_db
def test_the_list_answers_one_row_only_when_the_thread_passes_its_filters(
    editor_client: Client,
) -> None:
    thread = make_thread("Kept by the filter")
    failed = make_thread("A failing one")
    ledger.fail_run(run=make_run(failed, commit=False), error={"message": "boom"})

    row = editor_client.get("/", {"only": thread.id})
    assert row.status_code == 200
    assert (
        "Kept by the filter" in row.content.decode()
        and '<tr class="thread-row"' in row.content.decode()
    )
    assert editor_client.get("/", {"only": thread.id, "failed": "on"}).status_code == 204
    assert editor_client.get("/", {"only": failed.id, "failed": "on"}).status_code == 200
    assert editor_client.get("/", {"only": "not-an-id"}).status_code == 204
    assert editor_client.get("/", {"only": thread.id, "since": "tuesday"}).status_code == 400


@dataclass
class Opened:
    """A stream's response and its lines (read once)."""

    response: httpx.Response
    lines: Iterator[str]


@contextmanager
def stream(server: LiveServer, user: User | None, slug: str) -> Iterator[Opened]:
    """The project's live stream as user (signed in by a session cookie; None: anonymous)."""
    cookies = {}
    if user is not None:
        client = Client()
        client.force_login(user)
        cookies[settings.SESSION_COOKIE_NAME] = client.cookies[settings.SESSION_COOKIE_NAME].value
    with (
        httpx.Client(base_url=server.url, cookies=cookies, timeout=5) as http,
        http.stream("GET", f"/p/{slug}/live/") as response,
    ):
        yield Opened(response, response.iter_lines())


def events_until(opened: Opened, done: Any, timeout: float = 5.0) -> list[dict[str, Any]]:
    """The events read until done(event) holds (an AssertionError after timeout)."""
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    name = ""
    for line in opened.lines:
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: ") and name in ("thread", "run"):
            seen.append({"event": name, **json.loads(line[6:])})
            if done(seen[-1]):
                return seen
        assert time.monotonic() < deadline, f"no awaited event in {timeout}s: {seen}"
    raise AssertionError(f"the stream ended: {seen}")


@LIVE
def test_members_hear_of_new_threads_and_runs_within_two_seconds(
    live_server_asgi: LiveServer, viewer: User
) -> None:
    with stream(live_server_asgi, viewer, default_project().slug) as opened:
        assert opened.response.status_code == 200
        assert opened.response.headers["content-type"].startswith("text/event-stream")
        next(opened.lines)  # listening
        started = time.monotonic()
        thread = make_thread("Arrives live")
        run = make_run(thread, commit=False)
        ledger.fail_run(run=run, error={"message": "boom"})
        seen = events_until(opened, lambda e: e.get("status") == "failed")
        assert time.monotonic() - started < 2
    assert [(e["event"], e["thread"], e["status"]) for e in seen] == [
        ("thread", thread.id, ""), ("run", thread.id, "streaming"), ("run", thread.id, "failed")
    ]  # fmt: skip
    assert {e["run"] for e in seen[1:]} == {run.id}


@LIVE
def test_a_stream_is_for_members_and_tells_only_its_own_project(
    live_server_asgi: LiveServer, team: Team
) -> None:
    with stream(live_server_asgi, team.outsider, "alpha") as refused:
        assert refused.response.status_code == 404
    with stream(live_server_asgi, None, "alpha") as anonymous:
        assert anonymous.response.status_code == 401
    with stream(live_server_asgi, team.outsider, "beta") as beta:
        assert beta.response.status_code == 200
        next(beta.lines)
        make_thread("Alpha's secret", project=team.alpha)
        mine = make_thread("Beta's own", project=team.beta)
        seen = events_until(beta, lambda e: e["thread"] == mine.id)
    assert [e["thread"] for e in seen] == [mine.id]


@LIVE
def test_hidden_threads_are_told_only_to_those_who_see_them(
    live_server_asgi: LiveServer, viewer: User, moderator: User
) -> None:
    project = default_project().slug
    hidden = make_thread("Hidden")
    hide_thread(user=moderator, thread=hidden)
    with (
        stream(live_server_asgi, viewer, project) as plain,
        stream(live_server_asgi, moderator, project) as moderating,
    ):
        next(plain.lines)
        next(moderating.lines)
        make_run(hidden, commit=False)
        shown = make_thread("Plain")
        assert [e["thread"] for e in events_until(plain, lambda e: True)] == [shown.id]
        told = events_until(moderating, lambda e: e["thread"] == shown.id)
    assert [e["thread"] for e in told] == [hidden.id, shown.id]
