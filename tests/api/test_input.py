"""What a request may hold: text PostgreSQL can store in every field and query parameter (the
OpenAPI schema walked, NUL sent everywhere), JSON content types, required bodies, and one
charset. Nothing refused is stored, and nothing answers 5xx."""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlencode

import pytest

from tests.api.conftest import ApiClient, error_of
from tests.factories import conversation, make_run, make_thread
from transcripts import ledger
from transcripts.generation.start import start_generation
from transcripts.models import AuditRecord, Event, ImportJob, Message, Run, RunStatus, Thread

pytestmark = pytest.mark.django_db

NUL = "a\u0000b"
# A valid body for every operation with one: each field is then given a NUL in turn.
VALID_BODIES: dict[tuple[str, str], Any] = {
    ("POST", "/threads"): {"title": "t", "metadata": {"k": "v"}, "agents": {"a": {}}},
    ("PATCH", "/threads/{threadId}"): {"title": "renamed", "tags": ["t"], "archived": False},
    ("POST", "/threads/{threadId}/runs"): {"metadata": {"k": "v"}},
    ("POST", "/runs/{runId}/events"): {
        "events": [{"seq": 2, "kind": "text-delta", "data": {"delta": "x"}, "at": None}]
    },
    ("POST", "/runs/{runId}/fail"): {"error": {"message": "m", "code": "c"}},
    ("POST", "/runs/{runId}/claim"): {"worker": "w"},
    ("POST", "/runs/{runId}/ai-sdk"): [{"type": "text-delta", "id": "t", "delta": "x"}],
    ("POST", "/imports"): {"messages": [{"role": "user", "content": "hello"}]},
    ("POST", "/threads/{threadId}/shares"): {"expiresAt": "2999-01-01T00:00:00Z"},
    ("POST", "/scores"): {
        "messageId": "01J0000000000000000000000A",
        "name": "n",
        "value": 1,
        "comment": "c",
        "source": "api",
        "externalId": "e",
    },
    ("POST", "/score-configs"): {
        "name": "n",
        "dataType": "categorical",
        "labels": ["a"],
        "description": "d",
        "writers": "both",
    },
    ("POST", "/queues"): {
        "name": "q",
        "scoreConfigs": ["n"],
        "threadIds": ["t"],
        "messageIds": ["m"],
        "filter": "q=x",
        "description": "d",
    },
    ("POST", "/queues/{queueId}/items"): {"threadIds": ["t"], "messageIds": ["m"], "filter": "f"},
    ("POST", "/queues/{queueId}/items/{itemId}/review"): {"scores": {"n": "label"}, "comment": "c"},
    ("POST", "/experiments"): {
        "name": "e",
        "description": "d",
        "project": "default",
        "generator": "demo",
        "model": "demo-brief",
        "parameters": {"delayMs": 0},
        "systemPrompt": "s",
        "filter": "q=x",
        "tag": "t",
        "threadIds": ["t"],
        "forks": {"t": "m"},
        "evaluators": [{"type": "exact-match"}],
    },
    ("POST", "/experiments/{experimentId}/adopt"): {"itemIds": [1]},
    ("POST", "/experiments/{experimentId}/discard"): {"delete": False},
    ("POST", "/experiments/{experimentId}/items/{itemId}/judge"): {"verdict": "a"},
    ("POST", "/chat"): {
        "id": "c",
        "messages": [{"id": "u", "role": "user", "parts": [{"type": "text", "text": "hi"}]}],
    },
}
Path = tuple[str | int, ...]


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _string_places(schema: dict[str, Any], node: dict[str, Any], at: Path) -> Iterator[Path]:
    """Every place of a body where the schema lets a string go (a new key of open objects)."""
    node = _resolve(schema, node)
    for alternative in node.get("anyOf", []) + node.get("oneOf", []):
        yield from _string_places(schema, alternative, at)
    kind = node.get("type")
    if kind == "string" or (kind is None and not node.get("anyOf")):
        yield at
    if kind == "object":
        for name, child in node.get("properties", {}).items():
            yield from _string_places(schema, child, (*at, name))
        if node.get("additionalProperties") or not node.get("properties"):
            yield (*at, "extra")
    if kind == "array":
        yield from _string_places(schema, node.get("items", {}), (*at, 0))


def _leaves(value: Any, at: Path = ()) -> Iterator[Path]:
    """Every string of a body."""
    if isinstance(value, str):
        yield at
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, (*at, index))


