"""Input and output schemas of the ingest API (camelCase JSON, ULID strings for ids).

Each output schema is the one place its wire object is made: handlers return model rows,
projections and ledger results, and the schema reads them (`validation_alias` names the
attribute a camelCase field comes from; `AliasPath` reaches into a response made of two
objects); a comment above each says what it reads, because a docstring would be published
as its OpenAPI description. Input schemas are separate and validate plain JSON.

One module per router (`threads.py`, `runs.py`, `events.py`, `ai_sdk.py`, `generator_jobs.py`,
`transfer.py`, `shares.py`, `chat.py`, `scores.py`), what they share in `common.py`; every name is
re-exported here.
"""

from __future__ import annotations

from transcripts.api.schemas.ai_sdk import AiSdkOut
from transcripts.api.schemas.chat import ChatIn, ChatParameters
from transcripts.api.schemas.common import (
    MAX_INT,
    ErrorBody,
    ErrorOut,
    Id,
    InputSchema,
    JsonObject,
    MessageOut,
    RunStatusName,
    only_what_it_reads,
)
from transcripts.api.schemas.events import AppendOut, EventBatchIn, EventIn, EventOut, EventPage
from transcripts.api.schemas.generator_jobs import ClaimIn, ClaimOut, RunList
from transcripts.api.schemas.runs import (
    FailIn,
    RunIn,
    RunMessagesOut,
    RunOut,
    RunStatusOut,
    run_out,
)
from transcripts.api.schemas.scores import (
    ScoreConfigIn,
    ScoreConfigList,
    ScoreConfigOut,
    ScoreIn,
    ScoreOut,
    ScorePage,
)
from transcripts.api.schemas.shares import NewShareOut, ShareIn, ShareList, ShareOut
from transcripts.api.schemas.threads import (
    MessagePage,
    ThreadIn,
    ThreadMessageOut,
    ThreadOut,
    ThreadPage,
    ThreadPatch,
    ThreadStatusOut,
    thread_out,
)
from transcripts.api.schemas.transfer import ImportJobOut, ImportOut

__all__ = [
    "MAX_INT",
    "AiSdkOut",
    "AppendOut",
    "ChatIn",
    "ChatParameters",
    "ClaimIn",
    "ClaimOut",
    "ErrorBody",
    "ErrorOut",
    "EventBatchIn",
    "EventIn",
    "EventOut",
    "EventPage",
    "FailIn",
    "Id",
    "ImportJobOut",
    "ImportOut",
    "InputSchema",
    "JsonObject",
    "MessageOut",
    "MessagePage",
    "NewShareOut",
    "RunIn",
    "RunList",
    "RunMessagesOut",
    "RunOut",
    "RunStatusName",
    "RunStatusOut",
    "ScoreConfigIn",
    "ScoreConfigList",
    "ScoreConfigOut",
    "ScoreIn",
    "ScoreOut",
    "ScorePage",
    "ShareIn",
    "ShareList",
    "ShareOut",
    "ThreadIn",
    "ThreadMessageOut",
    "ThreadOut",
    "ThreadPage",
    "ThreadPatch",
    "ThreadStatusOut",
    "only_what_it_reads",
    "run_out",
    "thread_out",
]
