"""Who may call the API: tokens, scopes, revocation, browser sessions, and outsiders."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from tests.api.conftest import ApiClient, error_of
from tests.factories import make_run, make_thread
from transcripts.ledger.default_project import default_project
from transcripts.ledger.projects import set_member
from transcripts.models import ApiToken, Thread

pytestmark = pytest.mark.django_db

READS = [
    "/threads",
    "/threads/{thread}",
    "/threads/{thread}/messages",
    "/runs/{run}",
    "/runs/{run}/messages",
    "/runs/{run}/events",
    "/runs",
    "/threads/{thread}/export",
    "/scores",
    "/score-configs",
]
# An import job is polled by its importer: an ingest token may (tests/api/test_projects.py).
STATUS_READS = ["/imports/{run}"]
WRITES = [
    ("/threads", {"title": "x"}),
    ("/threads/{thread}/runs", {}),
    ("/runs/{run}/events", {"events": [{"seq": 1, "kind": "text-delta", "data": {"delta": "x"}}]}),
    ("/runs/{run}/commit", None),
    ("/runs/{run}/fail", {"error": "x"}),
    ("/runs/{run}/cancel", None),
    ("/runs/{run}/restore", None),
    ("/runs/{run}/ai-sdk", [{"type": "text-delta", "id": "t", "delta": "x"}]),
    ("/runs/{run}/claim", {"worker": "w"}),
    ("/imports", []),
    ("/scores", {"name": "helpfulness", "value": 1}),
    ("/otlp/v1/traces", {"resourceSpans": []}),
    ("/otlp/v1/logs", {"resourceLogs": []}),
]


@pytest.fixture
def ids() -> dict[str, str]:
    run = make_run(make_thread(), commit=False)
    return {"thread": run.thread_id, "run": run.id}


def _outsiders(make_token) -> dict[str, ApiClient]:
    return {
        "no token": ApiClient(),
        "unknown token": ApiClient("tr_not-a-real-token"),
        "empty token": ApiClient(""),
        "revoked token": ApiClient(make_token("ingest", "read", revoked=True)),
    }


@pytest.mark.parametrize("path", READS + STATUS_READS)
def test_an_outsider_reads_nothing(make_token, ids, path):
    for who, client in _outsiders(make_token).items():
        response = client.get(path.format(**ids))
        assert response.status_code == 401, who
        assert error_of(response)["code"] == "unauthorized"


@pytest.mark.parametrize(("path", "body"), WRITES)
def test_an_outsider_writes_nothing(make_token, ids, path, body):
    before = (Thread.objects.count(), ApiClient(make_token("read")).get(f"/runs/{ids['run']}"))
    for who, client in _outsiders(make_token).items():
        response = client.post(path.format(**ids), body)
        assert response.status_code == 401, who
    assert Thread.objects.count() == before[0]
    assert ApiClient(make_token("read")).get(f"/runs/{ids['run']}").json() == before[1].json()


@pytest.mark.parametrize(("path", "body"), WRITES)
def test_a_read_only_token_cannot_write(reader, ids, path, body):
    before = reader.get(f"/runs/{ids['run']}").json()

    response = reader.post(path.format(**ids), body)

    assert response.status_code == 403
    assert error_of(response)["code"] == "forbidden"
    assert "lacks the 'ingest' scope" in error_of(response)["message"]
    assert reader.get(f"/runs/{ids['run']}").json() == before
    assert Thread.objects.count() == 1


@pytest.mark.parametrize("path", READS)
def test_an_ingest_only_token_cannot_read(make_token, ids, path):
    response = ApiClient(make_token("ingest")).get(path.format(**ids))

    assert response.status_code == 403
    assert error_of(response)["message"] == "this token lacks the 'read' scope"


def test_another_authorization_scheme_is_refused(ids):
    client = Client(headers={"Authorization": "Basic dXNlcjpwYXNz"})

    assert client.get("/api/v1/threads").status_code == 401


def test_a_logged_in_browser_session_may_read_but_not_write(ids):
    user = get_user_model().objects.create_user("reader", password="x")
    set_member(project=default_project(), user=user, role="viewer")
    client = Client()
    client.force_login(user)

    assert client.get("/api/v1/threads").status_code == 200
    assert client.get(f"/api/v1/runs/{ids['run']}").status_code == 200
    response = client.post("/api/v1/threads", "{}", content_type="application/json")
    assert response.status_code == 403
    assert "browser session may only read" in error_of(response)["message"]


def test_an_explicit_bad_token_wins_over_a_session(ids):
    client = Client(headers={"Authorization": "Bearer wrong"})
    client.force_login(get_user_model().objects.create_user("reader", password="x"))

    assert client.get("/api/v1/threads").status_code == 401


def test_a_token_records_when_it_was_last_used(make_token):
    raw = make_token("read")
    token = ApiToken.objects.get(token_hash=ApiToken.hash_token(raw))
    assert token.last_used_at is None

    ApiClient(raw).get("/threads")
    token.refresh_from_db()
    first_use = token.last_used_at
    ApiClient(raw).get("/threads")
    token.refresh_from_db()

    assert first_use is not None
    assert token.last_used_at == first_use  # not rewritten on every request
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now() - timedelta(hours=1))
    ApiClient(raw).get("/threads")
    token.refresh_from_db()
    assert timezone.now() - token.last_used_at < timedelta(minutes=1)


def test_tokens_are_stored_hashed(make_token):
    raw = make_token("read")
    token = ApiToken.objects.get()

    assert raw not in (token.token_hash, token.prefix)
    assert token.token_hash == ApiToken.hash_token(raw)


def test_the_command_prints_only_a_working_token():
    out = io.StringIO()
    call_command("create_api_token", "agent-1", "--scopes", "ingest,read", stdout=out)
    raw = out.getvalue().strip()

    assert raw.startswith("tr_") and "\n" not in raw
    token = ApiToken.objects.get(name="agent-1")
    assert sorted(token.scopes) == ["ingest", "read"]
    assert ApiClient(raw).post("/threads", {}).status_code == 201


def test_the_command_refuses_unknown_scopes():
    with pytest.raises(CommandError):
        call_command("create_api_token", "x", "--scopes", "ingest,bogus", stdout=io.StringIO())
    assert not ApiToken.objects.exists()


@pytest.mark.parametrize("name", ["", "   ", "x" * 201])
def test_the_command_refuses_an_empty_or_overlong_name(name):
    with pytest.raises(CommandError, match="name"):
        call_command("create_api_token", name, stdout=io.StringIO())
    assert not ApiToken.objects.exists()


def test_the_admin_shows_a_new_token_once(admin_client):
    response = admin_client.post(
        "/admin/transcripts/apitoken/add/",
        {"name": "from the admin", "project": default_project().pk, "scopes": ["read"]},
        follow=True,
    )

    token = ApiToken.objects.get(name="from the admin")
    shown = [str(m) for m in response.context["messages"]]
    raw = next(word for m in shown for word in m.split() if word.startswith("tr_"))
    assert token.token_hash == ApiToken.hash_token(raw)
    assert token.scopes == ["read"]
    assert (
        raw
        not in admin_client.get(f"/admin/transcripts/apitoken/{token.pk}/change/").content.decode()
    )
    assert ApiClient(raw).get("/threads").status_code == 200


def test_the_admin_revokes_tokens(admin_client, make_token):
    raw = make_token("read")
    token = ApiToken.objects.get()

    admin_client.post(
        "/admin/transcripts/apitoken/",
        {"action": "revoke", "_selected_action": [token.pk]},
    )

    token.refresh_from_db()
    assert token.revoked_at is not None
    assert ApiClient(raw).get("/threads").status_code == 401


def test_the_token_of_a_deactivated_user_stops_working(make_token):
    user = get_user_model().objects.create_user("leaver", password="x")
    raw = make_token("ingest", "read", user=user)
    assert ApiClient(raw).get("/threads").status_code == 200

    user.is_active = False
    user.save(update_fields=["is_active"])

    assert ApiClient(raw).get("/threads").status_code == 401
    assert ApiClient(make_token("read")).get("/threads").status_code == 200  # no user: fine
