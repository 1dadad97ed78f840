"""How fast the AI SDK chat backend turns a run's event log into a UI message stream.

Builds runs of 1,000 and 10,000 events (a step with reasoning and a tool call, then text
deltas) on a throwaway embedded PostgreSQL (or DATABASE_URL) and times, best of --repeat:
the pure mapping (`UiChunker`, events → chunks) and a whole resume (`ui_message_stream`:
LISTEN, read the log from seq 1, map, frame, `[DONE]`), as events per second.

    .venv/bin/python bench/bench_chat.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import setup_django


def build_run(count: int) -> Any:
    """A committed run of count events, stored through the ledger."""
    from transcripts import ledger
    from transcripts.ledger.default_project import default_project

    thread, _ = ledger.create_thread(project=default_project(), title=f"chat {count}")
    run, _ = ledger.begin_run(thread=thread, generator="demo")
    call = {"toolCallId": "c1", "toolName": "lookup", "input": {"term": "x"}}
    head = [
        ("step-started", {}),
        *[("reasoning", {"text": f"r{i} "}) for i in range(count // 10)],
        ("tool-call", call),
        ("step-finished", {"finishReason": "tool-calls"}),
        ("tool-result", {**call, "output": {"found": True}, "isError": False}),
        ("step-started", {}),
    ]
    deltas = [("text-delta", {"delta": f"w{i} "}) for i in range(count - len(head) - 1)]
    items = [*head, *deltas, ("step-finished", {"finishReason": "stop"})]
    events = [{"seq": i + 1, "kind": k, "data": d} for i, (k, d) in enumerate(items)]
    for start in range(0, len(events), 2000):
        ledger.append_events(run=run, events=events[start : start + 2000])
    return ledger.commit_run(run=run), events


def best_seconds(call: Any, repeat: int) -> float:
    """The best wall-clock time of call() over repeat tries."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    setup_django()
    from transcripts.api.chat_stream import ui_message_stream
    from transcripts.formats.ai_sdk.chat_stream import UiChunker

    print(f"{'events':>7}  {'mapping ev/s':>13}  {'resume ev/s':>12}  {'frames':>7}  {'KiB':>6}")
    for count in (1_000, 10_000):
        run, events = build_run(count)

        def mapping(run: Any = run, events: list[dict[str, Any]] = events) -> None:
            chunker = UiChunker(run_id=run.id, parent_id=run.fork_from_id)
            for event in events:
                chunker.event(seq=event["seq"], kind=event["kind"], data=event["data"], at=None)
            chunker.end(status=run.status, error=None)

        frames: list[str] = []

        def resume(run: Any = run, frames: list[str] = frames) -> None:
            async def read() -> list[str]:
                return [frame async for frame in ui_message_stream(run.id, run.fork_from_id)]

            frames[:] = asyncio.run(read())

        mapped = best_seconds(mapping, args.repeat)
        resumed = best_seconds(resume, args.repeat)
        assert frames[-1] == "data: [DONE]\n\n"
        assert json.loads(frames[-2].removeprefix("data: "))["type"] == "finish"
        size = sum(len(frame.encode()) for frame in frames) / 1024
        print(
            f"{count:>7}  {count / mapped:>13,.0f}  {count / resumed:>12,.0f}"
            f"  {len(frames):>7}  {size:>6.0f}"
        )


if __name__ == "__main__":
    main()
