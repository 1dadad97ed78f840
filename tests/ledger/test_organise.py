"""The ledger's organising writes: each change audited, a no-op writes nothing, roles checked
before anything changes, a deletion takes the thread's pins."""

from __future__ import annotations

import pytest

from tests.base import Team
from tests.factories import ask, make_thread
from transcripts.errors import InvalidInput, PermissionDenied
from transcripts.ledger import organise
from transcripts.models import AuditRecord, Tag, Thread, ThreadPin

pytestmark = pytest.mark.django_db


def test_an_unchanged_thread_writes_nothing(team: Team) -> None:
    thread = make_thread("Same", project=team.alpha, metadata={"tags": ["a"]})
    change = organise.ThreadChange(title="Same", tags=["a"], archived=False)

    assert organise.update_thread(thread=thread, user=team.editor, change=change) is False
    assert not AuditRecord.objects.exists()


def test_tags_are_cleaned_deduplicated_and_join_the_vocabulary(team: Team) -> None:
    thread = make_thread("T", project=team.alpha, metadata={"other": 1})
    change = organise.ThreadChange(tags=["  eval  run ", "eval run", "b"])

    organise.update_thread(thread=thread, user=team.editor, change=change)

    thread.refresh_from_db()
    assert thread.metadata == {"other": 1, "tags": ["eval run", "b"]}
    assert set(Tag.objects.filter(project=team.alpha).values_list("name", flat=True)) == {
        "eval run",
        "b",
    }
    record = AuditRecord.objects.get(action="retag")
    assert record.details["new"] == ["eval run", "b"] and record.actor == team.editor


def test_a_viewer_may_pin_but_not_rename(team: Team) -> None:
    thread = make_thread("T", project=team.alpha)

    assert organise.set_pinned(thread=thread, user=team.viewer, pinned=True) is True
    assert organise.set_pinned(thread=thread, user=team.viewer, pinned=True) is False
    with pytest.raises(PermissionDenied):
        organise.update_thread(
            thread=thread, user=team.viewer, change=organise.ThreadChange(title="No")
        )
    assert list(AuditRecord.objects.values_list("action", flat=True)) == ["pin"]


def test_a_bulk_action_checks_every_thread_before_changing_any(team: Team) -> None:
    mine = make_thread("mine", project=team.alpha)
    theirs = make_thread("theirs", project=team.beta)

    with pytest.raises(PermissionDenied):
        organise.organise_many(threads=[mine, theirs], user=team.editor, action="archive")
    with pytest.raises(InvalidInput):
        organise.organise_many(threads=[mine], user=team.editor, action="untag", tag="none")

    assert not Thread.objects.filter(archived=True).exists()
    assert not AuditRecord.objects.exists()


def test_deleting_takes_the_pins_and_records_what_went(team: Team) -> None:
    thread = make_thread("Doomed", project=team.alpha)
    ask(thread, "hi")
    organise.set_pinned(thread=thread, user=team.viewer, pinned=True)

    deleted = organise.delete_thread(thread=thread, user=team.owner)

    assert deleted.messages == 1 and not ThreadPin.objects.exists()
    record = AuditRecord.objects.get(action="delete")
    assert record.project_id == team.alpha.pk and record.details["title"] == "Doomed"


def test_a_new_threads_metadata_tags_join_the_vocabulary(team: Team) -> None:
    make_thread("T", project=team.alpha, metadata={"tags": ["demo", "", 3, "x" * 41, "demo"]})

    assert list(Tag.objects.filter(project=team.alpha).values_list("name", flat=True)) == ["demo"]
