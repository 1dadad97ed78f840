"""Share links through the API: create (read + ingest), list (read), revoke (ingest); outsiders
find nothing, and the url of a link is in the answer of its creation only."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from tests.api.conftest import ApiClient, error_of
from tests.base import Team
from tests.ledger.test_shares import Branched, branched_thread
from transcripts import ledger
from transcripts.ledger import moderation
from transcripts.models import AuditRecord, ShareLink

pytestmark = pytest.mark.django_db


def _delete(client: ApiClient, path: str) -> Any:
    return client.client.delete("/api/v1" + path, headers=client.headers)


@pytest.fixture
def branched(team: Team) -> Branched:
    return branched_thread(team.alpha)


def test_a_token_creates_a_link_to_the_head_and_the_link_opens_that_branch(
    team: Team, branched: Branched
) -> None:
    api = ApiClient(team.token(team.alpha, "read", "ingest"))

    response = api.post(f"/threads/{branched.thread.id}/shares", {})

    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == {
        "id",
        "threadId",
        "leafMessageId",
        "createdAt",
        "expiresAt",
        "revokedAt",
        "status",
        "url",
    }
    assert body["leafMessageId"] == branched.second.id
    assert body["expiresAt"] is None and body["status"] == "active"
    assert body["url"].startswith("http://testserver/s/")
    page = Client().get(body["url"].removeprefix("http://testserver"))
    assert page.status_code == 200
    assert "Paris, said the second answer" in page.content.decode()


def test_a_link_to_another_branch_with_an_expiry(team: Team, branched: Branched) -> None:
    api = ApiClient(team.token(team.alpha, "admin"))
    expires = (timezone.now() + timedelta(days=2)).replace(microsecond=0)

    response = api.post(
        f"/threads/{branched.thread.id}/shares",
        {"leafMessageId": branched.first.id, "expiresAt": expires.isoformat()},
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["leafMessageId"] == branched.first.id
    assert body["expiresAt"].replace("Z", "+00:00") == expires.isoformat()
    share = ShareLink.objects.get(pk=body["id"])
    assert share.expires_at == expires


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"leafMessageId": "01JB8ZT6QK5X4V3N2M1P0R9S8T"}, "leafMessageId"),
        ({"expiresAt": "2001-01-01T00:00:00Z"}, "expiresAt"),
        ({"expiresAt": "2999-01-01T00:00:00"}, "expiresAt"),
        ({"expiresAt": "tomorrow"}, "expiresAt"),
    ],
)
def test_a_leaf_not_in_the_thread_or_a_bad_expiry_is_refused(
    team: Team, branched: Branched, payload: dict[str, Any], field: str
) -> None:
    api = ApiClient(team.token(team.alpha))

    response = api.post(f"/threads/{branched.thread.id}/shares", payload)

    assert response.status_code == 422, response.content
    assert error_of(response)["details"]["field"] == field
    assert ShareLink.objects.count() == 0


def test_a_leaf_of_another_thread_is_refused(team: Team, branched: Branched) -> None:
    other = branched_thread(team.alpha, "Other")
    api = ApiClient(team.token(team.alpha))

    response = api.post(f"/threads/{branched.thread.id}/shares", {"leafMessageId": other.first.id})

    assert response.status_code == 422
    assert ShareLink.objects.count() == 0


def test_a_body_that_is_not_an_object_is_refused(team: Team, branched: Branched) -> None:
    api = ApiClient(team.token(team.alpha))

    response = api.client.post(
        f"/api/v1/threads/{branched.thread.id}/shares",
        json.dumps([1]),
        content_type="application/json",
        headers=api.headers,
    )

    assert response.status_code == 422


def test_an_outsider_finds_nothing_to_create_list_or_revoke(team: Team, branched: Branched) -> None:
    share, _ = ledger.create_share(thread=branched.thread, user=team.editor)
    beta = ApiClient(team.token(team.beta, "admin"))
    outsider_session = ApiClient(client=team.client(team.outsider))

    assert beta.post(f"/threads/{branched.thread.id}/shares", {}).status_code == 404
    assert beta.get(f"/threads/{branched.thread.id}/shares").status_code == 404
    assert outsider_session.get(f"/threads/{branched.thread.id}/shares").status_code == 404
    refused = _delete(beta, f"/shares/{share.id}")
    assert refused.status_code == 404
    assert branched.thread.id not in refused.content.decode()
    assert _delete(beta, "/shares/01JB8ZT6QK5X4V3N2M1P0R9S8T").status_code == 404
    assert _delete(beta, "/shares/nonsense").status_code == 404

    assert ShareLink.objects.count() == 1
    assert ShareLink.objects.get().revoked_at is None


def test_scopes_decide_who_creates_lists_and_revokes(team: Team, branched: Branched) -> None:
    share, _ = ledger.create_share(thread=branched.thread, user=team.editor)
    path = f"/threads/{branched.thread.id}/shares"
    reader = ApiClient(team.token(team.alpha, "read"))
    ingester = ApiClient(team.token(team.alpha, "ingest"))

    assert reader.post(path, {}).status_code == 403  # sharing is a write
    refused = ingester.post(path, {})  # and publishes content: it needs read too
    assert refused.status_code == 403
    assert error_of(refused)["details"]["scope"] == "read"
    assert ingester.get(path).status_code == 403
    assert _delete(reader, f"/shares/{share.id}").status_code == 403
    assert reader.get(path).status_code == 200
    assert ShareLink.objects.count() == 1

    assert _delete(ingester, f"/shares/{share.id}").status_code == 204
    assert ShareLink.objects.get().revoked_at is not None


def test_a_viewers_session_may_not_list_the_links_an_editors_may(
    team: Team, branched: Branched
) -> None:
    ledger.create_share(thread=branched.thread, user=team.editor)
    path = f"/threads/{branched.thread.id}/shares"

    refused = ApiClient(client=team.client(team.viewer)).get(path)
    listed = ApiClient(client=team.client(team.editor)).get(path)

    assert refused.status_code == 403
    assert error_of(refused)["code"] == "forbidden"
    assert listed.status_code == 200
    assert len(listed.json()["shares"]) == 1
    # A session never writes through the API.
    assert ApiClient(client=team.client(team.editor)).post(path, {}).status_code == 403


def test_the_list_holds_no_secret_or_url(team: Team, branched: Branched) -> None:
    api = ApiClient(team.token(team.alpha))
    created = api.post(f"/threads/{branched.thread.id}/shares", {}).json()
    secret = created["url"].rstrip("/").rsplit("/", 1)[-1]

    listed = api.get(f"/threads/{branched.thread.id}/shares")

    assert listed.status_code == 200
    [row] = listed.json()["shares"]
    assert row["id"] == created["id"] and row["status"] == "active"
    assert "url" not in row
    assert secret not in listed.content.decode()


def test_revoking_answers_204_once_the_page_is_gone_and_is_audited(
    team: Team, branched: Branched
) -> None:
    api = ApiClient(team.token(team.alpha))
    created = api.post(f"/threads/{branched.thread.id}/shares", {}).json()
    page = created["url"].removeprefix("http://testserver")
    assert Client().get(page).status_code == 200

    assert _delete(api, f"/shares/{created['id']}").status_code == 204
    assert _delete(api, f"/shares/{created['id']}").status_code == 204

    assert Client().get(page).status_code == 404
    listed = api.get(f"/threads/{branched.thread.id}/shares").json()
    assert listed["shares"][0]["status"] == "revoked"
    actions = list(
        AuditRecord.objects.filter(target_id=created["id"])
        .order_by("pk")
        .values_list("action", "details__via", "details__token")
    )
    assert actions == [("create_share", "api", "test"), ("revoke_share", "api", "test")]


def test_a_hidden_thread_exists_only_for_an_admin_token_which_still_cannot_share_it(
    team: Team, branched: Branched
) -> None:
    moderation.hide_thread(user=team.moderator, thread=branched.thread)
    path = f"/threads/{branched.thread.id}/shares"

    assert ApiClient(team.token(team.alpha)).post(path, {}).status_code == 404
    refused = ApiClient(team.token(team.alpha, "admin")).post(path, {})

    assert refused.status_code == 409
    assert ShareLink.objects.count() == 0
