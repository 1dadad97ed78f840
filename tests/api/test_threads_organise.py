"""Organising threads over the API: PATCH (title, tags, archived), DELETE, and the list's
tag and archived filters."""

from __future__ import annotations

import pytest

from tests.api.conftest import ApiClient, error_of
from tests.factories import ask, make_thread
from transcripts.ledger.projects import create_project
from transcripts.models import AuditRecord, Message, Tag, Thread

pytestmark = pytest.mark.django_db


def test_patch_renames_retags_and_archives_audited(api: ApiClient) -> None:
    thread = make_thread("Old")

    response = api.request(
        "PATCH", f"/threads/{thread.id}", {"title": " New  name ", "tags": ["eval", "bug"]}
    )

    assert response.status_code == 200
    body = response.json()
    assert (body["title"], body["tags"], body["archived"]) == ("New name", ["eval", "bug"], False)
    thread.refresh_from_db()
    assert thread.tag_names == ["eval", "bug"]
    assert set(Tag.objects.values_list("name", flat=True)) == {"eval", "bug"}
    archived = api.request("PATCH", f"/threads/{thread.id}", {"archived": True}).json()
    assert archived["archived"] is True
    actions = set(AuditRecord.objects.filter(target_id=thread.id).values_list("action", flat=True))
    assert actions == {"rename", "retag", "archive"}


@pytest.mark.parametrize(
    "body",
    [
        {"title": "x" * 300},
        {"title": ""},
        {"title": "a\x00b"},
        {"tags": ["ok", ""]},
        {"tags": ["a\x00"]},
        {"tags": ["x" * 41]},
        {"tags": "eval"},
        {"archived": "maybe"},
    ],
)
def test_patch_refuses_bad_input_and_changes_nothing(api: ApiClient, body: object) -> None:
    thread = make_thread("Kept", metadata={"tags": ["keep"]})

    response = api.request("PATCH", f"/threads/{thread.id}", body)

    assert 400 <= response.status_code < 500
    thread.refresh_from_db()
    assert (thread.title, thread.tag_names, thread.archived) == ("Kept", ["keep"], False)
    assert not AuditRecord.objects.filter(target_id=thread.id).exists()


def test_patch_needs_ingest_or_admin(reader: ApiClient, make_token) -> None:
    thread = make_thread("T")

    refused = reader.request("PATCH", f"/threads/{thread.id}", {"title": "No"})
    admin = ApiClient(make_token("admin"))
    allowed = admin.request("PATCH", f"/threads/{thread.id}", {"title": "Yes"})

    assert refused.status_code == 403
    assert allowed.status_code == 200
    thread.refresh_from_db()
    assert thread.title == "Yes"


def test_patch_and_delete_of_another_project_are_404(make_token) -> None:
    other = create_project(slug="other", name="Other")
    thread = make_thread("Theirs", project=other)
    api = ApiClient(make_token("ingest", "read", "admin"))

    assert api.request("PATCH", f"/threads/{thread.id}", {"title": "Mine"}).status_code == 404
    assert api.request("DELETE", f"/threads/{thread.id}").status_code == 404
    assert Thread.objects.filter(pk=thread.id).exists()


def test_delete_needs_the_admin_scope(api: ApiClient, make_token) -> None:
    thread = make_thread("Doomed")
    ask(thread, "hello")

    refused = api.request("DELETE", f"/threads/{thread.id}")
    admin = ApiClient(make_token("admin"))
    deleted = admin.request("DELETE", f"/threads/{thread.id}")

    assert refused.status_code == 403
    assert error_of(refused)["details"]["scope"] == "admin"
    assert deleted.status_code == 204
    assert not Thread.objects.filter(pk=thread.id).exists()
    assert not Message.objects.filter(thread_id=thread.id).exists()
    record = AuditRecord.objects.get(action="delete", target_id=thread.id)
    assert record.details["messages"] == 1 and record.details["via"] == "api"


def test_the_list_leaves_archived_threads_out_unless_asked(api: ApiClient) -> None:
    kept, gone = make_thread("kept"), make_thread("gone archived")
    api.request("PATCH", f"/threads/{gone.id}", {"archived": True})

    def ids(**params: str) -> list[str]:
        return [t["id"] for t in api.get("/threads", **params).json()["threads"]]

    assert ids() == [kept.id]
    assert ids(archived="true") == [gone.id]
    assert set(ids(archived="any")) == {kept.id, gone.id}
    assert ids(q="archived:yes gone") == [gone.id]
    assert api.get(f"/threads/{gone.id}").status_code == 200


def test_the_list_filters_by_tag(api: ApiClient) -> None:
    tagged = make_thread("tagged", metadata={"tags": ["eval", "x"]})
    make_thread("other", metadata={"tags": ["x"]})

    found = api.get("/threads", tag="eval").json()["threads"]

    assert [t["id"] for t in found] == [tagged.id]
    assert found[0]["tags"] == ["eval", "x"]
