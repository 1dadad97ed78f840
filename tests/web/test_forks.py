"""New thread from here, in the pages: the menu offers it to editors, the POST opens the new
thread, whose header names its source; the source lists the threads started from a message."""

from __future__ import annotations

import pytest

from tests.base import Team
from tests.ledger.test_shares import Branched, branched_thread
from transcripts.models import Thread

pytestmark = pytest.mark.django_db

MENU_ITEM = "New thread from here"


@pytest.fixture
def branched(team: Team) -> Branched:
    return branched_thread(team.alpha)


def test_editors_see_the_menu_item_and_viewers_do_not(team: Team, branched: Branched) -> None:
    url = f"/t/{branched.thread.id}/"

    editor_page = team.client(team.editor).get(url).content.decode()
    viewer_page = team.client(team.viewer).get(url).content.decode()

    assert MENU_ITEM in editor_page
    assert f'action="/t/{branched.thread.id}/m/{branched.second.id}/fork/"' in editor_page
    assert MENU_ITEM not in viewer_page


def test_the_post_opens_the_new_thread_which_names_its_source(
    team: Team, branched: Branched
) -> None:
    client = team.client(team.editor)

    response = client.post(f"/t/{branched.thread.id}/m/{branched.first.id}/fork/", follow=True)

    fork = Thread.objects.exclude(pk=branched.thread.pk).get()
    assert response.redirect_chain == [(f"/t/{fork.id}/", 302)]
    page = response.content.decode()
    assert "New thread started" in page
    assert "Marseille, said the first answer" in page
    assert "Paris, said the second answer" not in page
    source_link = f'href="/t/{branched.thread.id}/?leaf={branched.first.id}#m-{branched.first.id}"'
    assert source_link in page and "message 2</p>" in page
    source = client.get(f"/t/{branched.thread.id}/?leaf={branched.first.id}").content.decode()
    assert "1 thread started from here" in source
    assert f'href="/t/{fork.id}/"' in source


def test_a_source_out_of_reach_is_named_without_a_link(team: Team, branched: Branched) -> None:
    team.client(team.editor).post(f"/t/{branched.thread.id}/m/{branched.second.id}/fork/")
    fork = Thread.objects.exclude(pk=branched.thread.pk).get()
    Thread.objects.filter(pk=branched.thread.pk).update(hidden=True)

    page = team.client(team.editor).get(f"/t/{fork.id}/").content.decode()

    assert "(no longer available)" in page
    assert f"/t/{branched.thread.id}/" not in page


def test_a_hidden_thread_is_not_forked_from_the_page(team: Team, branched: Branched) -> None:
    Thread.objects.filter(pk=branched.thread.pk).update(hidden=True)
    client = team.client(team.moderator)

    page = client.get(f"/t/{branched.thread.id}/").content.decode()
    response = client.post(f"/t/{branched.thread.id}/m/{branched.second.id}/fork/")

    assert MENU_ITEM not in page
    assert response.status_code == 409
    assert Thread.objects.count() == 1


def test_a_get_is_refused(team: Team, branched: Branched) -> None:
    response = team.client(team.editor).get(f"/t/{branched.thread.id}/m/{branched.second.id}/fork/")

    assert response.status_code == 405
    assert Thread.objects.count() == 1


def test_the_header_names_the_source_by_its_title_now(team: Team, branched: Branched) -> None:
    team.client(team.editor).post(f"/t/{branched.thread.id}/m/{branched.second.id}/fork/")
    fork = Thread.objects.exclude(pk=branched.thread.pk).get()
    Thread.objects.filter(pk=branched.thread.pk).update(title="Renamed")

    page = team.client(team.viewer).get(f"/t/{fork.id}/").content.decode()

    assert ">Renamed</a>, message 2</p>" in page
