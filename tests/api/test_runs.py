"""Runs over the API: begin, read, project, and the lifecycle (commit, fail, cancel, restore)."""

from __future__ import annotations

import pytest
from django.core.serializers.json import DjangoJSONEncoder

from tests.api.conftest import error_of
from tests.factories import conversation, events, last_message, make_run, make_thread, say
from transcripts.ids import new_ulid
from transcripts.models import Message, Run, RunStatus, Thread

pytestmark = pytest.mark.django_db


def _deltas(*words: str, start: int = 1) -> list[dict]:
    return events(*(("text-delta", {"delta": w}) for w in words), start=start)


def _begin(api, thread: Thread, body: dict | None = None) -> dict:
    response = api.post(f"/threads/{thread.id}/runs", body or {})
    assert response.status_code == 201, response.content
    return response.json()


def test_a_run_continues_from_the_head_by_default(api):
    thread = conversation(turns=1)

    run = _begin(api, thread)

    assert run["forkFromMessageId"] == thread.head_id
    assert run["status"] == "streaming"


def test_a_null_fork_point_starts_a_new_root(api):
    thread = conversation(turns=1)

    assert _begin(api, thread, {"forkFromMessageId": None})["forkFromMessageId"] is None


def test_a_run_forks_from_a_given_message(api):
    thread = conversation(turns=1)
    question = Message.objects.get(thread=thread, role="user")

    run = _begin(api, thread, {"forkFromMessageId": question.id})

    assert run["forkFromMessageId"] == question.id


def test_a_fork_point_of_another_thread_is_refused(api):
    thread, other = make_thread(), conversation(turns=1)

    response = api.post(f"/threads/{thread.id}/runs", {"forkFromMessageId": other.head_id})

    assert response.status_code == 422
    assert error_of(response)["details"]["field"] == "forkFromMessageId"


def test_a_client_run_id_makes_beginning_idempotent(api):
    thread, run_id = make_thread(), new_ulid()

    first = api.post(f"/threads/{thread.id}/runs", {"id": run_id, "metadata": {"k": 1}})
    again = api.post(f"/threads/{thread.id}/runs", {"id": run_id})

    assert (first.status_code, again.status_code) == (201, 200)
    assert Run.objects.filter(thread=thread).count() == 1
    assert Run.objects.get(pk=run_id).metadata == {"k": 1}


def test_a_locked_thread_refuses_new_runs(api):
    thread = make_thread()
    Thread.objects.filter(pk=thread.pk).update(locked=True)

    response = api.post(f"/threads/{thread.id}/runs", {})

    assert response.status_code == 409
    assert error_of(response)["code"] == "thread_locked"


def test_it_reads_a_run(api):
    run = say(make_thread(), "hello there")

    body = api.get(f"/runs/{run.id}").json()

    assert body["id"] == run.id
    assert body["status"] == "committed"
    assert body["lastSeq"] == 2


def test_it_projects_a_streaming_run(api):
    run = make_run(make_thread(), ("text-delta", {"delta": "half "}), commit=False)

    body = api.get(f"/runs/{run.id}/messages").json()

    assert body["open"] is True and body["status"] == "streaming"
    assert body["messages"][0]["parts"] == [{"type": "text", "text": "half "}]


def test_it_projects_a_failed_run(api):
    run = make_run(make_thread(), ("text-delta", {"delta": "oops"}), commit=False)
    api.post(f"/runs/{run.id}/fail", {"error": "boom"})

    body = api.get(f"/runs/{run.id}/messages").json()

    assert body["status"] == "failed"
    assert body["messages"][0]["parts"][0]["text"] == "oops"


def test_commit_materializes_the_run_and_is_idempotent(api):
    thread = make_thread()
    run = make_run(thread, ("text-delta", {"delta": "answer"}), commit=False)

    first = api.post(f"/runs/{run.id}/commit")
    again = api.post(f"/runs/{run.id}/commit")

    assert first.status_code == again.status_code == 200
    assert again.json()["status"] == "committed"
    thread.refresh_from_db()
    assert thread.head_id == last_message(Run.objects.get(pk=run.id)).id


def test_fail_records_the_error(api):
    run = make_run(make_thread(), commit=False)

    response = api.post(f"/runs/{run.id}/fail", {"error": {"message": "boom", "code": "E1"}})

    assert response.json()["status"] == "failed"
    assert response.json()["error"] == {"message": "boom", "code": "E1"}


