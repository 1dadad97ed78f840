"""The AI SDK chat backend in-process: what a turn stores, where it forks, who may call it,
and the refusals (the streams themselves: test_chat_live.py; the real `ai` package:
test_chat_node.py). The generator runs in the test's process (worker.generate)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import ApiClient, error_of
from tests.base import Team
from tests.factories import conversation, make_run
from transcripts import ledger
from transcripts.api.chat import CHAT_ID
from transcripts.generation.generators.demo import demo_answer
from transcripts.generation.runner import generate
from transcripts.ledger.default_project import default_project
from transcripts.models import Message, Project, Run, RunOrigin, RunStatus, Thread

pytestmark = pytest.mark.django_db

FAST = {"delayMs": 0}


def user(message_id: str, text: str) -> dict[str, Any]:
    """A user UIMessage as useChat sends it."""
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


def assistant(message_id: str, text: str = "…") -> dict[str, Any]:
    """An assistant UIMessage as useChat holds it."""
    return {"id": message_id, "role": "assistant", "parts": [{"type": "text", "text": text}]}


def send(client: ApiClient, chat_id: str, messages: list[dict[str, Any]], **body: Any) -> Any:
    """POST /chat like DefaultChatTransport (submit-message unless trigger says otherwise)."""
    payload = {"id": chat_id, "messages": messages, "trigger": "submit-message", **body}
    payload.setdefault("parameters", FAST)
    return client.post("/chat", payload)


def chat_thread(chat_id: str, project: Project | None = None) -> Thread:
    return Thread.objects.get(project=project or default_project(), external_id=chat_id)


def answered(chat_id: str) -> Run:
    """Generate the chat's queued answer here and now; returns the committed run."""
    run = Run.objects.filter(thread=chat_thread(chat_id), status=RunStatus.QUEUED).get()
    assert generate(run.id) == RunStatus.COMMITTED
    return Run.objects.get(pk=run.id)


def path_texts(thread: Thread) -> list[tuple[str, str]]:
    """(role, text) of the active path as the client sees it: an answer's steps are one."""
    texts: list[tuple[str, str]] = []
    for m in Message.objects.filter(thread=thread, active=True).order_by("depth"):
        role = "assistant" if m.role == "tool" else m.role
        text = "".join(p.get("text", "") for p in m.parts if p["type"] == "text")
        if texts and role == "assistant" and texts[-1][0] == "assistant":
            texts[-1] = (role, texts[-1][1] + text)
        else:
            texts.append((role, text))
    return texts


def ui_ids(client: ApiClient, chat_id: str) -> list[str]:
    response = client.get(f"/chat/{chat_id}/messages")
    assert response.status_code == 200
    return [message["id"] for message in response.json()]


# --- a turn ----------------------------------------------------------------------------------


def test_a_first_message_creates_the_chats_thread_and_queues_its_answer(api):
    response = send(api, "chat-1", [user("u1", "How do PostgreSQL indexes work?")])

    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/event-stream")
    assert response["x-vercel-ai-ui-message-stream"] == "v1"
    thread = chat_thread("chat-1")
    assert thread.title == "How do PostgreSQL indexes work?"
    question = Message.objects.get(thread=thread)
    assert question.role == "user" and question.active
    assert question.metadata["sourceMessageId"] == "u1"  # the client's id stays findable
    run = Run.objects.get(thread=thread, status=RunStatus.QUEUED)
    assert run.fork_from_id == question.id and run.generator == "demo"
    assert run.origin == RunOrigin.WEB and run.metadata == {CHAT_ID: "chat-1"}


def test_the_next_turn_goes_below_the_answer_the_client_holds(api):
    send(api, "chat-2", [user("u1", "Tell me about caching")])
    first = answered("chat-2")
    answer_id = first.messages.order_by("position").first().id  # what the start chunk named

    response = send(
        api,
        "chat-2",
        [user("u1", "Tell me about caching"), assistant(answer_id), user("u2", "And queues?")],
    )

    assert response.status_code == 200, response.content
    answered("chat-2")
    thread = chat_thread("chat-2")
    assert [role for role, _ in path_texts(thread)] == ["user", "assistant", "user", "assistant"]
    assert path_texts(thread)[2] == ("user", "And queues?")
    assert Message.objects.filter(thread=thread).count() >= 4
    assert not Run.objects.filter(thread=thread, status=RunStatus.SUPERSEDED).exists()