def _with(body: Any, at: Path, value: Any) -> Any:
    """A copy of body holding value at the place at (made where missing)."""
    changed = copy.deepcopy(body)
    container = changed
    for step, following in itertools.pairwise(at):
        missing = {} if isinstance(following, str) else []
        if isinstance(container, list) and not container:
            container.append(missing)
        elif isinstance(container, dict) and not isinstance(container.get(step), dict | list):
            container[step] = missing
        container = container[step]
    if isinstance(container, list) and not container:
        container.append(value)
    else:
        container[at[-1]] = value
    return changed


def _nul_key(body: Any, at: Path) -> Any:
    """A copy of body whose open object at the place holds a key with a NUL."""
    changed = _with(body, at, "v")
    container = changed
    for step in at[:-1]:
        container = container[step]
    container[NUL] = container.pop(at[-1])
    return changed


def _state() -> tuple[Any, ...]:
    return (
        list(Thread.objects.order_by("id").values_list("id", "title", "metadata", "head_id")),
        list(Run.objects.order_by("id").values_list("id", "status", "last_seq", "lease_owner")),
        Message.objects.count(),
        Event.objects.count(),
        ImportJob.objects.count(),
        AuditRecord.objects.count(),
    )


@pytest.fixture
def ids() -> dict[str, str]:
    thread = conversation(turns=1)
    run = make_run(thread, ("text-delta", {"delta": "hi"}), commit=False)
    share, _ = ledger.create_share(thread=thread, user=None)
    ids = {"threadId": thread.id, "runId": run.id, "jobId": run.id, "chatId": "a-chat"}
    message = Message.objects.filter(thread=thread).order_by("depth").first()
    assert message is not None
    places = {"messageId": message.id, "slug": thread.project.slug}
    return {
        **ids,
        **places,
        "shareId": share.id,
        "kind": "sft",
        "queueId": "1",
        "itemId": "1",
        "scoreId": "1",
        "configId": "1",
        "experimentId": "01J0000000000000000000000E",
    }


def _requests(schema: dict[str, Any], ids: dict[str, str]) -> Iterator[tuple[str, Any, int]]:
    """(description, a request to send, the status expected): NUL in every place."""
    for raw_path, methods in schema["paths"].items():
        path = raw_path.removeprefix("/api/v1")
        for method, operation in methods.items():
            method = method.upper()
            params = operation.get("parameters", [])
            real = path.format(**ids)
            body = VALID_BODIES.get((method, path))
            content = operation.get("requestBody", {}).get("content", {})
            assert not content or body is not None, f"add a valid body for {method} {path}"
            for param in params:
                if param["in"] == "path":
                    at_nul = path.replace("{" + param["name"] + "}", quote(NUL)).format(**ids)
                    yield f"{method} {path} {param['name']}", (method, at_nul, {}, body), 404
                elif param["in"] == "query":
                    query = "?" + urlencode({param["name"]: NUL})
                    yield f"{method} {path} ?{param['name']}", (method, real + query, {}, body), 422
            if body is None:
                continue
            places = set(_leaves(body))
            media = next(iter(content))
            if media == "application/json":
                places |= set(_string_places(schema, content[media]["schema"], ()))
            for at in sorted(places, key=str):
                described = f"{method} {path} body{list(at)}"
                yield described, (method, real, {}, _with(body, at, NUL)), 422
                if at and at[-1] == "extra":
                    yield described + " key", (method, real, {}, _nul_key(body, at)), 422


def _send(client: ApiClient, request: tuple[str, str, dict[str, str], Any]) -> Any:
    method, path, headers, body = request
    if method == "GET":
        return client.client.get("/api/v1" + path, headers={**client.headers, **headers})
    if method == "DELETE":
        return client.client.delete("/api/v1" + path, headers={**client.headers, **headers})
    send = client.client.patch if method == "PATCH" else client.client.post
    return send(
        "/api/v1" + path,
        json.dumps(body) if body is not None else "",
        content_type="application/json",
        headers={**client.headers, **headers},
    )


def test_nul_in_every_field_and_parameter_is_refused_and_nothing_is_stored(client, make_token, ids):
    schema = client.get("/api/v1/openapi.json").json()
    admin = ApiClient(make_token("read", "ingest", "admin"))
    requests = list(_requests(schema, ids))
    requests.append(
        (
            "GET stream ?afterSeq",
            ("GET", f"/runs/{ids['runId']}/stream?afterSeq=%00", {}, None),
            422,
        )
    )
    requests.append(
        (
            "POST /imports X-Filename",
            ("POST", "/imports", {"X-Filename": NUL}, VALID_BODIES[("POST", "/imports")]),
            422,
        )
    )
    described = {description for description, _, _ in requests}
    assert {"POST /runs/{runId}/claim body['worker']", "GET /runs ?generator"} <= described
    assert len(requests) > 60
    before = _state()

    for description, request, expected in requests:
        response = _send(admin, request)
        assert response.status_code == expected, (description, response.content[:300])
        assert error_of(response)["code"] == ("not_found" if expected == 404 else "invalid")

    assert _state() == before


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"title": "\ud800"}, "title"),
        ({"title": "t", "metadata": {"deep": ["\ud800"]}}, "metadata.deep[0]"),
    ],
)
def test_a_lone_surrogate_is_refused_naming_where_it_is(api, body, path):
    response = api.post_raw("/threads", json.dumps(body), "application/json")

    assert response.status_code == 422
    assert error_of(response)["details"]["problems"][0]["path"] == path
    assert not Thread.objects.exists()


