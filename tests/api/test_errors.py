"""One error shape for everything that can go wrong, and never a 500."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import override_settings

from tests.api.conftest import error_of
from tests.factories import make_run, make_thread

pytestmark = pytest.mark.django_db


def _events(count: int) -> dict:
    return {
        "events": [
            {"seq": i + 1, "kind": "text-delta", "data": {"delta": "x" * 10}} for i in range(count)
        ]
    }


@override_settings(TRANSCRIPTS_MAX_BODY_BYTES=1000)
def test_a_body_over_the_limit_is_a_413(api):
    run = make_run(make_thread(), commit=False)

    response = api.post(f"/runs/{run.id}/events", _events(50))

    assert response.status_code == 413
    assert error_of(response)["code"] == "too_large"
    assert error_of(response)["details"]["maxBytes"] == 1000


@override_settings(TRANSCRIPTS_MAX_BODY_BYTES=1000)
def test_a_body_over_the_limit_is_a_413_on_the_ai_sdk_endpoint_too(api):
    run = make_run(make_thread(), commit=False)

    response = api.post_raw(f"/runs/{run.id}/ai-sdk", b"data: {}\n\n" * 200, "text/event-stream")

    assert response.status_code == 413


@override_settings(TRANSCRIPTS_MAX_BODY_BYTES=1000)
def test_an_understated_content_length_does_not_pass_the_limit(api):
    run = make_run(make_thread(), commit=False)
    body = json.dumps(_events(50)).encode()

    response = api.client.generic(
        "POST",
        f"/api/v1/runs/{run.id}/events",
        body,
        content_type="application/json",
        headers={**api.headers},
        CONTENT_LENGTH="10",
    )

    assert response.status_code in (400, 413)
    assert error_of(response)


def test_malformed_json_is_a_400_with_the_error_shape(api):
    run = make_run(make_thread(), commit=False)

    for body in (b"{nope", b"\xff\xfe", b"[" * 10 + b"}"):
        response = api.post_raw(f"/runs/{run.id}/events", body, "application/json")
        assert response.status_code == 400, body[:10]
        assert error_of(response)["code"] == "invalid_json"


@pytest.mark.parametrize("body", [b"[" * 10_000 + b"]" * 10_000, b"[" * 100_000, b'{"a":' * 10_000])
def test_json_deeper_than_the_parser_goes_is_a_422_naming_the_limit(api, body):
    from transcripts.models import Event

    run = make_run(make_thread(), commit=False)

    for path in (f"/runs/{run.id}/events", "/threads", f"/runs/{run.id}/claim"):
        response = api.post_raw(path, body, "application/json")
        assert response.status_code == 422, (path, response.content[:200])
        assert error_of(response)["code"] == "invalid"
        assert error_of(response)["details"]["maxDepth"] == 64
    assert not Event.objects.filter(run=run).exists()


def test_json_of_the_wrong_shape_is_a_422(api):
    run = make_run(make_thread(), commit=False)

    for body in ([], "text", {"events": "no"}, {"events": [1]}, None):
        response = api.post(f"/runs/{run.id}/events", body)
        assert response.status_code == 422, body
        assert error_of(response)["code"] == "invalid"


def test_values_postgres_cannot_store_are_a_422(api):
    run = make_run(make_thread(), commit=False)
    nul = {"events": [{"seq": 1, "kind": "text-delta", "data": {"delta": "a\u0000b"}}]}

    assert api.post(f"/runs/{run.id}/events", nul).status_code == 422
    assert api.post("/threads", {"title": "a\u0000b"}).status_code == 422
    assert api.post("/threads", {"metadata": {"k": "a\u0000"}}).status_code == 422
    body = b'{"events": [{"seq": 1, "kind": "data-x", "data": NaN}]}'
    assert api.post_raw(f"/runs/{run.id}/events", body, "application/json").status_code == 422


def test_an_unknown_api_path_is_a_json_404(api):
    response = api.get("/no/such/thing")

    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"


def test_a_wrong_method_is_a_json_405(api):
    response = api.client.delete("/api/v1/threads", headers=api.headers)

    assert response.status_code == 405
    assert error_of(response)["code"] == "method_not_allowed"
    assert "GET" in response["Allow"]


def test_the_openapi_schema_and_docs_are_served_by_the_app(client):
    schema = client.get("/api/v1/openapi.json").json()
    page = client.get("/api/v1/docs").content.decode()

    assert "/api/v1/runs/{runId}/events" in schema["paths"]
    assert "cdn" not in page.lower() and "https://" not in page
    for asset in ("swagger-ui.css", "swagger-ui-bundle.js", "swagger-ui-init.js"):
        assert f"/api/v1/docs/assets/{asset}" in page
        response = client.get(f"/api/v1/docs/assets/{asset}")
        assert response.status_code == 200
        assert b"".join(response.streaming_content)
    assert client.get("/api/v1/docs/assets/..%2Fsettings.py").status_code == 404


@pytest.mark.parametrize("body", [5, "text", None, True, [], [None, None], [{"title": "x"}]])
def test_a_body_that_is_not_a_json_object_is_a_422_and_creates_nothing(api, body):
    from transcripts.models import Run, Thread

    thread = make_thread()
    run = make_run(thread, commit=False)
    threads, runs = Thread.objects.count(), Run.objects.count()

    for path in ("/threads", f"/threads/{thread.id}/runs", f"/runs/{run.id}/events"):
        response = api.post_raw(path, json.dumps(body), "application/json")
        assert response.status_code == 422, (path, body, response.content)
        problem = error_of(response)["details"]["problems"][0]
        assert problem["path"] == "body"
        assert problem["message"].startswith("must be a JSON object")
    assert (Thread.objects.count(), Run.objects.count()) == (threads, runs)


def test_an_event_that_is_not_an_object_is_named_by_its_index(api):
    run = make_run(make_thread(), commit=False)

    response = api.post(f"/runs/{run.id}/events", {"events": [5]})

    assert response.status_code == 422
    assert error_of(response)["details"]["problems"][0]["path"] == "events[0]"


def _nested(depth: int) -> Any:
    value: Any = "bottom"
    for level in range(depth):
        value = {"a": value} if level % 2 else [value]
    return value


def test_json_nested_too_deeply_is_a_422_and_stores_nothing(api):
    from transcripts.models import Event

    run = make_run(make_thread(), commit=False)
    for depth in (61, 900):  # 61: one level past the limit with the envelope
        batch = {"events": [{"seq": 1, "kind": "data-deep", "data": {"v": _nested(depth)}}]}
        response = api.post(f"/runs/{run.id}/events", batch)
        assert response.status_code == 422, depth
        assert error_of(response)["details"]["maxDepth"] == 64
        chunks = [{"type": "data-deep", "data": _nested(depth + 2)}]  # a shorter envelope
        assert api.post(f"/runs/{run.id}/ai-sdk?commit=true", chunks).status_code == 422, depth
    assert not Event.objects.filter(run=run).exists()


def test_json_nested_within_the_limit_is_stored_projected_and_committed(api):
    run = make_run(make_thread(), commit=False)
    data = {"v": _nested(60)}  # with the envelope: 64 levels, the limit
    batch = {"events": [{"seq": 1, "kind": "data-deep", "data": data}, *_events(1)["events"]]}
    batch["events"][1]["seq"] = 2

    assert api.post(f"/runs/{run.id}/events", batch).status_code == 200
    assert api.get(f"/runs/{run.id}/messages").status_code == 200
    assert api.post(f"/runs/{run.id}/commit").json()["status"] == "committed"
    assert api.get(f"/runs/{run.id}/events").json()["events"][0]["data"] == data
