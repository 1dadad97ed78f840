"""The queues API (issue 28): POST /queues (admin scope), POST /queues/{id}/items (admin
scope), GET /queues/{id} (read scope; progress), POST /queues/{id}/next (the token claims,
204 when empty); another project's queue is a 404; refusals store nothing."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.api.conftest import ApiClient
from tests.base import Team
from tests.factories import ask, make_thread, say
from transcripts.ledger import queues, scores
from transcripts.ledger.scores import Author, ConfigSpec
from transcripts.models import AnnotationQueue, Message, QueueItem, QueueReview, Score, Thread

pytestmark = pytest.mark.django_db


def _answered(team: Team, title: str) -> Thread:
    thread = make_thread(title, project=team.alpha)
    ask(thread, f"Question {title}?")
    say(thread, f"Answer {title}.")
    return thread


@pytest.fixture
def alpha(team: Team) -> Team:
    """Alpha with a helpfulness config."""
    scores.create_score_config(
        project=team.alpha,
        author=Author(user=team.owner),
        spec=ConfigSpec(name="helpfulness", data_type="numeric", min_value=1, max_value=5),
    )
    return team


def _create(client: ApiClient, **body: object) -> object:
    payload: dict[str, object] = {"name": "API queue", "scoreConfigs": ["helpfulness"]}
    payload.update(body)
    return client.post("/queues", payload)


def test_an_admin_token_makes_a_queue_and_a_reader_claims_from_it(alpha: Team) -> None:
    team = alpha
    a, b = _answered(team, "a"), _answered(team, "b")
    admin = ApiClient(team.token(team.alpha, "admin"))
    made = _create(admin, threadIds=[a.id], filter="q=b")
    assert made.status_code == 201, made.content  # type: ignore[attr-defined]
    body = made.json()  # type: ignore[attr-defined]
    assert body["items"] == {"added": 2, "matched": 2, "capped": False, "text": "2 items added"}
    assert body["progress"]["text"] == "0 of 2 done"
    queue_id = body["id"]

    reader = ApiClient(team.token(team.alpha, "read"))
    assert reader.get(f"/queues/{queue_id}").json()["progress"]["total"] == 2
    first = reader.post(f"/queues/{queue_id}/next")
    assert first.status_code == 200
    claim = first.json()
    assert claim["threadId"] in {a.id, b.id}
    answer = Message.objects.get(thread_id=claim["threadId"], role="assistant")
    assert claim["messageId"] == answer.id and claim["scoreConfigs"] == ["helpfulness"]
    # The same token is given the item it holds; another token the other item; then none.
    assert reader.post(f"/queues/{queue_id}/next").json()["itemId"] == claim["itemId"]
    other = ApiClient(team.token(team.alpha, "read"))
    assert other.post(f"/queues/{queue_id}/next").json()["itemId"] != claim["itemId"]
    third = ApiClient(team.token(team.alpha, "read", "ingest"))
    assert third.post(f"/queues/{queue_id}/next").status_code == 204
    assert QueueReview.objects.filter(token__isnull=False).count() == 2
    progress = reader.get(f"/queues/{queue_id}").json()["progress"]
    assert (progress["inReview"], progress["open"]) == (2, 2)


def test_items_are_added_to_a_queue(alpha: Team) -> None:
    team = alpha
    a, b = _answered(team, "a"), _answered(team, "b")
    admin = ApiClient(team.token(team.alpha, "admin"))
    queue_id = _create(admin, threadIds=[a.id]).json()["id"]  # type: ignore[attr-defined]
    answer = Message.objects.get(thread=b, role="assistant")
    added = admin.post(
        f"/queues/{queue_id}/items", {"messageIds": [answer.id], "threadIds": [a.id]}
    )
    assert added.status_code == 200
    assert added.json()["added"] == 1 and "1 already in the queue" in added.json()["text"]
    assert QueueItem.objects.count() == 2


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"scoreConfigs": ["nothing"]}, "scoreConfigs"),
        ({"scoreConfigs": []}, "scoreConfigs"),
        ({"reviewsPerItem": 0}, "reviewsPerItem"),
        ({"name": ""}, "name"),
        ({"threadIds": ["01ARZ3NDEKTSV4RRFFQ69G5FAV"]}, "threadIds"),
        ({"filter": "since=never"}, "filter"),
    ],
)
def test_a_bad_queue_is_a_422_naming_the_field_and_stores_nothing(
    alpha: Team, body: dict[str, object], field: str
) -> None:
    admin = ApiClient(alpha.token(alpha.alpha, "admin"))
    refused = _create(admin, **body)
    assert refused.status_code == 422, refused.content  # type: ignore[attr-defined]
    assert field in refused.content.decode()  # type: ignore[attr-defined]
    assert not AnnotationQueue.objects.exists()


def test_the_role_table(alpha: Team) -> None:
    team = alpha
    mine = _answered(team, "a")
    theirs = make_thread("theirs", project=team.beta)
    admin = ApiClient(team.token(team.alpha, "admin"))
    queue_id = _create(admin, threadIds=[mine.id]).json()["id"]  # type: ignore[attr-defined]
    # Tokens without the admin scope make no queue and add no items.
    for scopes in (("read",), ("ingest",), ("ingest", "read")):
        client = ApiClient(team.token(team.alpha, *scopes))
        assert _create(client, threadIds=[mine.id]).status_code == 403  # type: ignore[attr-defined]
        assert client.post(f"/queues/{queue_id}/items", {"threadIds": [mine.id]}).status_code == 403
    ingest_only = ApiClient(team.token(team.alpha, "ingest"))
    assert ingest_only.get(f"/queues/{queue_id}").status_code == 403
    assert ingest_only.post(f"/queues/{queue_id}/next").status_code == 403
    # Another project's token finds nothing, whatever its scopes; nor do its threads go in.
    beta = ApiClient(team.token(team.beta, "admin"))
    for answer in (
        beta.get(f"/queues/{queue_id}"),
        beta.post(f"/queues/{queue_id}/next"),
        beta.post(f"/queues/{queue_id}/items", {"threadIds": [theirs.id]}),
        beta.get("/queues/999999999999"),
        beta.get(f"/queues/{2**70}"),
    ):
        assert answer.status_code == 404
    refused = admin.post(f"/queues/{queue_id}/items", {"threadIds": [theirs.id]})
    assert refused.status_code == 422 and QueueItem.objects.count() == 1
    # A browser session reads a queue of its project (a member), never writes.
    viewer = ApiClient(client=team.client(team.viewer))
    assert viewer.get(f"/queues/{queue_id}").status_code == 200
    assert viewer.post(f"/queues/{queue_id}/next").status_code == 403
    outsider = ApiClient(client=team.client(team.outsider))
    assert outsider.get(f"/queues/{queue_id}").status_code == 404
    assert ApiClient(client=Client()).get(f"/queues/{queue_id}").status_code == 401
    assert not QueueReview.objects.exists()


def test_a_closed_queue_gives_no_item(alpha: Team) -> None:
    admin = ApiClient(alpha.token(alpha.alpha, "admin"))
    queue_id = _create(admin, threadIds=[_answered(alpha, "a").id]).json()["id"]  # type: ignore[attr-defined]
    queues.close_queue(queue=AnnotationQueue.objects.get(), author=Author(user=alpha.owner))
    assert admin.post(f"/queues/{queue_id}/next").status_code == 409
    assert admin.get(f"/queues/{queue_id}").json()["closedAt"] is not None


def test_a_token_reviews_the_item_it_claimed(alpha: Team) -> None:
    team = alpha
    a, b = _answered(team, "a"), _answered(team, "b")
    admin = ApiClient(team.token(team.alpha, "admin"))
    queue_id = _create(admin, threadIds=[a.id, b.id]).json()["id"]  # type: ignore[attr-defined]
    reader = ApiClient(team.token(team.alpha, "read"))
    claim = reader.post(f"/queues/{queue_id}/next").json()
    url = f"/queues/{queue_id}/items/{claim['itemId']}/review"

    refused = reader.post(url, {"scores": {"helpfulness": 9}})
    assert refused.status_code == 422 and "helpfulness" in refused.content.decode()
    assert not Score.objects.exists()
    other = ApiClient(team.token(team.alpha, "read"))
    assert other.post(url, {"scores": {"helpfulness": 3}}).status_code == 409

    done = reader.post(url, {"scores": {"helpfulness": 4}, "comment": "fine"})
    assert done.status_code == 200
    assert done.json() == {"itemId": claim["itemId"], "state": "done", "doneCount": 1}
    score = Score.objects.get()
    assert (score.value, score.source, score.message_id, score.comment) == (
        4.0, "api", claim["messageId"], "fine"
    )  # fmt: skip
    assert score.token_id is not None and score.author is None
    # The next item, skipped: nothing is left for this token.
    nxt = reader.post(f"/queues/{queue_id}/next").json()
    skipped = reader.post(f"/queues/{queue_id}/items/{nxt['itemId']}/review", {"skip": True})
    assert skipped.status_code == 200 and skipped.json()["state"] == "open"
    assert reader.post(f"/queues/{queue_id}/next").status_code == 204
    assert admin.get(f"/queues/{queue_id}").json()["progress"]["text"] == "1 of 2 done"


def test_ids_past_any_row_are_404s(alpha: Team) -> None:
    admin = ApiClient(alpha.token(alpha.alpha, "admin"))
    queue_id = _create(admin, threadIds=[_answered(alpha, "a").id]).json()["id"]  # type: ignore[attr-defined]
    huge = 10**30
    assert admin.post(f"/queues/{queue_id}/items/{huge}/review", {"skip": True}).status_code == 404
    assert admin.post(f"/queues/{huge}/next").status_code == 404
