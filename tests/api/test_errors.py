"""One error shape for everything that can go wrong, and never a 500."""

from __future__ import annotations

import json

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

    for body in (b"{nope", b"\xff\xfe", b"[" * 100_000):
        response = api.post_raw(f"/runs/{run.id}/events", body, "application/json")
        assert response.status_code == 400, body[:10]
        assert error_of(response)["code"] == "invalid_json"


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
