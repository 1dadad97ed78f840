"""A run's event log as the AI SDK's UI message stream (what `useChat` reads), live.

The translation (`UiChunker`) is `formats/ai_sdk/chat_stream.py`, pure; `ui_message_stream`
feeds it from `api.stream.follow_events` (LISTEN/NOTIFY, on the process's one listening
connection), so a stream follows the worker's appends as they are stored, on any web process,
and holds no database connection while it waits.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator

import psycopg

from transcripts.api.stream import IDLE, SLOW, UNAVAILABLE, RunEnded, follow_events
from transcripts.db_availability import describe, is_outage
from transcripts.formats.ai_sdk.chat_stream import (
    DONE_FRAME,
    KEEPALIVE_FRAME,
    UiChunker,
    frame,
    unavailable_chunk,
)
from transcripts.selectors.streams import StoredEvent

logger = logging.getLogger(__name__)


async def ui_message_stream(run_id: str, fork_from_id: str | None) -> AsyncGenerator[str, None]:
    """The run's answer as UI message stream frames, from its first event, live until it
    closes; `data: [DONE]` then."""
    chunker = UiChunker(run_id=run_id, parent_id=fork_from_id)
    items = follow_events(run_id, 0)
    try:
        async for item in items:
            if isinstance(item, StoredEvent):
                data = json.loads(item.data_json)
                for chunk in chunker.event(seq=item.seq, kind=item.kind, data=data, at=item.at):
                    yield frame(chunk)
            elif isinstance(item, RunEnded):
                error = json.loads(item.error_json) if item.error_json else None
                for chunk in chunker.end(status=item.status, error=error):
                    yield frame(chunk)
                yield DONE_FRAME
                return
            elif item == IDLE:
                yield KEEPALIVE_FRAME
            elif item in (UNAVAILABLE, SLOW):  # either way: reconnect and resume
                yield frame(unavailable_chunk())
                return
    except psycopg.Error as exc:
        if not is_outage(exc):
            raise
        logger.warning("the chat stream of run %s could not start: %s", run_id, describe(exc))
        yield frame(unavailable_chunk())
    finally:
        await items.aclose()
