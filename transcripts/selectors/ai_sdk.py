"""Reads of the AI SDK stream adapter (`api/ai_sdk.py`): the names of tool calls a stream
answers, and the status a run has after an append."""

from __future__ import annotations

from collections.abc import Sequence

from transcripts.models import Event, Run

# At most this many call ids are looked up for one stream.
MAX_CALL_IDS = 1000


def earlier_tool_names(thread_id: str, call_ids: Sequence[str]) -> dict[str, str]:
    """The tool names of calls made earlier in the thread (the AI SDK sends a tool's output
    without its name, e.g. after an approval, in a stream of its own)."""
    if not call_ids:
        return {}
    calls = (
        # Through the thread's runs: the event log's only index is its key, (run_id, seq).
        Event.objects.filter(run__thread_id=thread_id, kind="tool-call")
        .filter(data__toolCallId__in=call_ids[:MAX_CALL_IDS])
        .order_by("run_id", "seq")
        .values_list("data__toolCallId", "data__toolName")
    )
    return {call_id: name for call_id, name in calls if isinstance(name, str) and name}


def run_status(run_id: str) -> str:
    """The run's status as stored now."""
    status: str = Run.objects.values_list("status", flat=True).get(pk=run_id)
    return status
