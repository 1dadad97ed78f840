"""API router: a project's dataset (preference pairs or chat rows) as streamed JSON Lines."""

from __future__ import annotations

from django.http import HttpRequest, StreamingHttpResponse
from ninja import Router
from ninja.params.functions import Query

from transcripts import datasets
from transcripts.api.access import get_project_for_caller
from transcripts.api.auth import read_auth
from transcripts.api.errors import ERRORS
from transcripts.datasets.stream import dataset_response
from transcripts.errors import NotFound
from transcripts.permissions import READ

router = Router(auth=read_auth)  # mounted at /datasets

_FORMATS = "; ".join(f"{kind}: {', '.join(fmts)}" for kind, fmts in datasets.FORMATS.items())


@router.get(
    "/{kind}",
    response={200: None, **ERRORS},
    openapi_extra={
        "responses": {200: {"description": "JSON Lines", "content": {"application/x-ndjson": {}}}}
    },
)
def export_dataset(
    request: HttpRequest,
    kind: str,
    format: str = Query("", description=f"default: the first of {_FORMATS}"),
    project: str = Query("", description="the project's slug (a token's own when omitted)"),
    since: str = Query("", description="threads dated on or after (YYYY-MM-DD)"),
    until: str = Query("", description="threads dated on or before (YYYY-MM-DD)"),
    dated: str = Query("updated", description="which date since/until read: updated, created"),
    model: str = Query("", description="threads with a run of a model containing this"),
    agent: str = Query("", description="threads with an agent whose id contains this"),
    rated: str = Query("", description="true: only rows a reader's preferred mark decides"),
    q: str = Query("", description="full-text search, as the thread list searches"),
    branches: str = Query("active", description="sft: active (the active path) or all"),
    metadata: str = Query("", description="add `metadata` to each row (default: not for openai)"),
    minScore: str = Query(
        "",
        max_length=200,
        description="sft: only paths whose last answer's scores of a name average at least a"
        " number (helpfulness:4)",
    ),
    feedback: str = Query(
        "", description="sft: up keeps only paths whose last answer has more thumbs up than down"
    ),
    from_: str = Query(
        "ratings",
        alias="from",
        description="preferences: pairs from Prefer marks (ratings) or from scores that differ",
    ),
    name: str = Query("", description="preferences from=scores: the score's name"),
) -> StreamingHttpResponse:
    """A project's dataset: `preferences` (a pair per fork point and rejected answer) or `sft`
    (a chat row per path), streamed as JSON Lines; hidden threads and redacted messages never
    enter it (see docs/datasets.md)."""
    found = get_project_for_caller(request, project or None, needs=[READ])
    if kind not in datasets.FORMATS:
        # A kind is a resource in the path: an unknown one is not there, as any unknown path.
        raise NotFound(f"no dataset kind {kind!r}; expected one of {', '.join(datasets.FORMATS)}")
    query = datasets.parse_query(
        kind,
        {
            "format": format,
            "since": since,
            "until": until,
            "dated": dated,
            "model": model,
            "agent": agent,
            "rated": rated,
            "q": q,
            "branches": branches,
            "metadata": metadata,
            "minScore": minScore,
            "feedback": feedback,
            "from": from_,
            "name": name,
        },
    )
    return dataset_response(request, found, query)
