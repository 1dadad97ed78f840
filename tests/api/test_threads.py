"""Threads over the API: create, list and search, read, and path messages."""

from __future__ import annotations

import pytest
from django.core.serializers.json import DjangoJSONEncoder

from tests.api.conftest import error_of
from tests.factories import ask, conversation, make_thread, say
from transcripts.ids import new_ulid
from transcripts.models import Message, Thread

pytestmark = pytest.mark.django_db


def test_it_creates_a_thread(api):
    response = api.post("/threads", {"title": "Hello", "metadata": {"a": 1}, "agents": {"x": {}}})

    assert response.status_code == 201
    body = response.json()
    thread = Thread.objects.get(pk=body["id"])
    assert (thread.title, thread.metadata, thread.agents) == ("Hello", {"a": 1}, {"x": {}})
    assert body["headMessageId"] is None and body["hidden"] is False


def test_it_creates_a_thread_idempotently_with_a_client_id(api):
    thread_id = new_ulid()
    first = api.post("/threads", {"id": thread_id, "title": "Once"})
    again = api.post("/threads", {"id": thread_id, "title": "Once"})

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == thread_id
    assert Thread.objects.filter(pk=thread_id).count() == 1


def test_it_refuses_a_malformed_client_id(api):
    response = api.post("/threads", {"id": "nope"})

    assert response.status_code == 422
    assert error_of(response)["details"]["field"] == "id"


def test_it_refuses_a_title_that_is_too_long(api):
    response = api.post("/threads", {"title": "x" * 501})

    assert response.status_code == 422
    assert error_of(response)["details"]["problems"][0]["path"] == "title"


def test_it_lists_threads_most_recently_updated_first_with_a_cursor(api):
    old, middle, new = make_thread("old"), make_thread("middle"), make_thread("new")
    say(middle, "touch")  # updates middle last

    first = api.get("/threads", limit=2).json()
    second = api.get("/threads", limit=2, cursor=first["nextCursor"]).json()

    assert [t["id"] for t in first["threads"]] == [middle.id, new.id]
    assert [t["id"] for t in second["threads"]] == [old.id]
    assert second["nextCursor"] is None


def test_it_searches_threads_by_message_text_on_every_branch(api):
    thread = make_thread("plain title")
    ask(thread, "where do penguins live")
    make_thread("other")

    found = api.get("/threads", q="penguins").json()["threads"]

    assert [t["id"] for t in found] == [thread.id]


def test_a_quoted_phrase_finds_titles_as_well_as_messages(api):
    titled = make_thread("Reset the password")
    said = make_thread("plain")
    ask(said, "please reset the password now")
    make_thread("the password reset")

    found = api.get("/threads", q='"reset the password"').json()["threads"]

    assert {t["id"] for t in found} == {titled.id, said.id}


def test_it_refuses_a_forged_cursor(api):
    for cursor in ("garbage", "WzFd", "WyJ4IiwieSJd"):
        response = api.get("/threads", cursor=cursor)
        assert response.status_code == 422, cursor
        assert error_of(response)["details"]["field"] == "cursor"


def test_it_refuses_a_search_with_nul_characters(api):
    assert api.get("/threads", q="a\x00b").status_code == 422


def test_it_reads_a_thread(api):
    thread = conversation(turns=1)

    body = api.get(f"/threads/{thread.id}").json()

    assert body["id"] == thread.id
    assert body["headMessageId"] == thread.head_id


def test_an_unknown_or_malformed_thread_id_is_a_404(api):
    assert error_of(api.get(f"/threads/{new_ulid()}"))["code"] == "not_found"
    assert api.get("/threads/not-a-ulid").status_code == 404
    assert api.get("/threads/not-a-ulid/messages").status_code == 404


def test_hidden_threads_are_invisible_to_tokens_without_the_admin_scope(api, admin_api):
    thread = make_thread("secret")
    Thread.objects.filter(pk=thread.pk).update(hidden=True)

    assert api.get(f"/threads/{thread.id}").status_code == 404
    assert api.get("/threads").json()["threads"] == []
    assert api.post(f"/threads/{thread.id}/runs", {}).status_code == 404
    assert admin_api.get(f"/threads/{thread.id}").status_code == 200
    assert [t["id"] for t in admin_api.get("/threads").json()["threads"]] == [thread.id]


def test_it_lists_the_active_path_root_first(api):
    thread = conversation(turns=2)

    messages = api.get(f"/threads/{thread.id}/messages").json()["messages"]

    assert [m["role"] for m in messages] == ["user", "assistant"] * 2
    assert [m["depth"] for m in messages] == [0, 1, 2, 3]
    assert messages[0]["parts"] == [{"type": "text", "text": "question 0"}]
    assert messages[-1]["id"] == thread.head_id


def test_it_pages_through_a_long_path(api):
    thread = conversation(turns=3)

    first = api.get(f"/threads/{thread.id}/messages", limit=4).json()
    second = api.get(f"/threads/{thread.id}/messages", limit=4, cursor=first["nextCursor"]).json()

    assert [m["depth"] for m in first["messages"]] == [0, 1, 2, 3]
    assert [m["depth"] for m in second["messages"]] == [4, 5]
    assert second["nextCursor"] is None


def test_it_shows_the_path_to_another_leaf(api):
    thread = conversation(turns=1)
    question = Message.objects.get(thread=thread, role="user")
    old_answer = Message.objects.get(thread=thread, role="assistant")
    say(thread, "a better answer", fork_from=question.id)

    active = api.get(f"/threads/{thread.id}/messages").json()["messages"]
    branch = api.get(f"/threads/{thread.id}/messages", leaf=old_answer.id).json()["messages"]

    assert active[-1]["parts"][0]["text"].startswith("a better")
    assert [m["id"] for m in branch] == [question.id, old_answer.id]


def test_a_leaf_of_another_thread_is_a_404(api):
    thread, other = conversation(turns=1), conversation(turns=1)

    response = api.get(f"/threads/{thread.id}/messages", leaf=other.head_id)

    assert response.status_code == 404


def test_a_thread_reads_with_camel_case_keys_and_iso_times(api):
    thread = conversation(turns=1)

    body = api.get(f"/threads/{thread.id}").json()

    assert list(body) == [
        "id",
        "title",
        "metadata",
        "agents",
        "externalId",
        "parentThreadId",
        "headMessageId",
        "hidden",
        "locked",
        "archived",
        "tags",
        "createdAt",
        "updatedAt",
    ]
    assert body["createdAt"] == DjangoJSONEncoder().default(thread.created_at)
    assert body["parentThreadId"] is None


def test_a_stored_message_reads_as_its_canonical_form_with_its_run_and_depth(api):
    thread = conversation(turns=1)

    messages = api.get(f"/threads/{thread.id}/messages").json()["messages"]

    stored = Message.objects.filter(thread=thread).order_by("depth")
    assert messages == [{**m.as_canonical(), "runId": m.run_id, "depth": m.depth} for m in stored]