def test_fail_refuses_an_error_without_a_message(api):
    run = make_run(make_thread(), commit=False)

    for body in (
        {"error": {"code": 1}},
        {"error": 5},
        {"error": ""},
        {"error": None},
        {"error": {"message": "x", "code": {"nested": True}}},
        {},
    ):
        response = api.post(f"/runs/{run.id}/fail", body)
        assert response.status_code == 422, body
        assert error_of(response)["details"]["problems"][0]["path"] == "error", body
    assert Run.objects.get(pk=run.id).status == RunStatus.STREAMING


def test_fail_keeps_every_key_of_an_error_object(api):
    run = make_run(make_thread(), commit=False)
    error = {"message": "rate limited", "code": 429, "provider": {"retryAfter": 30}}

    response = api.post(f"/runs/{run.id}/fail", {"error": error})

    assert response.status_code == 200
    assert response.json()["error"] == error


def test_cancel_closes_an_open_run(api):
    run = make_run(make_thread(), commit=False)

    assert api.post(f"/runs/{run.id}/cancel").json()["status"] == "cancelled"
    assert api.post(f"/runs/{run.id}/commit").status_code == 409


def test_restore_reactivates_a_superseded_branch(api):
    thread = conversation(turns=1)
    question = Message.objects.get(thread=thread, role="user")
    original = Run.objects.get(pk=thread.head.run_id)
    say(thread, "replacement", fork_from=question.id)

    response = api.post(f"/runs/{original.id}/restore")

    assert response.json()["status"] == "committed"
    thread.refresh_from_db()
    assert thread.head.run_id == original.id
    assert api.post(f"/runs/{make_run(thread, commit=False).id}/restore").status_code == 409


def test_an_unknown_or_malformed_run_id_is_a_404_everywhere(api):
    for path in ("/runs/{}", "/runs/{}/messages", "/runs/{}/events"):
        for run_id in (new_ulid(), "nope", "%00"):
            assert api.get(path.format(run_id)).status_code == 404, (path, run_id)
    for action in ("commit", "cancel", "restore"):
        assert api.post(f"/runs/{new_ulid()}/{action}").status_code == 404
    assert api.post(f"/runs/{new_ulid()}/events", {"events": []}).status_code == 404


def test_runs_of_hidden_threads_are_invisible_to_tokens_without_the_admin_scope(api, admin_api):
    thread = make_thread()
    run = make_run(thread, commit=False)
    Thread.objects.filter(pk=thread.pk).update(hidden=True)

    assert api.get(f"/runs/{run.id}").status_code == 404
    assert api.post(f"/runs/{run.id}/events", {"events": _deltas("x")}).status_code == 404
    assert admin_api.get(f"/runs/{run.id}").status_code == 200


def test_a_run_reads_with_camel_case_keys_and_iso_times(api):
    thread = conversation(turns=1)
    question = Message.objects.get(thread=thread, role="user")
    first = Run.objects.get(pk=thread.head.run_id)
    say(thread, "replacement", fork_from=question.id)
    first.refresh_from_db()

    body = api.get(f"/runs/{first.id}").json()

    assert list(body) == [
        "id",
        "threadId",
        "forkFromMessageId",
        "status",
        "supersededBy",
        "lastSeq",
        "error",
        "usage",
        "generator",
        "model",
        "metadata",
        "createdAt",
        "startedAt",
        "firstEventAt",
        "finishedAt",
    ]
    assert (body["threadId"], body["forkFromMessageId"]) == (thread.id, question.id)
    assert (body["status"], body["supersededBy"]) == ("superseded", first.superseded_by_id)
    assert body["createdAt"] == DjangoJSONEncoder().default(first.created_at)


def test_a_projection_reads_with_the_run_it_belongs_to(api):
    run = make_run(make_thread(), ("text-delta", {"delta": "half "}), commit=False)

    body = api.get(f"/runs/{run.id}/messages").json()

    assert list(body) == [
        "runId",
        "status",
        "lastSeq",
        "open",
        "messages",
        "errors",
        "annotations",
        "metadata",
    ]
    assert (body["runId"], body["lastSeq"]) == (run.id, 1)
