"""Queued runs for outside stream layers: list, claim, then stream and commit."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import ApiClient, error_of
from tests.factories import conversation
from transcripts.generation.start import start_generation
from transcripts.models import Run

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def outside_stream_layer(settings: Any) -> None:
    """The server offers the external generator: an agent polls for its queued runs."""
    settings.TRANSCRIPTS_EXTERNAL_GENERATOR = True


def test_an_outside_stream_layer_finds_claims_and_streams_a_queued_run(api: ApiClient):
    thread = conversation(turns=1)
    run = start_generation(thread=thread, generator="external", model="my-agent")
    listed = api.get("/runs", status="queued", generator="external").json()["runs"]
    assert [r["id"] for r in listed] == [run.id]

    claim = api.post(f"/runs/{run.id}/claim", {"worker": "agent-1", "leaseSeconds": 60})
    assert claim.status_code == 200
    body = claim.json()
    assert body["run"]["status"] == "streaming"
    assert [m["role"] for m in body["messages"]] == ["user", "assistant"]

    other = api.post(f"/runs/{run.id}/claim", {"worker": "agent-2"})
    assert error_of(other)["code"] == "conflict"
    assert api.post(f"/runs/{run.id}/claim", {"worker": "agent-1"}).status_code == 200

    events = [{"seq": 1, "kind": "text-delta", "data": {"delta": "hello"}}]
    assert api.post(f"/runs/{run.id}/events", {"events": events}).status_code == 200
    assert api.post(f"/runs/{run.id}/commit").json()["status"] == "committed"
    assert api.get("/runs", status="queued").json()["runs"] == []


def test_claims_need_ingest_and_valid_input(api: ApiClient, reader: ApiClient):
    thread = conversation(turns=1)
    run = start_generation(thread=thread, generator="external")
    assert reader.post(f"/runs/{run.id}/claim", {"worker": "w"}).status_code == 403
    assert api.post(f"/runs/{run.id}/claim", {"worker": ""}).status_code == 422
    assert api.post(f"/runs/{run.id}/claim", {"worker": "w", "leaseSeconds": -1}).status_code == 422
    assert api.get("/runs", status="bogus").status_code == 422
    assert Run.objects.get(pk=run.id).status == "queued"
