"""A client-chosen id taken elsewhere (another project, or a thread of the caller's project it
cannot see) is refused with one answer that names neither the thread nor the project."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import ApiClient, error_of
from tests.base import Team
from tests.factories import ask, last_message, make_run, make_thread
from transcripts.ids import new_ulid
from transcripts.ledger.moderation import hide_thread
from transcripts.models import Event, Message, Run, Thread

pytestmark = pytest.mark.django_db


@pytest.fixture
def elsewhere(team: Team) -> dict[str, Any]:
    """A thread of beta with a run and a message, and a hidden thread of alpha with the same;
    an ingest token of alpha, and a thread of alpha it writes to."""
    beta = make_thread("beta's", project=team.beta)
    hidden = make_thread("hidden", project=team.alpha)
    beta_run, hidden_run = ask(beta, "secret"), ask(hidden, "secret")
    hide_thread(user=team.owner, thread=hidden)
    own = make_thread("own", project=team.alpha)
    return {
        "client": ApiClient(team.token(team.alpha, "ingest", "read")),
        "own": own,
        "runs": {"another project": beta_run, "a hidden thread": hidden_run},
        "threads": {"another project": beta, "a hidden thread": hidden},
    }


WHERE = ["another project", "a hidden thread"]


def _text(response: Any) -> str:
    return response.content.decode()


def _answers(elsewhere: dict[str, Any], send: Any) -> list[Any]:
    """The answer to send(taken object) for each place an id may be taken."""
    return [send(elsewhere, where) for where in WHERE]


def _same_refusal(responses: list[Any], *hidden_ids: str) -> dict[str, Any]:
    first = error_of(responses[0])
    for response in responses:
        assert response.status_code == 409, response.content
        error = error_of(response)
        assert (error["code"], error["message"]) == (first["code"], first["message"])
        assert error["details"].keys() == first["details"].keys()
        for value in hidden_ids:
            assert value not in _text(response)
        assert "beta" not in _text(response) and "alpha" not in _text(response)
    return first


def test_a_run_id_taken_elsewhere_has_one_answer(elsewhere: dict[str, Any]) -> None:
    client, own = elsewhere["client"], elsewhere["own"]

    def send(elsewhere: dict[str, Any], where: str) -> Any:
        return client.post(f"/threads/{own.id}/runs", {"id": elsewhere["runs"][where].id})

    responses = _answers(elsewhere, send)
    threads = [t.id for t in elsewhere["threads"].values()]
    error = _same_refusal(responses, *threads)
    assert error["message"] == "this run id cannot be used: choose another"
    # The id sent is said back, as sent; nothing else.
    sent = [elsewhere["runs"][where].id for where in WHERE]
    assert [error_of(r)["details"] for r in responses] == [{"runId": run} for run in sent]
    assert not Run.objects.filter(thread=own).exists()


def test_a_message_id_taken_elsewhere_has_one_answer(elsewhere: dict[str, Any]) -> None:
    client, own = elsewhere["client"], elsewhere["own"]
    run = make_run(own, commit=False)

    def send(elsewhere: dict[str, Any], where: str) -> Any:
        taken = last_message(elsewhere["runs"][where]).id
        event = {"role": "user", "parts": [{"type": "text", "text": "x"}], "id": taken}
        return client.post(
            f"/runs/{run.id}/events", {"events": [{"seq": 1, "kind": "message", "data": event}]}
        )

    responses = _answers(elsewhere, send)
    taken = [last_message(r).id for r in elsewhere["runs"].values()]
    error = _same_refusal(responses, *taken, *[t.id for t in elsewhere["threads"].values()])
    assert error["details"] == {"field": "events"}
    assert not Event.objects.filter(run=run).exists()


def test_a_thread_id_taken_elsewhere_has_one_answer(elsewhere: dict[str, Any]) -> None:
    client = elsewhere["client"]

    def send(elsewhere: dict[str, Any], where: str) -> Any:
        thread = elsewhere["threads"][where]
        return client.post("/threads", {"id": thread.id, "title": "mine"})

    responses = _answers(elsewhere, send)
    # The id sent is said back, as sent; nothing else.
    assert [error_of(r)["message"] for r in responses] == [
        "this thread id cannot be used: choose another"
    ] * 2
    assert Thread.objects.filter(title="mine").count() == 0


def test_a_message_id_taken_in_the_same_thread_is_still_named(elsewhere: dict[str, Any]) -> None:
    client, own = elsewhere["client"], elsewhere["own"]
    taken = last_message(ask(own, "mine")).id
    run = make_run(own, commit=False)
    event = {"role": "user", "parts": [], "id": taken}
    response = client.post(
        f"/runs/{run.id}/events", {"events": [{"seq": 1, "kind": "message", "data": event}]}
    )
    assert response.status_code == 409
    assert error_of(response)["details"] == {"messageIds": [taken]}
    assert Message.objects.filter(pk=taken).count() == 1


def test_a_free_id_is_taken_as_asked(elsewhere: dict[str, Any]) -> None:
    client, own = elsewhere["client"], elsewhere["own"]
    wanted = new_ulid()
    response = client.post(f"/threads/{own.id}/runs", {"id": wanted})
    assert response.status_code == 201, response.content
    assert response.json()["id"] == wanted
