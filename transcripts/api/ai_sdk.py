"""The Vercel AI SDK adapter: a UI message stream stored as events of a run."""

from __future__ import annotations

from typing import TypedDict

from django.db import transaction
from django.http import HttpRequest
from ninja import Router
from ninja.params.functions import Query

from transcripts import ledger
from transcripts.api.access import get_run_for_caller
from transcripts.api.auth import ingest_auth
from transcripts.api.errors import (
    ERRORS,
    check_batch_length,
    check_content_type,
    check_depth,
    read_body,
)
from transcripts.api.schemas import MAX_INT, AiSdkOut
from transcripts.errors import InvalidInput, InvalidStream
from transcripts.formats.ai_sdk.stream import answered_elsewhere, parse_stream, to_events
from transcripts.ledger import AppendResult
from transcripts.limits import charge_events
from transcripts.models import Run
from transcripts.permissions import INGEST
from transcripts.selectors.ai_sdk import earlier_tool_names, run_status

router = Router(auth=ingest_auth)  # mounted at /runs


class StreamAnswer(TypedDict):
    """What AiSdkOut reads."""

    append: AppendResult
    status: str
    committed: bool


_AI_SDK_BODY = {
    "required": True,
    "description": "A UI message stream: the text/event-stream body the AI SDK sends"
    " (`data: {...}` frames, `data: [DONE]`), or a JSON array of its chunks.",
    "content": {
        "application/json": {
            "schema": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"type": {"type": "string", "minLength": 1}},
                    "required": ["type"],
                },
            }
        },
        "text/event-stream": {"schema": {"type": "string"}},
    },
}


# The operation id is the endpoint's from before it had a router of its own, so that
# clients generated from the OpenAPI schema keep their method name.
@router.post(
    "/{runId}/ai-sdk",
    response={200: AiSdkOut, **ERRORS},
    openapi_extra={"requestBody": _AI_SDK_BODY},
    operation_id="transcripts_api_runs_ai_sdk_stream",
)
def ai_sdk_stream(
    request: HttpRequest,
    runId: str,
    commit: bool = Query(False, description="Commit the run after appending"),
    afterSeq: int | None = Query(
        None,
        ge=0,
        le=MAX_INT,
        description="Number the events from afterSeq + 1 (default: the run's lastSeq)."
        " Sending the same stream again with the same afterSeq is then a no-op: a safe retry.",
    ),
) -> StreamAnswer:
    """Append a Vercel AI SDK UI message stream as events after lastSeq (or afterSeq)."""
    run = get_run_for_caller(request, runId, needs=[INGEST])
    # fetch() sends a string body as text/plain unless told otherwise.
    check_content_type(request, also=("text/event-stream", "text/plain"))
    body = read_body(request)
    if not body.strip():  # the body is required: no stream, nothing to append or commit
        raise InvalidInput(
            "the body is required: a text/event-stream body or a JSON array of chunks",
            field="body",
        )
    try:
        chunks = parse_stream(body, request.content_type or "")
        check_depth(chunks, body)
        start = run.last_seq if afterSeq is None else afterSeq
        tool_names = earlier_tool_names(run.thread_id, answered_elsewhere(chunks))
        events = to_events(chunks, after_seq=start, tool_names=tool_names)
    except InvalidStream as exc:
        problems = [{"path": path, "message": message} for path, message in exc.problems]
        raise InvalidInput(f"not a UI message stream: {exc}", problems=problems) from None
    check_batch_length(len(events))
    charge_events(request, len(events))
    # Append and commit together: a refused commit leaves no half-stored stream behind.
    with transaction.atomic():
        appended = ledger.append_events(run=run, events=events)
        committed: Run | None = ledger.commit_run(run=run) if commit else None
    status = committed.status if committed else run_status(run.pk)
    return {"append": appended, "status": status, "committed": committed is not None}