def test_the_client_may_use_the_ids_the_messages_endpoint_gave(api):
    send(api, "chat-3", [user("u1", "Explain vacuum")])
    answered("chat-3")
    loaded = api.get("/chat/chat-3/messages").json()  # a page reloaded: useChat({messages})

    response = send(api, "chat-3", [*loaded, user("u2", "And autovacuum?")])

    assert response.status_code == 200, response.content
    assert path_texts(chat_thread("chat-3"))[2] == ("user", "And autovacuum?")


def test_a_history_that_ends_early_forks_there(api):
    send(api, "chat-4", [user("u1", "First question")])
    first = answered("chat-4")
    answer_id = first.messages.order_by("position").first().id
    history = [user("u1", "First question"), assistant(answer_id)]
    send(api, "chat-4", [*history, user("u2", "Second question")])
    answered("chat-4")

    # The client went back (setMessages) and asks something else after the first answer.
    response = send(api, "chat-4", [*history, user("u3", "Another second question")])

    assert response.status_code == 200, response.content
    answered("chat-4")
    thread = chat_thread("chat-4")
    assert path_texts(thread)[2] == ("user", "Another second question")
    old = Message.objects.get(thread=thread, metadata__sourceMessageId="u2")
    new = Message.objects.get(thread=thread, metadata__sourceMessageId="u3")
    assert new.active and not old.active and new.parent_id == old.parent_id


def test_an_edit_with_message_id_branches_from_the_edited_messages_parent(api):
    send(api, "chat-5", [user("u1", "Original question")])
    answered("chat-5")

    response = send(api, "chat-5", [user("u1", "Edited question")], messageId="u1")

    assert response.status_code == 200, response.content
    answered("chat-5")
    thread = chat_thread("chat-5")
    questions = Message.objects.filter(thread=thread, role="user", parent=None)
    assert sorted(q.active for q in questions) == [False, True]
    assert path_texts(thread)[0] == ("user", "Edited question")


def test_a_history_of_a_branch_left_by_an_edit_continues_that_branch(api):
    send(api, "chat-15", [user("u1", "Original")])
    first = answered("chat-15")
    old_answer = first.messages.order_by("position").first().id
    send(api, "chat-15", [user("u1", "Edited")], messageId="u1")  # u1 now names two messages
    answered("chat-15")

    # Another tab still shows the original branch, and asks on.
    response = send(
        api, "chat-15", [user("u1", "Original"), assistant(old_answer), user("u3", "?")]
    )

    assert response.status_code == 200, response.content
    answered("chat-15")
    texts = path_texts(chat_thread("chat-15"))
    assert texts[0] == ("user", "Original") and texts[2] == ("user", "?")


def test_a_history_with_a_message_the_thread_lacks_is_refused_and_changes_nothing(api):
    send(api, "chat-6", [user("u1", "Hello")])
    answered("chat-6")
    before = (Message.objects.count(), Run.objects.count())

    response = send(api, "chat-6", [user("u1", "Hello"), assistant("elsewhere"), user("u2", "?")])

    assert response.status_code == 409
    error = error_of(response)
    assert error["details"]["index"] == 1 and error["details"]["messageId"] == "elsewhere"
    assert "GET /api/v1/chat/chat-6/messages" in error["message"]
    assert (Message.objects.count(), Run.objects.count()) == before


def test_only_the_new_message_may_be_sent_and_goes_to_the_head(api):
    send(api, "chat-7", [user("u1", "One")])
    answered("chat-7")

    response = api.post(
        "/chat",
        {"id": "chat-7", "message": user("u2", "Two"), "trigger": "submit-message"},
    )

    assert response.status_code == 200, response.content
    answered("chat-7")
    assert [text for _, text in path_texts(chat_thread("chat-7"))][2] == "Two"


