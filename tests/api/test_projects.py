"""Every endpoint against two projects: a token reaches only its own project's threads and runs
(404 elsewhere, nothing changed), a token without the scope gets 403 naming it, an ingest-only
token gets ids and statuses back and never content, and the right scope acts."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from tests.api.conftest import ApiClient, error_of
from tests.base import Team
from tests.factories import ask, last_message, make_run, make_thread, say
from transcripts.api.schemas import RunStatusOut, ThreadStatusOut
from transcripts.generation.start import start_generation
from transcripts.ids import new_ulid
from transcripts.models import (
    AuditRecord,
    Event,
    ImportJob,
    Message,
    Run,
    RunOrigin,
    RunStatus,
    Thread,
)

pytestmark = pytest.mark.django_db

# Planted in every kind of content: titles, metadata, agents, messages, usage, errors.
SECRET = "canary-7f3a91"


@dataclass
class World:
    """Project alpha's thread full of SECRET, with a run in every state an endpoint needs."""

    thread: Thread
    streaming: Run  # an agent's open run (begun through the API)
    superseded: Run  # an agent's run whose branch was replaced
    web_run: Run  # a run queued from the browser for an external generator
    beta_thread: Thread

    def ids(self) -> dict[str, str]:
        return {
            "thread": self.thread.id,
            "run": self.streaming.id,
            "superseded": self.superseded.id,
            "web_run": self.web_run.id,
        }


def build_world(team: Team) -> World:
    """The threads and runs of both projects, SECRET planted everywhere in alpha's."""
    thread = make_thread(
        f"title {SECRET}",
        project=team.alpha,
        metadata={"note": SECRET},
        agents={"agent": {"name": SECRET}},
    )
    question = last_message(ask(thread, f"question {SECRET}"))
    superseded = say(thread, f"answer {SECRET}")
    say(thread, f"better answer {SECRET}", fork_from=question.id)
    superseded.refresh_from_db()
    assert superseded.status == RunStatus.SUPERSEDED
    streaming = make_run(
        thread,
        ("text-delta", {"delta": f"streaming {SECRET}"}),
        (
            "step-finished",
            {"finishReason": "stop", "usage": {"inputTokens": 3, "note": SECRET}},
        ),
        commit=False,
        metadata={"note": SECRET},
    )
    web_run = start_generation(thread=thread, generator="external", metadata={"note": SECRET})
    beta_thread = make_thread(f"beta {SECRET}", project=team.beta)
    say(beta_thread, f"beta answer {SECRET}")
    thread.refresh_from_db()
    return World(thread, streaming, superseded, web_run, beta_thread)


@pytest.fixture
def world(team: Team, settings: Any) -> World:
    # Its web run is queued for the external generator: one that a polling agent takes.
    settings.TRANSCRIPTS_EXTERNAL_GENERATOR = True
    return build_world(team)


# name -> (method, path, body); paths name World.ids().
READS: dict[str, tuple[str, str, Any]] = {
    "read a thread": ("GET", "/threads/{thread}", None),
    "read a path's messages": ("GET", "/threads/{thread}/messages", None),
    "export a thread": ("GET", "/threads/{thread}/export", None),
    "read a run": ("GET", "/runs/{run}", None),
    "read a run's projection": ("GET", "/runs/{run}/messages", None),
    "replay a run's events": ("GET", "/runs/{run}/events", None),
    "follow a run live": ("GET", "/runs/{run}/stream", None),
}
WRITES: dict[str, tuple[str, str, Any]] = {
    "begin a run": ("POST", "/threads/{thread}/runs", {"metadata": {"note": SECRET}}),
    "append events": (
        "POST",
        "/runs/{run}/events",
        {"events": [{"seq": 3, "kind": "text-delta", "data": {"delta": SECRET}}]},
    ),
    "post an AI SDK stream": (
        "POST",
        "/runs/{run}/ai-sdk",
        [{"type": "text-delta", "id": "t", "delta": SECRET}],
    ),
    "commit a run": ("POST", "/runs/{run}/commit", None),
    "fail a run": ("POST", "/runs/{run}/fail", {"error": {"message": SECRET, "code": SECRET}}),
    "cancel a run": ("POST", "/runs/{run}/cancel", None),
    "restore a branch": ("POST", "/runs/{superseded}/restore", None),
    "claim a queued run": ("POST", "/runs/{web_run}/claim", {"worker": "agent-1"}),
}
ENDPOINTS = {**READS, **WRITES}
# Answers an ingest-only token may get: ids, statuses, counts and times.
STATUS_KEYS = {
    *(field.alias or name for name, field in RunStatusOut.model_fields.items()),
    *(field.alias or name for name, field in ThreadStatusOut.model_fields.items()),
    *("lastSeq", "accepted", "duplicates", "status", "committed"),
}


