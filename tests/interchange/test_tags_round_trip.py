"""A thread's tags and archived flag through a canonical export and back: tags stay (they are
metadata.tags) and join the importing project's tag vocabulary; an import is a new thread, so it
is not archived."""

from __future__ import annotations

import json

import pytest

from tests.base import Team
from tests.factories import ask, make_thread
from transcripts import interchange
from transcripts.ledger.organise import ThreadChange, update_thread
from transcripts.models import Tag, Thread

pytestmark = pytest.mark.django_db


def test_an_export_keeps_the_tags(team: Team) -> None:
    thread = make_thread("Tagged", project=team.alpha)
    ask(thread, "hello")
    change = ThreadChange(tags=["eval", "regression"], archived=True)
    update_thread(thread=thread, user=team.editor, change=change)

    assert not Tag.objects.filter(project=team.beta).exists()

    exported = interchange.export_thread(Thread.objects.get(pk=thread.id), "canonical")
    result = interchange.import_data(json.loads(exported.content), "canonical", project=team.beta)

    (copy_id,) = result.thread_ids
    copy = Thread.objects.get(pk=copy_id)
    assert copy.tag_names == ["eval", "regression"]
    assert copy.archived is False
    # The tags join beta's vocabulary (its tag filter and menus offer them), once each.
    assert list(Tag.objects.filter(project=team.beta).values_list("name", flat=True)) == [
        "eval",
        "regression",
    ]
    interchange.import_data(json.loads(exported.content), "canonical", project=team.beta)
    assert Tag.objects.filter(project=team.beta).count() == 2
