"""The live stream: LISTEN/NOTIFY fed Server-Sent Events under a real uvicorn server."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import pytest

from tests.api.sse_client import Frame, frames
from tests.factories import events, make_thread
from transcripts import ledger, live

pytestmark = pytest.mark.django_db(transaction=True)


def _subscribe(
    url: str, headers: dict[str, str], received: list[Frame], ready: threading.Event
) -> threading.Thread:
    def read() -> None:
        with httpx.stream("GET", url, headers=headers, timeout=20) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            for frame in frames(response):
                if frame.event == "message" and not frame.data:
                    ready.set()  # the retry frame: the server listens from here on
                    continue
                received.append(frame)
                if frame.event == "status":
                    return

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def _deltas(*words: str, start: int = 1) -> list[dict[str, Any]]:
    return events(*(("text-delta", {"delta": w}) for w in words), start=start)


def test_a_subscriber_receives_events_appended_by_another_connection_in_order(
    live_server_asgi, make_token
):
    token = make_token("read")
    run, _ = ledger.begin_run(thread=make_thread())
    ledger.append_events(run=run, events=_deltas("already", "there"))
    received: list[Frame] = []
    ready = threading.Event()
    url = f"{live_server_asgi.url}/api/v1/runs/{run.id}/stream"
    reader = _subscribe(url, {"Authorization": f"Bearer {token}"}, received, ready)
    assert ready.wait(10)
    for seq in range(3, 8):
        ledger.append_events(run=run, events=_deltas(f"w{seq}", start=seq))
        time.sleep(0.01)
    ledger.commit_run(run=run)
    reader.join(15)

    assert not reader.is_alive()
    assert [f.id for f in received[:-1]] == [str(seq) for seq in range(1, 8)]
    assert [f.json()["seq"] for f in received[:-1]] == list(range(1, 8))
    assert {f.event for f in received[:-1]} == {"text-delta"}
    assert received[2].json()["data"] == {"delta": "w3"}
    assert received[-1].event == "status"
    assert received[-1].json() == {"status": "committed", "lastSeq": 7, "error": None}


def test_a_subscriber_resumes_after_its_last_event_id(live_server_asgi, make_token):
    token = make_token("read")
    run, _ = ledger.begin_run(thread=make_thread())
    ledger.append_events(run=run, events=_deltas("a", "b", "c", "d"))
    received: list[Frame] = []
    ready = threading.Event()
    url = f"{live_server_asgi.url}/api/v1/runs/{run.id}/stream"
    headers = {"Authorization": f"Bearer {token}", "Last-Event-ID": "2"}
    reader = _subscribe(url, headers, received, ready)
    assert ready.wait(10)
    ledger.append_events(run=run, events=_deltas("e", start=5))
    ledger.fail_run(run=run, error="the agent crashed")
    reader.join(15)

    assert [f.id for f in received[:-1]] == ["3", "4", "5"]
    assert received[-1].json()["status"] == "failed"
    assert received[-1].json()["error"] == {"message": "the agent crashed"}


def test_a_closed_run_streams_its_backlog_and_ends(live_server_asgi, make_token):
    token = make_token("read")
    run, _ = ledger.begin_run(thread=make_thread())
    ledger.append_events(run=run, events=_deltas("a", "b"))
    ledger.commit_run(run=run)
    url = f"{live_server_asgi.url}/api/v1/runs/{run.id}/stream?afterSeq=1"
    with httpx.stream("GET", url, headers={"Authorization": f"Bearer {token}"}) as response:
        received = [f for f in frames(response) if f.data]

    assert [(f.event, f.id) for f in received] == [("text-delta", "2"), ("status", None)]


def test_the_stream_refuses_outsiders_with_the_error_shape(live_server_asgi, make_token):
    run, _ = ledger.begin_run(thread=make_thread())
    url = f"{live_server_asgi.url}/api/v1/runs/{run.id}/stream"
    ingest_only = {"Authorization": f"Bearer {make_token('ingest')}"}
    revoked = {"Authorization": f"Bearer {make_token('read', revoked=True)}"}

    assert httpx.get(url).status_code == 401
    assert httpx.get(url, headers={"Authorization": "Bearer nope"}).status_code == 401
    assert httpx.get(url, headers=revoked).status_code == 401
    forbidden = httpx.get(url, headers=ingest_only)
    assert forbidden.status_code == 403
    assert forbidden.json()["error"]["code"] == "forbidden"


def test_the_stream_of_an_unknown_or_invalid_run_is_a_404(live_server_asgi, make_token):
    headers = {"Authorization": f"Bearer {make_token('read')}"}
    base = f"{live_server_asgi.url}/api/v1/runs"

    assert (
        httpx.get(f"{base}/01JB8ZT6QK5X4V3N2M1P0R9S8T/stream", headers=headers).status_code == 404
    )
    assert httpx.get(f"{base}/not-a-ulid/stream", headers=headers).status_code == 404


def test_a_malformed_last_event_id_is_a_422(live_server_asgi, make_token):
    run, _ = ledger.begin_run(thread=make_thread())
    headers = {"Authorization": f"Bearer {make_token('read')}", "Last-Event-ID": "x"}
    response = httpx.get(f"{live_server_asgi.url}/api/v1/runs/{run.id}/stream", headers=headers)

    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid"


def test_a_client_that_disconnects_releases_its_database_connection(live_server_asgi, make_token):
    from django.db import connection

    run, _ = ledger.begin_run(thread=make_thread())
    url = f"{live_server_asgi.url}/api/v1/runs/{run.id}/stream"
    headers = {"Authorization": f"Bearer {make_token('read')}"}

    def listeners() -> int:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE application_name = %s AND datname = current_database()",
                [live.APPLICATION_NAME],
            )
            return int(cursor.fetchone()[0])

    with httpx.stream("GET", url, headers=headers, timeout=10) as response:
        # Keep the reader: a discarded, half-read iterator closes the HTTP connection.
        reader = frames(response)
        next(reader)
        assert listeners() == 1
    deadline = time.monotonic() + 10
    while listeners() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert listeners() == 0


def test_only_a_reader_of_the_runs_project_follows_it(live_server_asgi, team):
    run, _ = ledger.begin_run(thread=make_thread(project=team.alpha))
    ledger.append_events(run=run, events=_deltas("alpha's", "words"))
    ledger.commit_run(run=run)
    url = f"{live_server_asgi.url}/api/v1/runs/{run.id}/stream"

    def bearer(token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    for scopes in (("read",), ("read", "ingest", "admin")):
        response = httpx.get(url, headers=bearer(team.token(team.beta, *scopes)))
        assert response.status_code == 404, scopes
        assert response.json()["error"]["code"] == "not_found"
        assert "alpha" not in response.text
    refused = httpx.get(url, headers=bearer(team.token(team.alpha, "ingest")))
    assert refused.status_code == 403
    assert refused.json()["error"]["message"] == "this token lacks the 'read' scope"
    with httpx.stream("GET", url, headers=bearer(team.token(team.alpha, "read"))) as response:
        received = [f for f in frames(response) if f.data]
    assert [f.event for f in received] == ["text-delta", "text-delta", "status"]