def call(client: ApiClient, endpoint: str, world: World) -> Any:
    method, path, body = ENDPOINTS[endpoint]
    path = path.format(**world.ids())
    return client.get(path) if method == "GET" else client.post(path, body)


def text_of(response: Any) -> str:
    """The whole body of a response, streamed or not."""
    if response.streaming:
        return b"".join(response.streaming_content).decode()
    return str(response.content.decode())


def state() -> tuple[Any, ...]:
    """Everything an endpoint could change, to prove that a refused call changed nothing."""
    return (
        list(
            Thread.objects.order_by("id").values_list(
                "id", "title", "metadata", "head_id", "hidden", "locked", "updated_at"
            )
        ),
        list(
            Run.objects.order_by("id").values_list(
                "id", "status", "last_seq", "error", "usage", "lease_owner", "superseded_by_id"
            )
        ),
        list(Message.objects.order_by("id").values_list("id", "active")),
        Event.objects.count(),
        ImportJob.objects.count(),
        AuditRecord.objects.count(),
    )


def test_the_tables_cover_every_endpoint_of_the_schema(client):
    schema = client.get("/api/v1/openapi.json").json()
    operations = {
        (method.upper(), path.removeprefix("/api/v1"))
        for path, methods in schema["paths"].items()
        for method in methods
    }
    covered = {(method, path) for method, path, _ in ENDPOINTS.values()}
    # Not about one thread or run: tested below, one by one.
    apart = {
        ("POST", "/threads"),
        ("GET", "/threads"),
        ("GET", "/runs"),
        ("POST", "/imports"),
        ("GET", "/imports/{jobId}"),
        # Share links: every caller and scope in tests/api/test_shares.py.
        ("POST", "/threads/{threadId}/shares"),
        ("GET", "/threads/{threadId}/shares"),
        ("DELETE", "/shares/{shareId}"),
        # The AI SDK chat backend: by chat id, every caller and scope in tests/api/test_chat.py.
        ("POST", "/chat"),
        ("GET", "/chat/{chatId}/stream"),
        ("POST", "/chat/{chatId}/stop"),
        ("GET", "/chat/{chatId}/messages"),
        # Datasets: by project, every caller and scope in tests/datasets/test_access.py.
        ("GET", "/datasets/{kind}"),
        # A project's stats: every caller and scope in tests/web/test_dashboard.py.
        ("GET", "/projects/{slug}/stats"),
        # Organising a thread: another project's token (404), each scope and bad input in
        # tests/api/test_threads_organise.py.
        ("PATCH", "/threads/{threadId}"),
        ("DELETE", "/threads/{threadId}"),
        # A new thread from a message: every caller and scope in tests/api/test_forks.py.
        ("POST", "/messages/{messageId}/fork"),
        # Scores and score configs: another project's ids answer as unknown ones, each scope,
        # in tests/api/test_scores.py.
        ("POST", "/scores"),
        ("GET", "/scores"),
        ("DELETE", "/scores/{scoreId}"),
        ("GET", "/score-configs"),
        ("POST", "/score-configs"),
        ("POST", "/score-configs/{configId}/archive"),
        # Annotation queues: another project's queue is a 404, each scope, in
        # tests/api/test_queues.py (its role table).
        ("POST", "/queues"),
        ("POST", "/queues/{queueId}/items"),
        ("GET", "/queues/{queueId}"),
        ("POST", "/queues/{queueId}/next"),
        ("POST", "/queues/{queueId}/items/{itemId}/review"),
        # Experiments: another project's experiment is a 404 on every endpoint, each scope
        # and session, in tests/api/test_experiments.py (its role table).
        ("POST", "/experiments"),
        ("GET", "/experiments"),
        ("GET", "/experiments/{experimentId}"),
        ("GET", "/experiments/{experimentId}/results"),
        ("POST", "/experiments/{experimentId}/pause"),
        ("POST", "/experiments/{experimentId}/resume"),
        ("POST", "/experiments/{experimentId}/cancel"),
        ("POST", "/experiments/{experimentId}/adopt"),
        ("POST", "/experiments/{experimentId}/discard"),
        ("POST", "/experiments/{experimentId}/items/{itemId}/judge"),
    }
    names = {"{thread}": "{threadId}", "{run}": "{runId}", "{superseded}": "{runId}"}
    names["{web_run}"] = "{runId}"
    for short, long in names.items():
        covered = {(method, path.replace(short, long)) for method, path in covered}

    assert operations | {("GET", "/runs/{runId}/stream")} == covered | apart


