"""The queue pages (issue 28): the list with its progress, the create form (moderators and
admins), a queue's page and its close button, and the review page's plain forms (claim,
submit, skip) without JavaScript; the role table (outsider 404, too low a role 403, the
assigned reviewer reviews, a member not assigned 403); refusals change nothing."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User

from tests.base import Team
from tests.factories import ask, make_thread, say
from tests.test_reads_in_selectors import recording
from transcripts.ledger import queues, scores
from transcripts.ledger.queues import ItemSource, QueueSpec
from transcripts.ledger.scores import Author, ConfigSpec
from transcripts.models import (
    AnnotationQueue,
    Message,
    QueueItem,
    QueueReview,
    Score,
    ScoreConfig,
    Thread,
)

pytestmark = pytest.mark.django_db


def _answered(team: Team, title: str) -> Thread:
    thread = make_thread(title, project=team.alpha)
    ask(thread, f"Question {title}?")
    say(thread, f"Answer {title}.")
    return thread


def _configs(team: Team) -> list[ScoreConfig]:
    owner = Author(user=team.owner)
    return [
        scores.create_score_config(project=team.alpha, author=owner, spec=spec)
        for spec in (
            ConfigSpec(name="helpfulness", data_type="numeric", min_value=1, max_value=5),
            ConfigSpec(name="policy", data_type="boolean"),
        )
    ]


def _queue(team: Team, threads: list[Thread], members: tuple[User, ...] = ()) -> AnnotationQueue:
    if not ScoreConfig.objects.exists():
        _configs(team)
    queue, _ = queues.create_queue(
        project=team.alpha,
        author=Author(user=team.owner),
        spec=QueueSpec(
            name="Weekly",
            config_names=("helpfulness", "policy"),
            member_ids=tuple(m.pk for m in members),
        ),
        source=ItemSource(thread_ids=tuple(t.id for t in threads)),
    )
    return queue


def _review_url(queue: AnnotationQueue) -> str:
    return f"/p/alpha/queues/{queue.pk}/review/"


def test_a_moderator_creates_a_queue_from_a_filter_and_the_list_shows_its_progress(
    team: Team,
) -> None:
    configs = _configs(team)
    for n in range(3):
        _answered(team, f"refund {n}")
    _answered(team, "weather")
    client = team.client(team.moderator)
    answer = client.post(
        "/p/alpha/queues/",
        {
            "name": "Refunds",
            "configs": [str(configs[0].pk)],
            "members": [str(team.editor.pk)],
            "reviews_per_item": "1",
            "filter": "/?q=refund",
        },
    )
    assert answer.status_code == 303
    queue = AnnotationQueue.objects.get()
    assert answer["Location"] == f"/p/alpha/queues/{queue.pk}/"
    assert QueueItem.objects.filter(queue=queue).count() == 3
    page = client.get(answer["Location"]).content.decode()
    assert "3 items added" in page and "0 of 3 done" in page and "editor" in page
    listing = client.get("/p/alpha/queues/").content.decode()
    assert "Refunds" in listing and "<progress" in listing and "0 of 3 done" in listing


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"name": "", "configs": ["0"]}, "Name"),
        ({"filter": "", "ids": ""}, "Give a thread-list filter or some ids."),
        ({"filter": "?since=someday"}, "since must be a date"),
        ({"ids": "01ARZ3NDEKTSV4RRFFQ69G5FAV"}, "no message 01ARZ3NDEKTSV4RRFFQ69G5FAV"),
        ({"reviews_per_item": "0"}, "Reviews per item"),
    ],
)
def test_a_bad_queue_form_is_refused_saying_why_and_stores_nothing(
    team: Team, fields: dict[str, object], said: str
) -> None:
    configs = _configs(team)
    _answered(team, "a")
    form: dict[str, object] = {
        "name": "Q",
        "configs": [str(configs[0].pk)],
        "reviews_per_item": "1",
        "filter": "?q=a",
    }
    form.update(fields)
    answer = team.client(team.owner).post("/p/alpha/queues/", form)
    assert answer.status_code == 422
    assert said in answer.content.decode()
    assert not AnnotationQueue.objects.exists()


def test_the_role_table(team: Team) -> None:
    queue = _queue(team, [_answered(team, "a")], members=(team.editor,))
    base = f"/p/alpha/queues/{queue.pk}/"
    config = ScoreConfig.objects.get(name="helpfulness")
    create = {"name": "X", "configs": [str(config.pk)], "reviews_per_item": "1", "filter": "?"}
    for user in (team.outsider, team.stranger):
        client = team.client(user)
        for url in ("/p/alpha/queues/", base, base + "review/"):
            assert client.get(url).status_code == 404, (user, url)
        assert client.post("/p/alpha/queues/", create).status_code == 404
        assert client.post(base + "close/").status_code == 404
        assert client.post(base + "review/", {"action": "next"}).status_code == 404
    # Another project's queue does not exist in beta's address either.
    assert team.client(team.outsider).get(f"/p/beta/queues/{queue.pk}/").status_code == 404
    for user in (team.viewer, team.editor):
        client = team.client(user)
        assert client.get("/p/alpha/queues/").status_code == 200
        assert client.get(base).status_code == 200
        refused = client.post("/p/alpha/queues/", create)
        assert refused.status_code == 403 and "moderator" in refused.content.decode()
        assert client.post(base + "close/").status_code == 403
    # Assigned: the editor reviews; the owner (an admin, not assigned) and the viewer may not.
    assert team.client(team.editor).get(base + "review/").status_code == 200
    for user in (team.owner, team.viewer, team.moderator):
        refused = team.client(user).post(base + "review/", {"action": "next"})
        assert refused.status_code == 403, user
        assert "assigned" in refused.content.decode()
    assert not QueueReview.objects.exists()
    assert AnnotationQueue.objects.count() == 1 and AnnotationQueue.objects.get().closed_at is None
    assert team.client(team.moderator).post(base + "close/").status_code == 303
    assert AnnotationQueue.objects.get().closed_at is not None


def test_with_nobody_assigned_every_editor_reviews_and_a_viewer_may_not(team: Team) -> None:
    queue = _queue(team, [_answered(team, "a")])
    refused = team.client(team.viewer).post(_review_url(queue), {"action": "next"})
    assert refused.status_code == 403 and "editor" in refused.content.decode()
    assert team.client(team.editor).post(_review_url(queue), {"action": "next"}).status_code == 303
    assert QueueReview.objects.get().reviewer == team.editor


def test_review_without_javascript_claims_submits_skips_and_ends_empty(team: Team) -> None:
    a, b = _answered(team, "first"), _answered(team, "second")
    queue = _queue(team, [a, b])
    helpfulness, policy = ScoreConfig.objects.order_by("name")
    client = team.client(team.editor)
    url = _review_url(queue)

    start = client.get(url).content.decode()
    assert "Start reviewing" in start and "2 items to review" in start
    assert client.post(url, {"action": "next"})["Location"] == url
    page = client.get(url).content.decode()
    assert "Answer first." in page and "Question first?" in page
    assert f'name="score-{helpfulness.pk}"' in page and f'name="score-{policy.pk}"' in page
    item = re.search(r'name="item" value="(\d+)"', page)
    assert item is not None

    bad = client.post(
        url,
        {
            "action": "submit",
            "item": item[1],
            f"score-{helpfulness.pk}": "9",
            f"score-{policy.pk}": "yes",
        },
    )
    assert bad.status_code == 422
    assert "value must be from 1 to 5 for helpfulness" in bad.content.decode()
    assert 'value="9"' in bad.content.decode() and not Score.objects.exists()

    done = client.post(
        url,
        {
            "action": "submit",
            "item": item[1],
            f"score-{helpfulness.pk}": "4",
            f"score-{policy.pk}": "yes",
            "comment": "ok",
        },
    )
    assert done.status_code == 303 and done["Location"] == url
    answer = Message.objects.get(thread=a, role="assistant")
    rows = Score.objects.filter(message=answer).order_by("name")
    assert list(rows.values_list("name", "value", "source", "author")) == [
        ("helpfulness", 4.0, "person", team.editor.pk),
        ("policy", 1.0, "person", team.editor.pk),
    ]
    page = client.get(url).content.decode()
    assert "Answer second." in page and "1 of 2 done" in page
    item = re.search(r'name="item" value="(\d+)"', page)
    assert item is not None
    skipped = client.post(url, {"action": "skip", "item": item[1]})
    assert skipped["Location"] == url + "?empty=1"
    assert "Nothing left for you now." in client.get(skipped["Location"]).content.decode()
    # The owner (an admin) takes the skipped item and finishes the queue.
    owner = team.client(team.owner)
    owner.post(url, {"action": "next"})
    item = re.search(r'name="item" value="(\d+)"', owner.get(url).content.decode())
    assert item is not None
    owner.post(
        url,
        {
            "action": "submit",
            "item": item[1],
            f"score-{helpfulness.pk}": "2",
            f"score-{policy.pk}": "no",
        },
    )
    assert "Queue empty." in owner.get(url).content.decode()


def test_the_project_page_and_the_header_link_the_queues(team: Team) -> None:
    page = team.client(team.viewer).get("/p/alpha/").content.decode()
    assert 'href="/p/alpha/queues/"' in page


def test_the_queue_pages_read_only_through_selectors(team: Team) -> None:
    queue = _queue(team, [_answered(team, "a")])
    client = team.client(team.owner)
    client.post(_review_url(queue), {"action": "next"})
    base = f"/p/alpha/queues/{queue.pk}/"
    with recording() as recorder:
        for url in ("/p/alpha/queues/", base, base + "review/"):
            assert client.get(url).status_code == 200, url
    assert not recorder.offences, "\n".join(map(str, recorder.offences))


def test_ids_past_any_row_are_404s_not_errors(team: Team) -> None:
    queue = _queue(team, [_answered(team, "a")])
    client = team.client(team.owner)
    huge = 10**30
    assert client.get(f"/p/alpha/queues/{huge}/").status_code == 404
    assert client.post(f"/p/alpha/queues/{huge}/review/", {"action": "next"}).status_code == 404
    refused = client.post(_review_url(queue), {"action": "skip", "item": str(huge)})
    assert refused.status_code == 404
    assert client.post(_review_url(queue), {"action": "skip", "item": "x"}).status_code == 422
    assert client.post(_review_url(queue), {"action": "dance"}).status_code == 422


def test_a_link_may_fill_in_the_filter_of_the_create_form(team: Team) -> None:
    _configs(team)
    page = team.client(team.owner).get("/p/alpha/queues/", {"filter": "?q=refund&failed=1"})
    assert 'value="?q=refund&amp;failed=1"' in page.content.decode()


def test_the_thread_list_offers_its_filters_as_a_queue_to_moderators_only(team: Team) -> None:
    _configs(team)
    _answered(team, "Refund asked")
    query = {"since": "2000-01-01", "sort": "messages"}
    listing = team.client(team.owner).get("/", query).content.decode()
    link = re.search(r'href="(/p/alpha/queues/\?filter=[^"]*)">Review these in a queue', listing)
    assert link, listing
    # The list's filters go along (not its sort); the create form holds them.
    assert link.group(1).replace("&amp;", "&") == "/p/alpha/queues/?filter=since%3D2000-01-01"
    form = team.client(team.owner).get(link.group(1).replace("&amp;", "&")).content.decode()
    assert 'value="since=2000-01-01"' in form
    for member in (team.viewer, team.editor):
        assert "Review these in a queue" not in team.client(member).get("/", query).content.decode()
