"""Who gets a dataset: through the API (tokens and sessions), the page, and the stream."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from django.test import Client

from tests.base import Team
from tests.datasets.conftest import Regenerated, regenerated_thread
from transcripts.ledger import moderation

pytestmark = pytest.mark.django_db


def get(client: Client, path: str, token: str | None = None, **params: Any) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return client.get("/api/v1" + path, params, headers=headers)


def rows_of(response: Any) -> list[dict[str, Any]]:
    body = b"".join(response.streaming_content).decode()
    return [json.loads(line) for line in body.splitlines()]


def test_a_read_token_streams_its_projects_rows(team: Team, regenerated: Regenerated) -> None:
    token = team.token(team.alpha, "read")
    response = get(Client(), "/datasets/preferences", token)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson; charset=utf-8"
    assert 'filename="alpha-preferences-trl.jsonl"' in response["Content-Disposition"]
    assert [row["metadata"]["threadId"] for row in rows_of(response)] == [regenerated.thread.id] * 2
    named = get(Client(), "/datasets/sft", token, project="alpha", format="hf")
    assert len(rows_of(named)) == 1


def test_another_projects_token_gets_404_and_nothing(team: Team, regenerated: Regenerated) -> None:
    outsider = team.token(team.beta, "read", "admin")
    response = get(Client(), "/datasets/preferences", outsider, project="alpha")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    own = get(Client(), "/datasets/preferences", outsider)
    assert rows_of(own) == []
    missing = get(Client(), "/datasets/preferences", outsider, project="nowhere")
    assert missing.status_code == 404
    unstorable = get(Client(), "/datasets/preferences", outsider, project="al\x00pha")
    assert unstorable.status_code == 422


def test_a_token_without_read_is_refused(team: Team, regenerated: Regenerated) -> None:
    response = get(Client(), "/datasets/sft", team.token(team.alpha, "ingest"))
    assert response.status_code == 403
    assert "read" in response.json()["error"]["message"]
    assert get(Client(), "/datasets/sft").status_code == 401


def test_an_unknown_kind_is_404_and_bad_input_a_422_naming_the_field(
    team: Team, regenerated: Regenerated
) -> None:
    token = team.token(team.alpha, "read")
    unknown = get(Client(), "/datasets/stories", token)
    assert unknown.status_code == 404
    assert "preferences, sft" in unknown.json()["error"]["message"]
    for path, params, field in (
        ("/datasets/sft", {"format": "trl"}, "format"),
        ("/datasets/sft", {"since": "soon"}, "since"),
        ("/datasets/sft", {"branches": "x"}, "branches"),
    ):
        response = get(Client(), path, token, **params)
        assert response.status_code == 422, path
        assert response.json()["error"]["details"]["field"] == field


def test_sessions_read_the_projects_they_belong_to(team: Team, regenerated: Regenerated) -> None:
    viewer = get(team.client(team.viewer), "/datasets/preferences", project="alpha")
    assert len(rows_of(viewer)) == 2
    for user in (team.outsider, team.stranger):
        refused = get(team.client(user), "/datasets/preferences", project="alpha")
        assert refused.status_code == 404
    unnamed = get(team.client(team.viewer), "/datasets/preferences")
    assert unnamed.status_code == 422


def test_the_page_shows_counts_preview_and_the_download(
    team: Team, regenerated: Regenerated
) -> None:
    response = team.client(team.viewer).get("/p/alpha/datasets/", {"kind": "preferences"})
    assert response.status_code == 200
    page = response.content.decode()
    assert "<strong>2</strong> rows" in page
    assert "<strong>1</strong> fork point" in page
    assert "Four." in page and "2 + 2 = 4" in page
    assert "/api/v1/datasets/preferences?project=alpha" in page
    assert 'href="/p/alpha/datasets/"' in team.client(team.viewer).get("/p/alpha/").content.decode()


def test_the_page_refuses_outsiders_and_bad_filters(team: Team, regenerated: Regenerated) -> None:
    for user in (team.outsider, team.stranger):
        assert team.client(user).get("/p/alpha/datasets/").status_code == 404
    bad = team.client(team.viewer).get("/p/alpha/datasets/", {"kind": "sft", "format": "trl"})
    assert bad.status_code == 422
    assert "format must be one of openai, hf" in bad.content.decode()
    partial = team.client(team.viewer).get(
        "/p/alpha/datasets/", {"kind": "sft"}, headers={"HX-Request": "true"}
    )
    assert partial.status_code == 200
    assert partial.content.decode().lstrip().startswith('<section id="results"')


def test_the_page_never_shows_hidden_threads_even_to_moderators(
    team: Team, regenerated: Regenerated
) -> None:
    moderation.hide_thread(user=team.moderator, thread=regenerated.thread, reason="spam")
    page = team.client(team.moderator).get("/p/alpha/datasets/").content.decode()
    assert "<strong>0</strong> rows" in page and "Four." not in page


@pytest.mark.django_db(transaction=True)
def test_the_asgi_server_streams_the_file(team: Team, live_server_asgi: Any) -> None:
    for n in range(3):
        regenerated_thread(team, title=f"Thread {n}")
    token = team.token(team.alpha, "read")
    url = live_server_asgi.url + "/api/v1/datasets/preferences"
    with httpx.stream(
        "GET", url, headers={"Authorization": f"Bearer {token}"}, timeout=30
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("application/x-ndjson")
        lines = [json.loads(line) for line in response.iter_lines() if line]
    assert len(lines) == 6