def test_with_only_the_new_message_an_edit_and_a_regenerate_find_their_place(api):
    send(api, "chat-14", [user("u1", "Original")])
    answered("chat-14")

    edit = {"id": "chat-14", "message": user("u1", "Edited"), "messageId": "u1"}
    assert api.post("/chat", {**edit, "parameters": FAST}).status_code == 200
    answered("chat-14")
    thread = chat_thread("chat-14")
    assert path_texts(thread)[0] == ("user", "Edited")

    again = {"id": "chat-14", "message": user("u1", "Edited"), "trigger": "regenerate-message"}
    assert api.post("/chat", {**again, "parameters": FAST}).status_code == 200
    second = answered("chat-14")
    edited = Message.objects.get(thread=thread, active=True, depth=0)
    assert second.fork_from_id == edited.id
    unknown = api.post("/chat", {**edit, "messageId": "never-sent"})
    assert unknown.status_code == 404 and "never-sent" in error_of(unknown)["message"]


def test_regenerate_forks_a_new_answer_beside_the_old_one(api):
    send(api, "chat-8", [user("u1", "What is MVCC?")])
    first = answered("chat-8")
    old_answer = first.messages.order_by("position").first()

    response = send(
        api,
        "chat-8",
        [user("u1", "What is MVCC?")],
        trigger="regenerate-message",
        messageId=old_answer.id,
    )

    assert response.status_code == 200, response.content
    second = answered("chat-8")
    assert second.fork_from_id == old_answer.parent_id
    assert Run.objects.get(pk=first.id).status == RunStatus.SUPERSEDED
    old_answer.refresh_from_db()
    assert not old_answer.active
    assert path_texts(chat_thread("chat-8"))[-1][1].strip() == demo_answer(
        "What is MVCC?", seed=second.id
    )


def test_the_body_may_choose_the_model_and_later_turns_repeat_it(api):
    send(api, "chat-9", [user("u1", "Hi")], model="demo-brief")
    first = answered("chat-9")
    send(api, "chat-9", [user("u1", "Hi"), assistant(first.messages.first().id), user("u2", "?")])
    assert Run.objects.filter(thread=chat_thread("chat-9")).order_by("-created_at")[0].model == (
        "demo-brief"
    )


