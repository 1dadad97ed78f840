"""Appends through the ASGI server, where config.asgi serves `POST /api/v1/runs/{id}/events`
in one thread hop (every middleware in its sync mode): the same answers, statuses, error
shapes and headers as Django's own path (the test client), the quotas, and the live frames."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest
from django.test import Client

from tests.api.sse_client import Frame
from tests.api.test_stream import _subscribe
from tests.base import Team
from tests.factories import events, make_thread
from tests.live_server import LiveServer
from transcripts import ledger
from transcripts.models import Event, Project

pytestmark = pytest.mark.django_db(transaction=True)

# Headers the middleware add (security, CSP, clickjacking) and the answer's own.
HEADERS = (
    "Content-Type",
    "Content-Security-Policy",
    "X-Frame-Options",
    "X-Content-Type-Options",
    "Referrer-Policy",
    "Cross-Origin-Opener-Policy",
)


def _batch(*words: str, start: int = 1) -> bytes:
    return json.dumps(
        {"events": events(*(("text-delta", {"delta": w}) for w in words), start=start)}
    ).encode()


def _both(
    server: LiveServer,
    path: str,
    body: bytes,
    headers: dict[str, str],
    client: Client | None = None,
) -> tuple[httpx.Response, Any]:
    """The same POST through uvicorn and through the test client."""
    live = httpx.post(server.url + path, content=body, headers=headers, timeout=30)
    content_type = headers.get("Content-Type", "application/json")
    other = {k: v for k, v in headers.items() if k != "Content-Type"}
    local = (client or Client()).post(path, body, content_type=content_type, headers=other)
    return live, local


def _same_answer(live: httpx.Response, local: Any) -> None:
    assert live.status_code == local.status_code, (live.text, local.content)
    assert live.json() == json.loads(local.content)
    for name in HEADERS:
        assert live.headers.get(name) == local.headers.get(name), name


def test_an_append_through_the_server_is_stored_and_answered_as_by_django(
    live_server_asgi: LiveServer, make_token: Any
) -> None:
    headers = {"Authorization": f"Bearer {make_token()}", "Content-Type": "application/json"}
    runs = [ledger.begin_run(thread=make_thread())[0] for _ in range(2)]

    live = httpx.post(
        f"{live_server_asgi.url}/api/v1/runs/{runs[0].id}/events",
        content=_batch("a", "b"),
        headers=headers,
    )
    local = Client().post(
        f"/api/v1/runs/{runs[1].id}/events",
        _batch("a", "b"),
        content_type="application/json",
        headers={"Authorization": headers["Authorization"]},
    )

    _same_answer(live, local)
    assert live.json() == {"lastSeq": 2, "accepted": 2, "duplicates": 0}
    stored = Event.objects.filter(run_id=runs[0].id).order_by("seq")
    assert [e.data["delta"] for e in stored] == ["a", "b"]


@pytest.mark.parametrize(
    ("case", "body", "content_type", "expected"),
    [
        ("not JSON", b'{"events": [', "application/json", 400),
        ("not a JSON content type", b"events", "text/plain", 415),
        ("an invalid event", b'{"events": [{"seq": "1", "kind": "text-delta"}]}', None, 422),
        ("a gap", None, None, 409),
        ("NaN", b'{"events": [{"seq": 1, "kind": "x", "data": NaN}]}', None, 422),
        ("an integer past 64 bits", b'{"events": [{"seq": 99999999999999999999}]}', None, 422),
        ("nesting past the limit", b'{"events": ' + b"[" * 100 + b"]" * 100 + b"}", None, 422),
    ],
)
def test_refusals_through_the_server_are_django_s(
    live_server_asgi: LiveServer,
    make_token: Any,
    case: str,
    body: bytes | None,
    content_type: str | None,
    expected: int,
) -> None:
    run, _ = ledger.begin_run(thread=make_thread())
    headers = {
        "Authorization": f"Bearer {make_token()}",
        "Content-Type": content_type or "application/json",
    }
    live, local = _both(
        live_server_asgi, f"/api/v1/runs/{run.id}/events", body or _batch("x", start=5), headers
    )

    assert live.status_code == expected, live.text
    _same_answer(live, local)


def test_callers_are_refused_through_the_server_as_by_django(
    live_server_asgi: LiveServer, team: Team
) -> None:
    run, _ = ledger.begin_run(thread=make_thread(project=team.alpha))
    path = f"/api/v1/runs/{run.id}/events"
    outsider = {"Authorization": f"Bearer {team.token(team.beta, 'ingest')}"}
    reader = {"Authorization": f"Bearer {team.token(team.alpha, 'read')}"}
    # A browser session (the session and auth middleware apply): it may only read.
    browser = Client()
    browser.force_login(team.owner)
    session = {"Cookie": f"sessionid={browser.cookies['sessionid'].value}"}

    for headers, status in (({}, 401), (outsider, 404), (reader, 403), (session, 403)):
        live, local = _both(
            live_server_asgi,
            path,
            _batch("x"),
            headers,
            client=browser if headers is session else None,
        )
        assert live.status_code == status, live.text
        _same_answer(live, local)
    assert not Event.objects.filter(run_id=run.id).exists()


def test_the_event_quota_applies_through_the_server(
    live_server_asgi: LiveServer, team: Team
) -> None:
    Project.objects.filter(pk=team.alpha.pk).update(events_per_minute=3)
    run, _ = ledger.begin_run(thread=make_thread(project=team.alpha))
    headers = {"Authorization": f"Bearer {team.token(team.alpha, 'ingest')}"}

    refused = httpx.post(
        f"{live_server_asgi.url}/api/v1/runs/{run.id}/events",
        content=_batch("a", "b", "c", "d"),
        headers={**headers, "Content-Type": "application/json"},
    )

    assert refused.status_code == 429, refused.text
    assert refused.json()["error"]["code"] == "throttled"
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    assert not Event.objects.filter(run_id=run.id).exists()


def test_a_subscriber_sees_what_is_appended_through_the_server(
    live_server_asgi: LiveServer, make_token: Any
) -> None:
    token = make_token()
    run, _ = ledger.begin_run(thread=make_thread())
    received: list[Frame] = []
    ready = threading.Event()
    url = f"{live_server_asgi.url}/api/v1/runs/{run.id}/stream"
    reader = _subscribe(url, {"Authorization": f"Bearer {token}"}, received, ready)
    assert ready.wait(10)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    url = f"{live_server_asgi.url}/api/v1/runs/{run.id}/events"
    for seq, word in enumerate(("one", "two", "three"), start=1):
        assert httpx.post(url, content=_batch(word, start=seq), headers=headers).status_code == 200
    ledger.commit_run(run=run)
    reader.join(15)

    deltas = [f.json()["data"]["delta"] for f in received if f.event == "text-delta"]
    assert deltas == ["one", "two", "three"]
    assert received[-1].json()["status"] == "committed"
