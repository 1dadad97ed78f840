"""The AI SDK chat backend: `useChat` with `DefaultChatTransport` pointed here persists every
turn in a thread and resumes streams from the event log (no Redis).

A chat `id` names the thread of the token's project whose `external_id` it is, created on
first use. `POST /chat` appends the user's new message and answers it with a generator run,
as the Reply button does (a regenerate forks like the Regenerate button); the answer is the
UI message stream of that run's events as the worker stores them (`api/chat_stream.py`).
The stored thread is the truth: the client's history must be a path of the stored tree; the
new message goes below where that path ends (a new branch when that is not the head), and a
history holding a message the thread does not have is refused (409). See docs/ai-sdk.md.
"""

from __future__ import annotations

from typing import Any, TypedDict

from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from ninja import Router

from transcripts import ledger, selectors
from transcripts.api.access import (
    caller,
    caller_project,
    get_thread_for_caller,
    require_may_stop,
    require_scope,
)
from transcripts.api.auth import ingest_auth, read_auth
from transcripts.api.chat_stream import ui_message_stream
from transcripts.api.errors import ERRORS
from transcripts.api.schemas import ChatIn, JsonObject
from transcripts.errors import (
    Conflict,
    DomainError,
    InvalidEvents,
    InvalidInput,
    NotFound,
    PermissionDenied,
)
from transcripts.events import to_storable_json
from transcripts.formats import TreeThread
from transcripts.formats.ai_sdk.chat_history import (
    UiMessage,
    find,
    history_end,
    new_message,
    ui_message,
)
from transcripts.formats.ai_sdk.chat_stream import CONTENT_TYPE, HEADERS
from transcripts.formats.ai_sdk.messages import export_ai_sdk
from transcripts.generation import start
from transcripts.generation.generators import CHOICES, unavailable_reason
from transcripts.generation.start import TITLE_FROM_TEXT
from transcripts.ledger.threads import MAX_EXTERNAL_ID, thread_for_external_id
from transcripts.models import Message, Project, Run, Thread
from transcripts.permissions import INGEST, READ
from transcripts.selectors.chat import (
    chat_tree,
    last_question,
    message_by_id,
    open_runs,
    thread_by_external_id,
)

router = Router()  # mounted at /chat

CHAT_ID = "chatId"  # the run metadata key naming the chat that started a run


class ChatOptions(TypedDict):
    """How a chat turn's answer is generated, as `generation.start` takes it."""

    generator: str
    model: str
    parameters: JsonObject
    metadata: JsonObject


class StoppedRun(TypedDict):
    """A run the stop endpoint stopped."""

    runId: str
    status: str


class StopAnswer(TypedDict):
    """What the stop endpoint answers."""

    stopped: list[StoppedRun]


# --- finding the chat ----------------------------------------------------------------------


def _token_only(request: HttpRequest) -> None:
    """Refuse (403) a browser session: chat ids are a token's project's."""
    if caller(request).is_session:
        raise PermissionDenied(
            "the chat endpoints need an API token: a chat id names a thread of its project"
        )


def _storable(text: str) -> bool:
    """Whether PostgreSQL can hold text (no NUL, no lone surrogate)."""
    try:
        to_storable_json(text, "chatId")
    except InvalidEvents:
        return False
    return True


def _chat_id_taken(request: HttpRequest, chat_id: str) -> Thread | None:
    """The calling token's project's thread of chat_id, within reach or not."""
    project_id = caller(request).project_id
    assert project_id is not None  # _token_only admitted a token, which has a project
    return thread_by_external_id(project_id, chat_id)


def _chat_thread(request: HttpRequest, chat_id: str, *, needs: list[str]) -> Thread | None:
    """The caller's thread of chat_id, None when there is none (or it is out of reach)."""
    _token_only(request)
    for scope in needs:
        require_scope(request, scope)
    if len(chat_id) > MAX_EXTERNAL_ID or not _storable(chat_id):
        raise NotFound("this chat does not exist: no chat can have this id")
    found = _chat_id_taken(request, chat_id)
    if found is None:
        return None
    try:
        return get_thread_for_caller(request, found.id, needs=needs)
    except NotFound:
        return None  # hidden from this token: as if it did not exist


