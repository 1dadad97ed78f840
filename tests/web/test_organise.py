"""Organising threads in the pages: rename, archive, tags, pins, delete and bulk actions, the
list's archived and tag filters, and bad input refused with nothing changed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.base import Team
from tests.factories import ask, make_thread
from transcripts.models import AuditRecord, Tag, Thread, ThreadPin

pytestmark = pytest.mark.django_db


def _titles(team: Team, user: Any, **params: str) -> list[str]:
    """The titles the thread list shows user, in order."""
    page = team.client(user).get("/", params).content.decode()
    threads = Thread.objects.filter(project__slug="alpha")
    return sorted(
        (t.title for t in threads if f'href="/t/{t.id}/"' in page),
        key=lambda title: page.index(f">{title}<"),
    )


def test_archived_threads_leave_the_list_a_filter_and_search_find_them(team: Team) -> None:
    make_thread("kept", project=team.alpha)
    gone = make_thread("gone", project=team.alpha)
    client = team.client(team.editor)

    client.post(f"/t/{gone.id}/archive/", {"archived": "yes"})

    assert _titles(team, team.editor) == ["kept"]
    assert _titles(team, team.editor, archived="yes") == ["gone"]
    assert set(_titles(team, team.editor, archived="any")) == {"kept", "gone"}
    assert _titles(team, team.editor, q="archived:yes") == ["gone"]
    page = client.get(f"/t/{gone.id}/")
    assert page.status_code == 200 and "archived" in page.content.decode()
    assert AuditRecord.objects.filter(action="archive", target_id=gone.id).exists()


def test_rename_and_tags_show_in_the_list_and_header(team: Team) -> None:
    thread = make_thread("old title", project=team.alpha)
    client = team.client(team.editor)

    client.post(f"/t/{thread.id}/rename/", {"title": "new title"})
    client.post(f"/t/{thread.id}/tags/", {"add": "eval"})
    make_thread("untagged", project=team.alpha)

    assert _titles(team, team.editor, tag="eval") == ["new title"]
    header = client.get(f"/t/{thread.id}/").content.decode()
    assert 'href="/?tag=eval"' in header and "Remove tag eval" in header
    assert list(Tag.objects.filter(project=team.alpha).values_list("name", flat=True)) == ["eval"]
    client.post(f"/t/{thread.id}/tags/", {"remove": "eval"})
    thread.refresh_from_db()
    assert thread.tag_names == []


def test_pinned_threads_come_first_for_the_one_who_pinned(team: Team) -> None:
    older = make_thread("older", project=team.alpha)
    make_thread("newer", project=team.alpha)

    team.client(team.viewer).post(f"/t/{older.id}/pin/", {"pinned": "yes"})

    assert _titles(team, team.viewer) == ["older", "newer"]
    assert _titles(team, team.editor) == ["newer", "older"]


def test_a_bulk_archive_of_three_threads(team: Team) -> None:
    threads = [make_thread(f"t{i}", project=team.alpha) for i in range(4)]
    ids = [t.id for t in threads[:3]]

    response = team.client(team.editor).post(
        "/threads/bulk/", {"ids": ids, "action": "archive", "next": "/"}
    )

    assert response.status_code == 302
    assert set(Thread.objects.filter(archived=True).values_list("id", flat=True)) == set(ids)
    assert AuditRecord.objects.filter(action="archive").count() == 3


def test_a_bulk_delete_says_what_goes_then_deletes(team: Team) -> None:
    first, second = make_thread("a", project=team.alpha), make_thread("b", project=team.alpha)
    ask(first, "one")
    data = {"ids": [first.id, second.id], "action": "delete"}
    client = team.client(team.owner)

    page = client.post("/threads/bulk/", data).content.decode()

    assert "<strong>1</strong> message" in page and "<strong>1</strong> run" in page
    assert Thread.objects.count() == 2
    assert client.post("/threads/bulk/", {**data, "confirm": "on"}).status_code == 302
    assert Thread.objects.count() == 0
    assert AuditRecord.objects.filter(action="delete").count() == 2


def test_the_delete_page_counts_messages_runs_and_shares(team: Team) -> None:
    thread = make_thread("doomed", project=team.alpha)
    ask(thread, "one")

    page = team.client(team.owner).get(f"/t/{thread.id}/delete/").content.decode()

    assert "<strong>1</strong> message" in page and "<strong>0</strong> share links" in page
    assert 'method="post"' in page


@pytest.mark.parametrize(
    ("path", "data"),
    [
        ("rename", {"title": "x" * 300}),
        ("rename", {"title": "a\x00b"}),
        ("rename", {"title": ""}),
        ("rename", {"title": "   "}),
        ("tags", {"add": "x" * 41}),
        ("tags", {"add": "a\x00"}),
        ("tags", {"remove": "unknown"}),
        ("tags", {}),
        ("archive", {"archived": "maybe"}),
        ("pin", {}),
    ],
)
def test_bad_input_is_a_4xx_that_changes_nothing(team: Team, path: str, data: dict) -> None:
    thread = make_thread("Kept", project=team.alpha, metadata={"tags": ["keep"]})

    response = team.client(team.editor).post(f"/t/{thread.id}/{path}/", data)

    assert 400 <= response.status_code < 500
    thread.refresh_from_db()
    assert (thread.title, thread.tag_names, thread.archived) == ("Kept", ["keep"], False)
    assert not AuditRecord.objects.exists() and not ThreadPin.objects.exists()


@pytest.mark.parametrize(
    "data",
    [
        {"ids": [], "action": "archive"},
        {"ids": ["nope"], "action": "archive"},
        {"ids": ["01ARZ3NDEKTSV4RRFFQ69G5FAV"], "action": "archive"},
        {"action": "explode", "ids": []},
        {"action": "untag", "tag": "missing"},
        {"action": "tag", "tag": ""},
    ],
)
def test_bad_bulk_input_is_a_4xx_that_changes_nothing(team: Team, data: dict) -> None:
    thread = make_thread("Kept", project=team.alpha)
    data = {"ids": [thread.id], **data}

    response = team.client(team.editor).post("/threads/bulk/", data)

    assert 400 <= response.status_code < 500
    thread.refresh_from_db()
    assert (thread.tag_names, thread.archived) == ([], False)
    assert not AuditRecord.objects.exists()
