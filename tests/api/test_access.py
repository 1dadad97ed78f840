"""Who reaches what: one decision (api/access.py) for every endpoint and the live stream.

Hidden threads exist only for admin-scoped tokens and for the sessions of the project's
moderators; browser sessions read the projects of their user and never write.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tests.api.conftest import ApiClient, error_of
from tests.base import Team
from tests.factories import conversation, events, make_thread
from transcripts.api.access import rights
from transcripts.generation.start import start_generation
from transcripts.ids import new_ulid
from transcripts.ledger.default_project import default_project
from transcripts.models import AuditRecord, Event, Run, RunStatus, Thread
from transcripts.permissions import Principal

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


@pytest.fixture(autouse=True)
def _external_runs_are_taken(settings):
    """The runs queued here are for an agent that polls for them."""
    settings.TRANSCRIPTS_EXTERNAL_GENERATOR = True


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
def test_a_hidden_thread_does_not_exist_for_a_token_without_the_admin_scope(
    api, hidden_run, endpoint
):
    response = _call(api, endpoint, hidden_run)

    assert response.status_code == 404, response.content
    assert error_of(response)["code"] == "not_found"
    assert Run.objects.get(pk=hidden_run.id).status == RunStatus.QUEUED
    assert not Event.objects.filter(run_id=hidden_run.id).exists()
    assert not AuditRecord.objects.exists()


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_an_admin_token_reaches_a_hidden_thread_and_its_reads_are_audited(
    admin_api, hidden_run, endpoint
):
    response = _call(admin_api, endpoint, hidden_run)

    assert response.status_code == 200, response.content
    audited = AuditRecord.objects.filter(action="view_hidden", thread_id=hidden_run.thread_id)
    method, path, _ = ENDPOINTS[endpoint]
    if method == "GET":
        record = audited.get()
        assert record.details["path"] == "/api/v1" + path.format(
            thread=hidden_run.thread_id, run=hidden_run.id
        )
        assert record.details["via"] == "api" and record.details["tokenId"] is not None
        assert record.project_id == default_project().pk
    else:
        assert not audited.exists()  # writes are audited by what they do, not as reads


def test_an_unknown_id_answers_as_a_hidden_one(api, hidden_run):
    for endpoint in ENDPOINTS:
        unknown = Run(id=new_ulid(), thread_id=new_ulid())
        hidden = _call(api, endpoint, hidden_run)
        missing = _call(api, endpoint, unknown)
        assert (hidden.status_code, error_of(hidden)["code"]) == (404, "not_found"), endpoint
        assert (missing.status_code, error_of(missing)["code"]) == (404, "not_found"), endpoint
        assert error_of(hidden)["message"].replace(hidden_run.id, "").replace(
            hidden_run.thread_id, ""
        ) == error_of(missing)["message"].replace(unknown.id, "").replace(unknown.thread_id, ""), (
            endpoint
        )


def test_lists_leave_out_hidden_threads_and_their_runs_but_for_admin_tokens(
    api, admin_api, hidden_run
):
    visible = start_generation(thread=conversation(turns=1), generator="external")

    for client, expected in ((api, [visible.id]), (admin_api, [hidden_run.id, visible.id])):
        assert [r["id"] for r in client.get("/runs").json()["runs"]] == expected
        threads = {t["id"] for t in client.get("/threads").json()["threads"]}
        assert (hidden_run.thread_id in threads) is (client is admin_api)


def test_a_hidden_thread_id_is_taken_but_not_confirmed_but_for_admin_tokens(api, admin_api):
    thread = make_thread("hidden title")
    Thread.objects.filter(pk=thread.pk).update(hidden=True)

    refused = api.post("/threads", {"id": thread.id})

    assert refused.status_code == 409
    assert error_of(refused)["code"] == "conflict"
    assert "hidden title" not in refused.content.decode()
    assert admin_api.post("/threads", {"id": thread.id}).status_code == 200


def test_a_browser_session_reads_the_projects_of_its_user(team: Team):
    alpha = make_thread("alpha's", project=team.alpha)
    beta = make_thread("beta's", project=team.beta)
    path = "/api/v1/threads/{}"

    for user in (team.viewer, team.editor, team.owner, team.superuser):
        assert team.client(user).get(path.format(alpha.id)).status_code == 200, user
    for user in (team.outsider, team.stranger):
        response = team.client(user).get(path.format(alpha.id))
        assert response.status_code == 404, user
        assert error_of(response)["code"] == "not_found"
    assert team.client(team.outsider).get(path.format(beta.id)).status_code == 200
    listed = team.client(team.viewer).get("/api/v1/threads").json()["threads"]
    assert [t["id"] for t in listed] == [alpha.id]


def test_a_browser_session_sees_hidden_threads_only_where_its_user_moderates(team: Team):
    thread = make_thread(project=team.alpha)
    Thread.objects.filter(pk=thread.pk).update(hidden=True)
    path = f"/api/v1/threads/{thread.id}"

    for user in (team.viewer, team.editor, team.outsider):
        assert team.client(user).get(path).status_code == 404, user
    assert not AuditRecord.objects.exists()
    for user in (team.moderator, team.owner, team.superuser):
        assert team.client(user).get(path).status_code == 200, user
    record = AuditRecord.objects.filter(action="view_hidden", actor=team.moderator).get()
    assert record.details["via"] == "api" and record.project_id == team.alpha.pk


def test_staff_status_alone_reaches_nothing(team: Team):
    thread = make_thread(project=team.alpha)
    team.stranger.is_staff = True
    team.stranger.save(update_fields=["is_staff"])

    assert Client().get(f"/api/v1/threads/{thread.id}").status_code == 401
    client = team.client(team.stranger)
    assert client.get(f"/api/v1/threads/{thread.id}").status_code == 404
    assert client.get("/api/v1/threads").json()["threads"] == []


def test_a_browser_session_may_not_write_even_as_an_admin(team: Team):
    thread = make_thread(project=team.alpha)

    for path in ("/api/v1/threads", f"/api/v1/threads/{thread.id}/runs"):
        response = team.client(team.owner).post(path, "{}", content_type="application/json")
        assert response.status_code == 403
        assert "browser session may only read" in error_of(response)["message"]
    assert Thread.objects.count() == 1 and not Run.objects.exists()


@pytest.mark.parametrize(
    ("scopes", "hidden", "reaches", "reads", "ingests"),
    [
        ({"read"}, False, True, True, False),
        ({"ingest"}, False, True, False, True),
        ({"read", "ingest"}, True, False, False, False),
        ({"admin"}, True, True, True, True),
    ],
)
def test_the_one_decision_for_a_token_of_the_threads_project(
    scopes, hidden, reaches, reads, ingests
):
    project = default_project()
    principal = Principal(name="p", scopes=frozenset(scopes), token_id=1, project_id=project.pk)
    thread = Thread(id=new_ulid(), project_id=project.pk, hidden=hidden)

    access = rights(principal, thread)

    assert (access.in_project, access.can_read, access.can_ingest) == (reaches, reads, ingests)
    elsewhere = Principal(name="p", scopes=frozenset(scopes), token_id=1, project_id=project.pk + 1)
    assert not rights(elsewhere, thread).in_project