def _options(payload: ChatIn, thread: Thread | None) -> ChatOptions:
    """Generator, model and parameters: the body's, else what the thread used last (as the
    one-click buttons repeat) while it can still run here, else the demo generator. A generator
    the body names and cannot run is refused (422) by start_generation."""
    last = selectors.last_choice(thread, among=CHOICES) if thread is not None else {}
    generator = payload.generator or last.get("generator") or "demo"
    if not payload.generator and unavailable_reason(generator):
        generator = "demo"  # e.g. the thread's last answer came from OpenAI, now without a key
    same = generator == last.get("generator")
    model = payload.model or (last.get("model", "") if same else "")
    if payload.parameters is not None:
        parameters = payload.parameters.model_dump(exclude_none=True)
    else:
        parameters = dict(last.get("parameters") or {}) if same else {}
    return {
        "generator": generator,
        "model": model,
        "parameters": parameters,
        "metadata": {CHAT_ID: payload.id},
    }


def _streaming(run: Run) -> StreamingHttpResponse:
    response = StreamingHttpResponse(
        ui_message_stream(run.id, run.fork_from_id), content_type=CONTENT_TYPE
    )
    for name, value in HEADERS.items():
        response[name] = value
    return response


# --- starting a turn -----------------------------------------------------------------------


def _submit(
    payload: ChatIn,
    project: Project,
    thread: Thread | None,
    new: UiMessage,
    history: list[UiMessage] | None,
) -> Run:
    """Append new below where the history ends (or at the head, or in place of the edited
    messageId) and queue its answer."""
    children = chat_tree(thread) if thread is not None else {}
    fork_from: object = ledger.HEAD
    if history is not None:
        end = history_end(children, history, payload.id)
        fork_from = end.id if end is not None else None
    elif payload.messageId is not None:
        edited = find(children, payload.messageId)
        if edited is None:
            raise NotFound(f"message {payload.messageId} is not in this chat", field="messageId")
        fork_from = edited.parent_id
    if thread is None:
        title = " ".join(new.text.split())[:TITLE_FROM_TEXT]
        thread, _ = thread_for_external_id(project=project, external_id=payload.id, title=title)
    return start.start_reply(
        thread=thread,
        text=new.text,
        fork_from=fork_from,
        message_metadata={"sourceMessageId": new.id},
        **_options(payload, thread),
    )


def _regenerate(
    payload: ChatIn, thread: Thread, target: UiMessage | None, history: list[UiMessage] | None
) -> Run:
    """A new answer beside the one being replaced: below the user message the history ends
    at, or that messageId (or message) names, or the head's."""
    children = chat_tree(thread)
    if history is not None:
        end = history_end(children, history, payload.id)
        if end is None or end.role != "user":
            raise InvalidInput(
                "to regenerate, the history must end with the user message to answer",
                field="messages",
            )
        question = message_by_id(end.id)
        return start.start_answer(message=question, **_options(payload, thread))
    wanted = payload.messageId or (target.id if target is not None else None)
    if wanted is not None:
        found = find(children, wanted)
        if found is None:
            raise NotFound(f"message {wanted} is not in this chat", field="messageId")
        message = message_by_id(found.id)
    else:
        question_or_none = last_question(thread)
        if question_or_none is None:
            raise InvalidInput("this chat has no user message to answer", field="messageId")
        message = question_or_none
    if message.role == "user":
        return start.start_answer(message=message, **_options(payload, thread))
    return start.start_regenerate(message=message, **_options(payload, thread))