def test_an_escaped_emoji_is_fine(api):
    response = api.post_raw("/threads", json.dumps({"title": "hi 😀"}), "application/json")

    assert response.status_code == 201
    assert Thread.objects.get().title == "hi 😀"


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "text/csv",
    ],
)
def test_a_json_endpoint_refuses_another_content_type_with_415(api, content_type):
    thread = make_thread()
    run = make_run(thread, commit=False)
    posts = {
        "/threads": {"title": "t"},
        f"/threads/{thread.id}/runs": {},
        f"/runs/{run.id}/events": {
            "events": [{"seq": 1, "kind": "text-delta", "data": {"delta": "x"}}]
        },
        f"/runs/{run.id}/fail": {"error": "e"},
        f"/runs/{run.id}/claim": {"worker": "w"},
    }
    before = _state()

    for path, body in posts.items():
        response = api.post_raw(path, json.dumps(body), content_type)
        assert response.status_code == 415, (path, response.content)
        error = error_of(response)
        assert error["code"] == "unsupported_media_type"
        assert error["details"]["accepted"] == ["application/json"]
    assert _state() == before


@pytest.mark.parametrize(
    "content_type", ["application/json; charset=utf-8", "application/merge-patch+json", ""]
)
def test_json_content_types_and_none_are_read_as_json(api, content_type):
    response = api.client.post(
        "/api/v1/threads",
        json.dumps({"title": "t"}),
        content_type=content_type,
        headers=api.headers,
    )

    assert response.status_code == 201, response.content


def test_the_ai_sdk_endpoint_takes_event_streams_json_and_fetchs_plain_text_only(api):
    run = make_run(make_thread(), commit=False)
    chunks = json.dumps([{"type": "text-delta", "id": "t", "delta": "x"}])

    refused = api.post_raw(f"/runs/{run.id}/ai-sdk", chunks, "application/x-www-form-urlencoded")

    assert refused.status_code == 415
    assert set(error_of(refused)["details"]["accepted"]) == {
        "application/json",
        "text/event-stream",
        "text/plain",
    }
    assert not Event.objects.filter(run=run).exists()
    # fetch() sends a string body as text/plain;charset=UTF-8 unless told otherwise.
    accepted = api.post_raw(f"/runs/{run.id}/ai-sdk", chunks, "text/plain;charset=UTF-8")
    assert accepted.status_code == 200, accepted.content


@pytest.mark.parametrize("body", [b"", b"  \r\n"])
def test_an_ai_sdk_post_without_a_body_is_a_422_and_commits_nothing(api, body):
    run = make_run(make_thread(), ("text-delta", {"delta": "half"}), commit=False)

    for content_type in ("text/event-stream", "application/json"):
        response = api.post_raw(f"/runs/{run.id}/ai-sdk?commit=true", body, content_type)
        assert response.status_code == 422, response.content
        assert error_of(response)["details"]["field"] == "body"
    assert Run.objects.get(pk=run.id).status == RunStatus.STREAMING
    assert Event.objects.filter(run=run).count() == 1


@pytest.mark.parametrize("fmt", ["markdown", "canonical", "openai"])
def test_an_export_names_its_charset_once(reader, fmt):
    thread = conversation(turns=1)

    response = reader.get(f"/threads/{thread.id}/export", format=fmt)

    assert response.status_code == 200
    assert response["Content-Type"].count("charset") == 1, response["Content-Type"]
    assert response["Content-Type"].endswith("charset=utf-8")


def test_a_queued_run_claimed_with_a_nul_worker_stays_queued(api, settings):
    settings.TRANSCRIPTS_EXTERNAL_GENERATOR = True  # an agent polls for queued runs
    run = start_generation(thread=conversation(turns=1), generator="external")

    response = api.post(f"/runs/{run.id}/claim", {"worker": NUL})

    assert response.status_code == 422
    assert error_of(response)["details"]["problems"][0]["path"] == "worker"
    assert Run.objects.get(pk=run.id).status == RunStatus.QUEUED
