"""Annotation queues in the ledger (issue 28): made from ids or a thread-list filter (capped),
claimed under a 15-minute lease (never the same item to two reviewers unless the queue wants N
reviews; a lease that runs out returns the item; two real connections claiming at once),
submitted as person scores, skipped, closed, counted, and refused with nothing stored."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.base import Team, make_user
from tests.factories import ask, make_thread, say
from tests.ledger.test_concurrency import in_threads
from transcripts.errors import Conflict, InvalidInput, PermissionDenied
from transcripts.ledger import moderation, queues, scores
from transcripts.ledger.deletion import delete_threads
from transcripts.ledger.projects import set_member
from transcripts.ledger.queues import ItemSource, QueueSpec
from transcripts.ledger.scores import Author, ConfigSpec
from transcripts.models import (
    AnnotationQueue,
    AuditRecord,
    Message,
    Project,
    QueueItem,
    QueueReview,
    Score,
    Thread,
)
from transcripts.selectors.queues import parse_thread_filter, progress

pytestmark = pytest.mark.django_db


def _answered(project: Project, title: str) -> Thread:
    thread = make_thread(title, project=project)
    ask(thread, f"Question of {title}?")
    say(thread, f"Answer of {title}.")
    return thread


def _configs(team: Team) -> None:
    owner = Author(user=team.owner)
    for spec in (
        ConfigSpec(name="helpfulness", data_type="numeric", min_value=1, max_value=5),
        ConfigSpec(name="policy", data_type="boolean"),
        ConfigSpec(name="tone", data_type="categorical", labels=("dry", "warm")),
    ):
        scores.create_score_config(project=team.alpha, author=owner, spec=spec)


def _queue(team: Team, threads: list[Thread], **spec: object) -> AnnotationQueue:
    _configs(team)
    fields: dict[str, object] = {"name": "Weekly", "config_names": ("helpfulness", "policy")}
    fields.update(spec)
    queue, _ = queues.create_queue(
        project=team.alpha,
        author=Author(user=team.moderator),
        spec=QueueSpec(**fields),  # type: ignore[arg-type]
        source=ItemSource(thread_ids=tuple(t.id for t in threads)),
    )
    return queue


def _held_thread(review: QueueReview | None) -> str:
    assert review is not None
    return str(review.item.thread_id)


def test_a_queue_from_ids_judges_each_threads_last_answer(team: Team) -> None:
    a, b = _answered(team.alpha, "a"), _answered(team.alpha, "b")
    empty = make_thread("empty", project=team.alpha)
    queue = _queue(team, [a, b, empty, a])

    items = {str(i.thread_id): i.message_id for i in QueueItem.objects.filter(queue=queue)}
    assert items == {
        a.id: Message.objects.get(thread=a, role="assistant").id,
        b.id: Message.objects.get(thread=b, role="assistant").id,
        empty.id: None,
    }
    assert progress(queue, timezone.now()).text == "0 of 3 done"
    assert AuditRecord.objects.get(action="create_queue").details["items"] == 3


def test_a_queue_from_a_filter_takes_the_matching_threads_capped(
    team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    _configs(team)
    for n in range(3):
        _answered(team.alpha, f"weather {n}")
    _answered(team.alpha, "cooking")
    _answered(team.beta, "weather elsewhere")
    monkeypatch.setattr(queues, "MAX_ITEMS", 2)
    queue, added = queues.create_queue(
        project=team.alpha,
        author=Author(user=team.owner),
        spec=QueueSpec(name="Weather", config_names=("helpfulness",)),
        source=ItemSource(filter="/?q=weather&sort=title"),
    )
    assert (added.added, added.capped) == (2, True)
    assert "the first 2 of the matching threads" in added.text
    titles = set(QueueItem.objects.filter(queue=queue).values_list("thread__title", flat=True))
    assert len(titles) == 2 and all(t.startswith("weather ") for t in titles)
    assert queue.source_filter == "/?q=weather&sort=title"


def test_a_bad_filter_is_refused_naming_it() -> None:
    with pytest.raises(InvalidInput) as refused:
        parse_thread_filter("since=yesterday")
    assert refused.value.details["field"] == "filter"
    assert parse_thread_filter("q=rain+archived:yes&branches=1").archived is True


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"name": " "}, "name"),
        ({"config_names": ("nothing",)}, "scoreConfigs"),
        ({"config_names": ()}, "scoreConfigs"),
        ({"reviews_per_item": 0}, "reviewsPerItem"),
        ({"member_ids": (10**9,)}, "members"),
    ],
)
def test_a_bad_queue_is_refused_and_nothing_is_stored(
    team: Team, spec: dict[str, object], field: str
) -> None:
    thread = _answered(team.alpha, "a")
    with pytest.raises(InvalidInput) as refused:
        _queue(team, [thread], **spec)
    assert refused.value.details["field"] == field
    assert not AnnotationQueue.objects.exists() and not QueueItem.objects.exists()


def test_items_from_another_project_are_refused(team: Team) -> None:
    elsewhere = _answered(team.beta, "theirs")
    with pytest.raises(InvalidInput) as refused:
        _queue(team, [elsewhere])
    assert refused.value.details["field"] == "threadIds"
    assert not AnnotationQueue.objects.exists()


def test_only_moderators_and_admins_make_queues(team: Team) -> None:
    _configs(team)
    for user in (team.viewer, team.editor, team.outsider):
        with pytest.raises(PermissionDenied):
            queues.create_queue(
                project=team.alpha,
                author=Author(user=user),
                spec=QueueSpec(name="Mine", config_names=("helpfulness",)),
                source=ItemSource(),
            )
    assert not AnnotationQueue.objects.exists()


def test_two_reviewers_get_different_items_and_a_lease_that_runs_out_returns_one(
    team: Team,
) -> None:
    a, b = _answered(team.alpha, "a"), _answered(team.alpha, "b")
    queue = _queue(team, [a, b])
    editor, owner = Author(user=team.editor), Author(user=team.owner)

    first = queues.claim_next(queue=queue, author=editor)
    second = queues.claim_next(queue=queue, author=owner)
    assert {_held_thread(first), _held_thread(second)} == {a.id, b.id}
    # Claiming again gives the item held, its lease renewed; nothing else is free.
    assert _held_thread(queues.claim_next(queue=queue, author=editor)) == _held_thread(first)
    assert queues.claim_next(queue=queue, author=Author(user=team.moderator)) is None
    assert progress(queue, timezone.now()).in_review == 2

    QueueReview.objects.filter(reviewer=team.editor).update(
        leased_until=timezone.now() - timedelta(seconds=1)
    )
    taken = queues.claim_next(queue=queue, author=Author(user=team.moderator))
    assert _held_thread(taken) == _held_thread(first)
    assert timedelta(minutes=15) == queues.LEASE
    assert second is not None
    assert timedelta(minutes=14) < second.leased_until - timezone.now() <= queues.LEASE


def test_submit_writes_person_scores_and_a_done_item_leaves_the_queue(team: Team) -> None:
    a, b = _answered(team.alpha, "a"), _answered(team.alpha, "b")
    queue = _queue(team, [a, b])
    editor = Author(user=team.editor)
    review = queues.claim_next(queue=queue, author=editor)
    assert review is not None

    item = queues.submit_review(
        queue=queue,
        item_id=review.item.pk,
        author=editor,
        answers={"helpfulness": "4", "policy": "y"},
        comment="clear",
    )
    assert (item.state, item.done_count) == ("done", 1)
    rows = Score.objects.filter(thread_id=item.thread_id).order_by("name")
    assert [
        (s.name, s.value, s.label, s.source, s.author, s.message_id, s.comment) for s in rows
    ] == [
        ("helpfulness", 4.0, "", "person", team.editor, item.message_id, "clear"),
        ("policy", 1.0, "true", "person", team.editor, item.message_id, "clear"),
    ]
    assert progress(queue, timezone.now()).text == "1 of 2 done"
    # The done item is never offered again, to anyone.
    nxt = queues.claim_next(queue=queue, author=Author(user=team.owner))
    assert _held_thread(nxt) == str(QueueItem.objects.get(queue=queue, state="open").thread_id)
    assert queues.claim_next(queue=queue, author=editor) is None
    actions = set(AuditRecord.objects.values_list("action", flat=True))
    assert {"create_queue", "claim_queue_item", "review_queue_item", "add_score"} <= actions


@pytest.mark.parametrize(
    ("answers", "field"),
    [
        ({"helpfulness": "7", "policy": "y"}, "helpfulness"),
        ({"helpfulness": "four", "policy": "y"}, "helpfulness"),
        ({"helpfulness": "3", "policy": "maybe"}, "policy"),
        ({"helpfulness": "3"}, "policy"),
    ],
)
def test_a_bad_review_is_refused_and_nothing_is_stored(
    team: Team, answers: dict[str, str], field: str
) -> None:
    queue = _queue(team, [_answered(team.alpha, "a")])
    editor = Author(user=team.editor)
    review = queues.claim_next(queue=queue, author=editor)
    assert review is not None
    with pytest.raises(InvalidInput) as refused:
        queues.submit_review(queue=queue, item_id=review.item.pk, author=editor, answers=answers)
    assert refused.value.details["field"] == field
    assert not Score.objects.exists()
    review.refresh_from_db()
    assert review.completed_at is None
    assert QueueItem.objects.get().done_count == 0


def test_a_queue_wanting_two_reviews_gives_each_item_to_two_reviewers(team: Team) -> None:
    a = _answered(team.alpha, "a")
    queue = _queue(team, [a], reviews_per_item=2)
    editor, owner = Author(user=team.editor), Author(user=team.owner)
    assert _held_thread(queues.claim_next(queue=queue, author=editor)) == a.id
    assert _held_thread(queues.claim_next(queue=queue, author=owner)) == a.id
    assert queues.claim_next(queue=queue, author=Author(user=team.moderator)) is None

    item = QueueItem.objects.get()
    answers = {"helpfulness": "5", "policy": "n"}
    queues.submit_review(queue=queue, item_id=item.pk, author=editor, answers=answers)
    item.refresh_from_db()
    assert (item.state, item.done_count) == ("open", 1)
    queues.submit_review(queue=queue, item_id=item.pk, author=owner, answers=answers)
    item.refresh_from_db()
    assert (item.state, item.done_count) == ("done", 2)
    assert Score.objects.filter(name="helpfulness").count() == 2


def test_a_skipped_item_goes_to_the_others_not_back_to_its_skipper(team: Team) -> None:
    a = _answered(team.alpha, "a")
    queue = _queue(team, [a])
    editor = Author(user=team.editor)
    review = queues.claim_next(queue=queue, author=editor)
    assert review is not None
    queues.skip_item(queue=queue, item_id=review.item.pk, author=editor)
    assert queues.claim_next(queue=queue, author=editor) is None
    assert _held_thread(queues.claim_next(queue=queue, author=Author(user=team.owner))) == a.id
    with pytest.raises(Conflict):
        queues.submit_review(
            queue=queue, item_id=review.item.pk, author=editor, answers={"policy": "y"}
        )


def test_assigned_members_review_and_others_may_not(team: Team) -> None:
    queue = _queue(team, [_answered(team.alpha, "a")], member_ids=(team.viewer.pk,))
    assert queues.claim_next(queue=queue, author=Author(user=team.viewer)) is not None
    for user in (team.editor, team.outsider):
        with pytest.raises(PermissionDenied):
            queues.claim_next(queue=queue, author=Author(user=user))
    open_queue = _queue_without_members(team)
    with pytest.raises(PermissionDenied):
        queues.claim_next(queue=open_queue, author=Author(user=team.viewer))


def _queue_without_members(team: Team) -> AnnotationQueue:
    queue, _ = queues.create_queue(
        project=team.alpha,
        author=Author(user=team.owner),
        spec=QueueSpec(name="Anyone", config_names=("helpfulness",)),
        source=ItemSource(thread_ids=(_answered(team.alpha, "b").id,)),
    )
    return queue


def test_a_closed_queue_gives_nothing_and_takes_no_items(team: Team) -> None:
    queue = _queue(team, [_answered(team.alpha, "a")])
    queues.close_queue(queue=queue, author=Author(user=team.moderator))
    with pytest.raises(Conflict):
        queues.claim_next(queue=queue, author=Author(user=team.editor))
    with pytest.raises(Conflict):
        queues.add_items(
            queue=queue,
            author=Author(user=team.owner),
            source=ItemSource(thread_ids=(_answered(team.alpha, "b").id,)),
        )
    assert QueueItem.objects.count() == 1


def test_deleting_a_thread_deletes_its_items_and_reviews(team: Team) -> None:
    a, b = _answered(team.alpha, "a"), _answered(team.alpha, "b")
    queue = _queue(team, [a, b])
    queues.claim_next(queue=queue, author=Author(user=team.editor))
    queues.claim_next(queue=queue, author=Author(user=team.owner))
    delete_threads([a.id])
    assert list(QueueItem.objects.values_list("thread_id", flat=True)) == [b.id]
    assert QueueReview.objects.count() == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("wanted", [1, 2])
def test_reviewers_claiming_at_once_never_share_more_than_the_queue_wants(
    team: Team, wanted: int
) -> None:
    threads = [_answered(team.alpha, f"t{n}") for n in range(3)]
    queue = _queue(team, threads, reviews_per_item=wanted)
    reviewers = [make_user(f"reviewer{n}") for n in range(6)]
    for user in reviewers:
        set_member(project=team.alpha, user=user, role="editor")

    def claim(index: int) -> str | None:
        review = queues.claim_next(queue=queue, author=Author(user=reviewers[index]))
        return None if review is None else str(review.item.thread_id)

    held = in_threads(len(reviewers), claim)
    taken = [t for t in held if t is not None]
    assert len(taken) == min(len(reviewers), 3 * wanted)
    assert all(taken.count(t) == wanted for t in set(taken))
    assert set(taken) == {t.id for t in threads}


def test_a_hidden_threads_item_goes_only_to_those_who_see_hidden_threads(team: Team) -> None:
    hidden, visible = _answered(team.alpha, "hidden"), _answered(team.alpha, "visible")
    queue = _queue(team, [hidden, visible])
    moderation.hide_thread(user=team.moderator, thread=hidden, reason="check")
    # The editor is passed the (older) hidden item; the admin gets it.
    assert _held_thread(queues.claim_next(queue=queue, author=Author(user=team.editor))) == (
        visible.id
    )
    assert _held_thread(queues.claim_next(queue=queue, author=Author(user=team.owner))) == (
        hidden.id
    )


@pytest.mark.django_db(transaction=True)
def test_reviewers_working_through_a_queue_at_once_give_each_item_its_reviews(
    team: Team,
) -> None:
    threads = [_answered(team.alpha, f"t{n}") for n in range(6)]
    queue = _queue(team, threads, reviews_per_item=2)
    reviewers = [make_user(f"worker{n}") for n in range(4)]
    for user in reviewers:
        set_member(project=team.alpha, user=user, role="editor")

    def work(index: int) -> int:
        author = Author(user=reviewers[index])
        done = 0
        while (review := queues.claim_next(queue=queue, author=author)) is not None:
            answers = {"helpfulness": str(1 + index), "policy": "y"}
            queues.submit_review(
                queue=queue, item_id=review.item.pk, author=author, answers=answers
            )
            done += 1
        return done

    assert sum(in_threads(len(reviewers), work)) == 12
    assert set(QueueItem.objects.values_list("state", "done_count")) == {("done", 2)}
    per_item = Score.objects.filter(name="helpfulness").values_list("thread_id", "author_id")
    assert len(per_item) == 12 and len(set(per_item)) == 12