@router.post(
    "",
    auth=ingest_auth,
    response={200: None, **ERRORS},
    openapi_extra={
        "responses": {
            200: {
                "description": "The UI message stream of the answer"
                " (header x-vercel-ai-ui-message-stream: v1)",
                "content": {"text/event-stream": {"schema": {"type": "string"}}},
            }
        }
    },
)
def chat(request: HttpRequest, payload: ChatIn) -> StreamingHttpResponse:
    """Send a chat turn (the AI SDK's `DefaultChatTransport`): the answer streams back."""
    _token_only(request)
    require_scope(request, INGEST)
    require_scope(request, READ)
    if payload.messages is not None:
        raws: list[JsonObject] = payload.messages
        messages = [ui_message(raw, f"messages[{i}]", i) for i, raw in enumerate(raws)]
    elif payload.message is not None:
        raws, messages = [payload.message], [ui_message(payload.message, "message", 0)]
    else:
        raise InvalidInput("the body needs messages (or message)", field="messages")
    thread = _chat_thread(request, payload.id, needs=[INGEST, READ])
    if thread is None and _chat_id_taken(request, payload.id) is not None:
        raise Conflict("this chat id cannot be used: choose another", field="id")
    if thread is not None and (thread.hidden or thread.locked):
        state = "hidden by moderation" if thread.hidden else "locked"
        raise Conflict(f"this chat is {state}: it takes no new messages", field="id")
    history = messages[:-1] if payload.messages is not None else None
    with transaction.atomic():
        if payload.trigger == "submit-message":
            if not messages:
                raise InvalidInput("messages is empty: send the new message", field="messages")
            where = f"messages[{len(raws) - 1}]" if payload.messages is not None else "message"
            new = new_message(messages[-1], where, raws[-1])
            run = _submit(payload, caller_project(request), thread, new, history)
        elif thread is None:
            raise NotFound(f"chat {payload.id} does not exist", chatId=payload.id)
        else:
            target = messages[-1] if payload.messages is None else None
            everything = messages if payload.messages is not None else None
            run = _regenerate(payload, thread, target, everything)
    return _streaming(run)


@router.get(
    "/{chatId}/stream",
    auth=read_auth,
    response={200: None, 204: None, **ERRORS},
    openapi_extra={
        "responses": {
            200: {
                "description": "The active answer's UI message stream, replayed from its start",
                "content": {"text/event-stream": {"schema": {"type": "string"}}},
            },
            204: {"description": "Nothing is streaming in this chat"},
        }
    },
)
def resume_stream(request: HttpRequest, chatId: str) -> HttpResponse | StreamingHttpResponse:
    """Resume the chat's streaming answer (`useChat({resume: true})`): its UI message stream
    from the first event, then live; 204 when nothing streams (or the chat is unknown)."""
    thread = _chat_thread(request, chatId, needs=[READ])
    runs = open_runs(thread) if thread is not None else []
    if not runs:
        return HttpResponse(status=204)
    return _streaming(runs[0])


def _may_stop(request: HttpRequest, run: Run) -> bool:
    """Whether the caller may stop run: the chat's own answers with the ingest scope it was
    started with; others as anywhere else (`api.access.require_may_stop`)."""
    if run.metadata.get(CHAT_ID) == run.thread.external_id:
        return True
    try:
        require_may_stop(request, run, action="stop")
    except PermissionDenied:
        return False
    return True


@router.post("/{chatId}/stop", auth=ingest_auth, response={200: dict[str, Any], **ERRORS})
def stop(request: HttpRequest, chatId: str) -> StopAnswer:
    """Stop the chat's streaming answer and keep what it wrote (marked stopped), as the Stop
    button does. The chat's own runs stop with the ingest scope; a run begun elsewhere needs
    what stopping it needs anywhere (a browser's run: the admin scope)."""
    thread = _chat_thread(request, chatId, needs=[INGEST])
    if thread is None:
        raise NotFound(f"chat {chatId} does not exist", chatId=chatId)
    runs = open_runs(thread)
    allowed = [run for run in runs if _may_stop(request, run)]
    if runs and not allowed:
        require_may_stop(request, runs[0], action="stop")  # refused, saying what it takes
    stopped: list[StoppedRun] = []
    for run in allowed:
        try:
            closed = ledger.stop_run(run=run)
        except DomainError:  # it closed on its own in the meantime: nothing left to stop
            continue
        stopped.append({"runId": closed.id, "status": closed.status})
    return {"stopped": stopped}


def ui_messages(thread: Thread, leaf: Message | None = None) -> list[JsonObject]:
    """The active path (or the path to leaf) as AI SDK UIMessages, for `useChat({messages})`."""
    path = selectors.path_to(leaf) if leaf is not None else list(selectors.active_path(thread))
    tree = TreeThread(
        title=thread.title,
        messages=[m.as_canonical() for m in path],
        active_leaf=path[-1].id if path else None,
    )
    return export_ai_sdk(tree)


@router.get("/{chatId}/messages", auth=read_auth, response={200: list[dict[str, Any]], **ERRORS})
def chat_messages(request: HttpRequest, chatId: str) -> JsonResponse:
    """The chat's stored messages as UIMessages (the active path); [] for a chat not begun."""
    thread = _chat_thread(request, chatId, needs=[READ])
    return JsonResponse(ui_messages(thread) if thread is not None else [], safe=False)