@pytest.mark.parametrize("scopes", [("read",), ("ingest",), ("read", "ingest", "admin")])
@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_a_token_of_another_project_gets_404_and_changes_nothing(team, world, endpoint, scopes):
    outsider = ApiClient(team.token(team.beta, *scopes))
    before = state()

    response = call(outsider, endpoint, world)

    assert response.status_code == 404, response.content
    assert error_of(response)["code"] == "not_found"
    assert SECRET not in text_of(response)
    assert state() == before


@pytest.mark.parametrize("endpoint", READS)
def test_a_token_without_read_may_not_read(team, world, endpoint):
    ingest_only = ApiClient(team.token(team.alpha, "ingest"))

    response = call(ingest_only, endpoint, world)

    assert response.status_code == 403
    assert error_of(response)["message"] == "this token lacks the 'read' scope"
    assert SECRET not in text_of(response)


@pytest.mark.parametrize("endpoint", WRITES)
def test_a_token_without_ingest_may_not_write(team, world, endpoint):
    reader = ApiClient(team.token(team.alpha, "read"))
    before = state()

    response = call(reader, endpoint, world)

    assert response.status_code == 403
    assert error_of(response)["message"] == "this token lacks the 'ingest' scope"
    assert state() == before


@pytest.mark.parametrize("endpoint", [name for name in WRITES if name != "claim a queued run"])
def test_an_ingest_only_token_gets_ids_and_statuses_never_content(team, world, endpoint):
    ingest_only = ApiClient(team.token(team.alpha, "ingest"))

    response = call(ingest_only, endpoint, world)

    assert response.status_code in (200, 201), response.content
    assert SECRET not in text_of(response)
    assert set(response.json()) <= STATUS_KEYS, set(response.json()) - STATUS_KEYS


def test_claiming_returns_the_conversation_so_it_needs_read_and_ingest(team, world):
    before = state()
    for scopes in (("ingest",), ("read",)):
        response = call(ApiClient(team.token(team.alpha, *scopes)), "claim a queued run", world)
        assert response.status_code == 403, scopes
        assert SECRET not in text_of(response)
    assert state() == before

    claimed = call(ApiClient(team.token(team.alpha, "read", "ingest")), "claim a queued run", world)

    assert claimed.status_code == 200
    assert SECRET in text_of(claimed)  # the conversation to continue


@pytest.mark.parametrize("endpoint", [name for name in ENDPOINTS if name != "follow a run live"])
def test_the_right_scopes_act(team, world, endpoint):
    # The live stream, which needs its own connection, is followed in test_stream.py.
    member = ApiClient(team.token(team.alpha, "read", "ingest"))

    response = call(member, endpoint, world)

    assert response.status_code in (200, 201), response.content
    if endpoint in READS or endpoint == "begin a run":
        assert SECRET in text_of(response)  # readers get the content


def test_an_ingest_only_token_reaching_an_existing_thread_id_gets_no_content(team, world):
    ingest_only = ApiClient(team.token(team.alpha, "ingest"))

    response = ingest_only.post("/threads", {"id": world.thread.id, "title": "other"})

    assert response.status_code == 200
    assert response.json()["id"] == world.thread.id
    assert SECRET not in text_of(response)
    assert set(response.json()) == {
        "id",
        "parentThreadId",
        "headMessageId",
        "hidden",
        "locked",
        "archived",
        "createdAt",
        "updatedAt",
    }


def test_a_thread_id_of_another_project_is_taken_and_nothing_more(team, world):
    outsider = ApiClient(team.token(team.beta, "read", "ingest", "admin"))
    before = state()

    taken = outsider.post("/threads", {"id": world.thread.id, "title": "mine"})

    assert taken.status_code == 409
    assert error_of(taken)["message"] == "this thread id cannot be used: choose another"
    assert SECRET not in text_of(taken) and "alpha" not in text_of(taken)
    assert state() == before
    unknown = outsider.post("/threads", {"id": new_ulid()})
    assert unknown.status_code == 201
    assert Thread.objects.get(pk=unknown.json()["id"]).project_id == team.beta.pk


def test_new_threads_and_runs_go_into_the_tokens_project(team):
    token = ApiClient(team.token(team.beta, "ingest"))

    created = token.post("/threads", {"title": "from beta's agent"})
    begun = token.post(f"/threads/{created.json()['id']}/runs", {})

    assert created.status_code == 201 and begun.status_code == 201
    thread = Thread.objects.get(pk=created.json()["id"])
    assert thread.project_id == team.beta.pk
    assert Run.objects.get(pk=begun.json()["id"]).origin == RunOrigin.API


