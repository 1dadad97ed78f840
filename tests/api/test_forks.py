"""POST /api/v1/messages/{id}/fork: a new thread from a message, for a token with the ingest
(or admin) scope; a read-only token is refused (403), another project's token and unknown
ids find nothing (404), a hidden thread is refused but for what an admin token reaches."""

from __future__ import annotations

import pytest

from tests.api.conftest import ApiClient, error_of
from tests.base import Team
from tests.ledger.test_shares import Branched, branched_thread
from transcripts import selectors
from transcripts.models import AuditRecord, Message, Thread

pytestmark = pytest.mark.django_db


@pytest.fixture
def branched(team: Team) -> Branched:
    return branched_thread(team.alpha)


@pytest.mark.parametrize("scopes", [("ingest", "read"), ("admin",)])
def test_a_token_forks_a_message_into_a_new_thread(
    team: Team, branched: Branched, scopes: tuple[str, ...]
) -> None:
    api = ApiClient(team.token(team.alpha, *scopes))

    response = api.post(f"/messages/{branched.first.id}/fork")

    assert response.status_code == 201, response.content
    body = response.json()
    fork = Thread.objects.get(pk=body["id"])
    assert body["parentThreadId"] == branched.thread.id
    assert body["metadata"]["forkedFrom"]["messageId"] == branched.first.id
    assert body["title"] == "Capitals (from message 2)"
    assert body["headMessageId"] == fork.head_id
    texts = [m.parts[0]["text"] for m in selectors.active_path(fork)]
    assert texts[1].strip() == "Marseille, said the first answer"
    record = AuditRecord.objects.get(action="fork")
    assert record.details["via"] == "api" and record.details["tokenId"] is not None


def test_an_ingest_token_gets_ids_and_state_only(team: Team, branched: Branched) -> None:
    response = ApiClient(team.token(team.alpha, "ingest")).post(
        f"/messages/{branched.second.id}/fork"
    )

    assert response.status_code == 201, response.content
    assert "metadata" not in response.json()


def test_a_read_token_is_refused(team: Team, branched: Branched) -> None:
    response = ApiClient(team.token(team.alpha, "read")).post(
        f"/messages/{branched.second.id}/fork"
    )

    assert response.status_code == 403
    assert Thread.objects.count() == 1


@pytest.mark.parametrize("message_id", ["outsider", "01ARZ3NDEKTSV4RRFFQ69G5FAV", "nope"])
def test_another_projects_token_and_unknown_ids_find_nothing(
    team: Team, branched: Branched, message_id: str
) -> None:
    target = branched.second.id if message_id == "outsider" else message_id
    api = ApiClient(team.token(team.beta, "ingest", "read"))

    response = api.post(f"/messages/{target}/fork")

    assert response.status_code == 404
    assert error_of(response)["details"] == {"messageId": target}
    assert Thread.objects.filter(project=team.alpha).count() == 1


def test_a_hidden_thread_is_not_found_or_refused(team: Team, branched: Branched) -> None:
    Thread.objects.filter(pk=branched.thread.pk).update(hidden=True)
    path = f"/messages/{branched.second.id}/fork"

    assert ApiClient(team.token(team.alpha, "ingest", "read")).post(path).status_code == 404
    response = ApiClient(team.token(team.alpha, "admin")).post(path)

    assert response.status_code == 409
    assert "hidden" in error_of(response)["message"]
    assert Thread.objects.count() == 1 and Message.objects.count() == 3


def test_a_browser_session_may_not_fork(team: Team, branched: Branched) -> None:
    response = team.client(team.owner).post(
        f"/api/v1/messages/{branched.second.id}/fork", "", content_type="application/json"
    )

    assert response.status_code == 403
    assert Thread.objects.count() == 1