def test_a_thread_whose_last_generator_can_no_longer_run_goes_on_with_the_demo(api, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    send(api, "chat-10", [user("u1", "Hi")])
    first = answered("chat-10")
    # Its answer came from OpenAI while the server had a key; the key is gone now.
    Run.objects.filter(pk=first.pk).update(generator="openai", model="gpt-4o-mini")
    history = [user("u1", "Hi"), assistant(first.messages.first().id), user("u2", "And?")]

    response = send(api, "chat-10", history)

    assert response.status_code == 200, response.content
    queued = Run.objects.get(thread=chat_thread("chat-10"), status=RunStatus.QUEUED)
    assert (queued.generator, queued.model) == ("demo", "demo-1")  # the demo's own model


def test_a_generator_the_body_names_that_cannot_run_is_refused(api, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    response = send(api, "chat-11", [user("u1", "Hi")], generator="openai")
    assert response.status_code == 422
    assert "OPENAI_API_KEY" in str(error_of(response))
    assert not Thread.objects.filter(external_id="chat-11").exists()


# --- stop, resume, messages -------------------------------------------------------------------


def test_stop_keeps_the_partial_answer_marked_stopped(api):
    send(api, "chat-10", [user("u1", "Explain replication")])
    run = Run.objects.get(thread=chat_thread("chat-10"), status=RunStatus.QUEUED)
    deltas = [{"seq": 1, "kind": "text-delta", "data": {"delta": "Half an "}}]
    ledger.append_events(run=run, events=deltas)  # what the worker had streamed

    response = api.post("/chat/chat-10/stop")

    assert response.status_code == 200, response.content
    assert response.json() == {"stopped": [{"runId": run.id, "status": "committed"}]}
    kept = Message.objects.get(run=run)
    assert kept.active and kept.parts[0]["text"] == "Half an "
    assert kept.metadata["finishReason"] == "stopped"
    assert api.post("/chat/chat-10/stop").json() == {"stopped": []}


def test_stop_leaves_a_browser_run_to_a_token_with_the_admin_scope(api, make_token):
    thread = conversation(1)
    Thread.objects.filter(pk=thread.pk).update(external_id="browser-chat")
    question = Message.objects.get(thread=thread, depth=0)
    run = make_run(
        thread,
        ("text-delta", {"delta": "typed"}),
        fork_from=question.id,
        commit=False,
        generator="demo",
        origin=RunOrigin.WEB,
    )

    refused = api.post("/chat/browser-chat/stop")
    assert refused.status_code == 403 and error_of(refused)["details"]["scope"] == "admin"
    assert Run.objects.get(pk=run.id).status == RunStatus.STREAMING
    admin = ApiClient(make_token("ingest", "admin"))
    assert admin.post("/chat/browser-chat/stop").json()["stopped"][0]["runId"] == run.id
    assert Message.objects.get(run=run).metadata["finishReason"] == "stopped"


def test_stop_stops_the_chats_answer_and_leaves_a_browsers_run_alone(api):
    send(api, "chat-16", [user("u1", "Hi")])
    chat_run = Run.objects.get(thread=chat_thread("chat-16"), status=RunStatus.QUEUED)
    question = Message.objects.get(thread=chat_thread("chat-16"))
    browser_run = make_run(
        chat_thread("chat-16"),
        fork_from=question.id,
        commit=False,
        generator="demo",
        origin=RunOrigin.WEB,
    )

    response = api.post("/chat/chat-16/stop")

    assert response.json() == {"stopped": [{"runId": chat_run.id, "status": "cancelled"}]}
    assert Run.objects.get(pk=browser_run.id).status == RunStatus.STREAMING


def test_resume_answers_204_when_nothing_streams(api):
    assert api.get("/chat/never-used/stream").status_code == 204
    send(api, "chat-11", [user("u1", "Hi")])
    answered("chat-11")
    assert api.get("/chat/chat-11/stream").status_code == 204


def test_the_messages_as_ui_messages_for_use_chat(api):
    send(api, "chat-12", [user("u1", "Why use a ULID?")])
    run = answered("chat-12")
    thread = chat_thread("chat-12")

    by_thread = api.get(f"/threads/{thread.id}/messages", format="ai-sdk")
    by_chat = api.get("/chat/chat-12/messages")

    assert by_thread.status_code == 200 and by_chat.status_code == 200
    assert by_thread.json() == by_chat.json()
    question, answer = by_chat.json()
    assert question["role"] == "user" and question["parts"] == [
        {"type": "text", "text": "Why use a ULID?"}
    ]
    assert answer["role"] == "assistant" and answer["id"] == run.messages.first().id
    texts = [p["text"] for p in answer["parts"] if p["type"] == "text"]
    assert "".join(texts).strip() == demo_answer("Why use a ULID?", seed=run.id)
    assert api.get("/chat/not-begun/messages").json() == []
    unknown = api.get(f"/threads/{thread.id}/messages", format="html")
    assert unknown.status_code == 422


# --- who may ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("scopes", "missing"), [(("read",), "ingest"), (("ingest",), "read")])
def test_a_turn_needs_the_ingest_and_read_scopes(make_token, scopes, missing):
    client = ApiClient(make_token(*scopes))
    response = send(client, "chat-scopes", [user("u1", "Hi")])
    assert response.status_code == 403
    assert error_of(response)["details"]["scope"] == missing
    assert not Thread.objects.filter(external_id="chat-scopes").exists()
    if missing == "read":  # an ingest-only token neither resumes nor reads the chat
        assert client.get("/chat/chat-scopes/stream").status_code == 403
        assert client.get("/chat/chat-scopes/messages").status_code == 403
    else:  # a read-only token cannot stop it
        assert client.post("/chat/chat-scopes/stop").status_code == 403


def test_without_a_token_or_with_a_browser_session_the_chat_is_refused(team: Team):
    anonymous = ApiClient()
    assert send(anonymous, "c", [user("u1", "Hi")]).status_code == 401
    session = ApiClient(client=team.client(team.owner))
    assert send(session, "c", [user("u1", "Hi")]).status_code == 403
    assert session.get("/chat/c/stream").status_code == 403
    assert session.get("/chat/c/messages").status_code == 403


def test_another_projects_chat_of_the_same_id_is_out_of_reach(team: Team):
    alpha = ApiClient(team.token(team.alpha))
    beta = ApiClient(team.token(team.beta))
    send(alpha, "shared-id", [user("u1", "Alpha's secret plan")])
    alpha_thread = chat_thread("shared-id", team.alpha)

    assert beta.get("/chat/shared-id/messages").json() == []
    assert beta.get("/chat/shared-id/stream").status_code == 204
    assert beta.post("/chat/shared-id/stop").status_code == 404
    assert beta.get(f"/threads/{alpha_thread.id}/messages", format="ai-sdk").status_code == 404
    # Beta's first use of the id is a chat of its own.
    assert send(beta, "shared-id", [user("u1", "Beta's question")]).status_code == 200
    assert chat_thread("shared-id", team.beta).pk != alpha_thread.pk
    assert Message.objects.filter(thread=alpha_thread).count() == 1


def test_a_hidden_or_locked_chat_takes_no_new_message(api):
    send(api, "chat-13", [user("u1", "Hi")])
    answered("chat-13")
    thread = chat_thread("chat-13")
    before = Message.objects.count()
    Thread.objects.filter(pk=thread.pk).update(locked=True)
    assert send(api, "chat-13", [user("u9", "again")], messageId="u1").status_code == 409
    Thread.objects.filter(pk=thread.pk).update(locked=False, hidden=True)
    hidden = send(api, "chat-13", [user("u9", "again")], messageId="u1")
    assert hidden.status_code == 409 and "choose another" in error_of(hidden)["message"]
    assert api.get("/chat/chat-13/messages").json() == []
    assert Message.objects.count() == before


# --- bad bodies ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        ({"messages": [user("u1", "Hi")]}, 422, "id"),
        ({"id": "", "messages": [user("u1", "Hi")]}, 422, "id"),
        ({"id": "c", "messages": []}, 422, "messages is empty"),
        ({"id": "c"}, 422, "needs messages"),
        ({"id": "c", "messages": [assistant("a1")]}, 422, "the user's new message"),
        ({"id": "c", "messages": [user("u1", "  ")]}, 422, "empty"),
        ({"id": "c", "messages": [{"id": "u1", "role": "user"}]}, 422, "parts"),
        ({"id": "c", "messages": [{"role": "user", "parts": []}]}, 422, "id"),
        ({"id": "c", "messages": [user("u1", "Hi")], "trigger": "resume"}, 422, "trigger"),
        ({"id": "c", "messages": "Hi"}, 422, "messages"),
        ({"id": "c", "messages": [user("u1", "Hi")], "generator": "nope"}, 422, "generator"),
        (
            {"id": "c", "messages": [user("u1", "Hi")], "parameters": {"temperature": 9}},
            422,
            "temperature",
        ),
        (
            {"id": "c", "messages": [user("u1", "Hi")], "parameters": {"delayMs": 10**6}},
            422,
            "delayMs",
        ),
        (
            {
                "id": "c",
                "messages": [
                    {
                        "id": "u1",
                        "role": "user",
                        "parts": [{"type": "file", "mediaType": "image/png", "url": "x"}],
                    }
                ],
            },
            422,
            "only text parts",
        ),
        ({"id": "c", "messages": [user("u1", "Hi")], "trigger": "regenerate-message"}, 404, "c"),
    ],
)
def test_a_bad_body_is_a_clear_refusal_that_changes_nothing(api, body, status, says):
    response = api.post("/chat", body)

    assert response.status_code == status, response.content
    assert says in error_of(response)["message"]
    assert not Thread.objects.filter(external_id="c").exists()
    assert not Run.objects.exists()


def test_a_body_that_is_not_json_is_refused(api):
    response = api.post_raw("/chat", b"id=c", "application/x-www-form-urlencoded")
    assert response.status_code == 415