def test_lists_and_search_show_only_the_tokens_project(team, world):
    beta, alpha = (ApiClient(team.token(p, "read", "admin")) for p in (team.beta, team.alpha))
    beta_runs = set(Run.objects.filter(thread__project=team.beta).values_list("id", flat=True))
    alpha_runs = set(Run.objects.filter(thread__project=team.alpha).values_list("id", flat=True))

    for client, own_thread, own_runs in (
        (beta, world.beta_thread, beta_runs),
        (alpha, world.thread, alpha_runs),
    ):
        listed = [t["id"] for t in client.get("/threads").json()["threads"]]
        found = [t["id"] for t in client.get("/threads", q=SECRET).json()["threads"]]
        runs = {
            r["id"]
            for status in RunStatus.values
            for r in client.get("/runs", status=status).json()["runs"]
        }
        assert listed == found == [own_thread.id]
        assert runs == own_runs


def test_lists_need_the_read_scope(team, world):
    ingest_only = ApiClient(team.token(team.alpha, "ingest"))

    for path in ("/threads", "/runs"):
        response = ingest_only.get(path, q=SECRET) if path == "/threads" else ingest_only.get(path)
        assert response.status_code == 403, path
        assert error_of(response)["message"] == "this token lacks the 'read' scope"


def test_an_ingest_token_stops_an_agents_run_but_not_one_started_in_the_browser(team, world):
    agent = ApiClient(team.token(team.alpha, "ingest"))
    before = state()

    refused = agent.post(f"/runs/{world.web_run.id}/cancel")

    assert refused.status_code == 403
    assert "'admin' scope" in error_of(refused)["message"]
    assert state() == before
    assert agent.post(f"/runs/{world.streaming.id}/cancel").json()["status"] == "cancelled"
    admin = ApiClient(team.token(team.alpha, "admin"))
    assert admin.post(f"/runs/{world.web_run.id}/cancel").json()["status"] == "cancelled"


def test_restoring_a_branch_started_in_the_browser_needs_the_admin_scope(team, world):
    thread = make_thread(project=team.alpha)
    question = last_message(ask(thread, "question"))
    browser_branch = say(thread, "from the browser", origin=RunOrigin.WEB)
    say(thread, "from the agent", fork_from=question.id)
    before = state()

    refused = ApiClient(team.token(team.alpha, "ingest", "read")).post(
        f"/runs/{browser_branch.id}/restore"
    )

    assert refused.status_code == 403
    assert "'admin' scope" in error_of(refused)["message"]
    assert state() == before
    restored = ApiClient(team.token(team.alpha, "admin")).post(f"/runs/{browser_branch.id}/restore")
    assert restored.json()["status"] == "committed"


def test_imports_go_into_the_tokens_project_and_their_jobs_stay_there(
    team, world, settings, tmp_path
):
    settings.MEDIA_ROOT = tmp_path
    settings.TRANSCRIPTS_SYNC_IMPORT_BYTES = 10
    document = [{"role": "user", "content": f"imported {SECRET}"}]
    raw = json.dumps({"messages": document}).encode()
    alpha_agent = ApiClient(team.token(team.alpha, "ingest"))

    queued = alpha_agent.post_raw("/imports?format=openai", raw, "application/json")

    assert queued.status_code == 202, queued.content
    job = queued.json()
    assert ImportJob.objects.get(pk=job["id"]).project_id == team.alpha.pk
    from transcripts.interchange import run_import_job

    run_import_job(job["id"])
    polled = alpha_agent.get(f"/imports/{job['id']}")
    assert polled.status_code == 200 and SECRET not in text_of(polled)
    [thread_id] = polled.json()["threadIds"]
    assert Thread.objects.get(pk=thread_id).project_id == team.alpha.pk
    for scopes in (("read",), ("ingest", "read", "admin")):
        elsewhere = ApiClient(team.token(team.beta, *scopes)).get(f"/imports/{job['id']}")
        assert elsewhere.status_code == 404
        assert error_of(elsewhere)["code"] == "not_found"
    assert team.client(team.viewer).get(f"/api/v1/imports/{job['id']}").status_code == 200
    assert team.client(team.outsider).get(f"/api/v1/imports/{job['id']}").status_code == 404

    settings.TRANSCRIPTS_SYNC_IMPORT_BYTES = 1 << 20
    beta_agent = ApiClient(team.token(team.beta, "ingest"))
    imported = beta_agent.post_raw("/imports?format=openai", raw, "application/json")
    assert imported.status_code == 201
    [beta_thread_id] = imported.json()["threadIds"]
    assert Thread.objects.get(pk=beta_thread_id).project_id == team.beta.pk
    reader = ApiClient(team.token(team.alpha, "read"))
    assert reader.post_raw("/imports", raw, "application/json").status_code == 403
