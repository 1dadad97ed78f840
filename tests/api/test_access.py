"""Who sees what: one decision (api/access.py) for every endpoint and the live stream."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.api.conftest import ApiClient, error_of
from tests.factories import conversation, events, make_thread
from transcripts.api.access import caller_access, may_see
from transcripts.api.auth import Principal
from transcripts.generation.start import start_generation
from transcripts.ids import new_ulid
from transcripts.models import AuditRecord, Event, Run, RunStatus, Thread

pytestmark = pytest.mark.django_db

# Each of these once had its own lookup deciding who sees a thread or run.
ENDPOINTS: dict[str, tuple[str, str, Any]] = {
    "read the thread": ("GET", "/threads/{thread}", None),
    "read the run": ("GET", "/runs/{run}", None),
    "append events": (
        "POST",
        "/runs/{run}/events",
        {"events": events(("text-delta", {"delta": "x"}))},
    ),
    "follow the live stream": ("GET", "/runs/{run}/stream", None),
    "claim the run": ("POST", "/runs/{run}/claim", {"worker": "w"}),
}


@pytest.fixture
def hidden_run() -> Run:
    """A queued external run in a hidden thread."""
    run = start_generation(thread=conversation(turns=1), generator="external")
    Thread.objects.filter(pk=run.thread_id).update(hidden=True)
    return run


def _call(client: ApiClient, endpoint: str, run: Run) -> Any:
    method, path, body = ENDPOINTS[endpoint]
    path = path.format(thread=run.thread_id, run=run.id)
    return client.get(path) if method == "GET" else client.post(path, body)


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_a_hidden_thread_does_not_exist_for_an_ordinary_token(api, hidden_run, endpoint):
    response = _call(api, endpoint, hidden_run)

    assert response.status_code == 404, response.content
    assert error_of(response)["code"] == "not_found"
    assert Run.objects.get(pk=hidden_run.id).status == RunStatus.QUEUED
    assert not Event.objects.filter(run_id=hidden_run.id).exists()
    assert not AuditRecord.objects.exists()


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_a_staff_token_sees_a_hidden_thread_and_its_reads_are_audited(
    staff_api, hidden_run, endpoint
):
    response = _call(staff_api, endpoint, hidden_run)

    assert response.status_code == 200, response.content
    audited = AuditRecord.objects.filter(action="view_hidden", thread_id=hidden_run.thread_id)
    method, path, _ = ENDPOINTS[endpoint]
    if method == "GET":
        record = audited.get()
        assert record.details["path"] == "/api/v1" + path.format(
            thread=hidden_run.thread_id, run=hidden_run.id
        )
        assert record.actor is not None and record.actor.username == "moderator"
    else:
        assert not audited.exists()  # writes are audited by what they do, not as reads


def test_an_unknown_id_answers_as_a_hidden_one(api, hidden_run):
    for endpoint in ENDPOINTS:
        unknown = Run(id=new_ulid(), thread_id=new_ulid())
        hidden = _call(api, endpoint, hidden_run)
        missing = _call(api, endpoint, unknown)
        assert (hidden.status_code, error_of(hidden)["code"]) == (404, "not_found"), endpoint
        assert (missing.status_code, error_of(missing)["code"]) == (404, "not_found"), endpoint


def test_lists_leave_out_hidden_threads_and_their_runs_but_for_staff(api, staff_api, hidden_run):
    visible = start_generation(thread=conversation(turns=1), generator="external")

    for client, expected in ((api, [visible.id]), (staff_api, [hidden_run.id, visible.id])):
        assert [r["id"] for r in client.get("/runs").json()["runs"]] == expected
        threads = {t["id"] for t in client.get("/threads").json()["threads"]}
        assert (hidden_run.thread_id in threads) is (client is staff_api)


def test_a_hidden_thread_id_cannot_be_created_again_but_by_staff(api, staff_api):
    thread = make_thread()
    Thread.objects.filter(pk=thread.pk).update(hidden=True)

    refused = api.post("/threads", {"id": thread.id})

    assert refused.status_code == 409
    assert error_of(refused)["code"] == "conflict"
    assert staff_api.post("/threads", {"id": thread.id}).status_code == 200


def test_a_browser_session_sees_hidden_threads_only_for_staff():
    thread = make_thread()
    Thread.objects.filter(pk=thread.pk).update(hidden=True)
    users = get_user_model().objects
    staff, member = Client(), Client()
    staff.force_login(users.create_user("mod", password="x", is_staff=True))
    member.force_login(users.create_user("member", password="x"))

    assert member.get(f"/api/v1/threads/{thread.id}").status_code == 404
    assert staff.get(f"/api/v1/threads/{thread.id}").status_code == 200


@pytest.mark.parametrize(
    ("scopes", "is_staff", "sees_hidden"),
    [({"read"}, False, False), ({"ingest"}, False, False), ({"read", "ingest"}, True, True)],
)
def test_every_caller_may_read_and_only_staff_see_hidden_threads(scopes, is_staff, sees_hidden):
    principal = Principal(name="p", scopes=frozenset(scopes), is_staff=is_staff)

    assert caller_access(principal).can_read
    assert may_see(principal, hidden=False)
    assert may_see(principal, hidden=True) is sees_hidden
