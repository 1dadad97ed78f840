"""Import a generated ChatGPT export and export it back as canonical JSON.

Prints messages/s for both directions and the peak RSS of this process.
Targets: import >= 20,000 messages/s, peak RSS <= 300 MB.

    .venv/bin/python bench/bench_import.py [--conversations 2000] [--messages 100]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import setup_django


def _node(node_id: str, parent: str | None, role: str, text: str, t: float) -> dict[str, Any]:
    return {
        "id": node_id,
        "parent": parent,
        "children": [],
        "message": {
            "id": node_id,
            "author": {"role": role},
            "create_time": t,
            "content": {"content_type": "text", "parts": [text]},
            "status": "finished_successfully",
            "recipient": "all",
            "metadata": {"model_slug": "gpt-4o"} if role == "assistant" else {},
        },
    }


def conversation(index: int, messages: int) -> dict[str, Any]:
    """One conversation with `messages` messages: a main line and a regenerated answer."""
    root = str(uuid.uuid4())
    mapping: dict[str, dict[str, Any]] = {
        root: {"id": root, "parent": None, "children": [], "message": None}
    }
    parent, t = root, 1_700_000_000.0 + index * 1000
    branch_at = messages // 2
    made = 0
    while made < messages:
        role = "user" if made % 2 == 0 else "assistant"
        node_id = str(uuid.uuid4())
        text = f"{role} message {made} of conversation {index}: " + "lorem ipsum " * 20
        mapping[node_id] = _node(node_id, parent, role, text, t + made)
        mapping[parent]["children"].append(node_id)
        made += 1
        if made == branch_at and role == "user" and made < messages:
            alt = str(uuid.uuid4())
            mapping[alt] = _node(alt, node_id, "assistant", "an earlier answer", t + made)
            mapping[node_id]["children"].append(alt)
            made += 1
        parent = node_id
    return {
        "id": str(uuid.uuid4()),
        "title": f"Conversation {index}",
        "create_time": t,
        "update_time": t + messages,
        "current_node": parent,
        "mapping": mapping,
    }


def write_export(path: Path, conversations: int, messages: int) -> int:
    """Write conversations.json one conversation at a time; returns the message count."""
    total = 0
    with path.open("w") as out:
        out.write("[")
        for index in range(conversations):
            item = conversation(index, messages)
            total += sum(1 for node in item["mapping"].values() if node["message"])
            out.write(("," if index else "") + json.dumps(item))
        out.write("]")
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--conversations", type=int, default=2000)
    parser.add_argument("--messages", type=int, default=100)
    args = parser.parse_args()
    setup_django(durable=True)
    from transcripts.interchange import export_thread, import_stream
    from transcripts.ledger.default_project import default_project
    from transcripts.models import Message

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "conversations.json"
        total = write_export(path, args.conversations, args.messages)
        size_mb = path.stat().st_size / 1e6
        started = time.perf_counter()
        with path.open("rb") as handle:
            result = import_stream(handle, "chatgpt", project=default_project())
        import_seconds = time.perf_counter() - started
    stored = Message.objects.count()
    started = time.perf_counter()
    exported_bytes = 0
    from transcripts.models import Thread

    for thread in Thread.objects.filter(pk__in=result.thread_ids).iterator():
        exported_bytes += len(export_thread(thread, "canonical").content)
    export_seconds = time.perf_counter() - started
    with open("/proc/self/status") as status:
        peak_mb = next(int(ln.split()[1]) for ln in status if ln.startswith("VmHWM:")) / 1024
    print(f"file: {args.conversations} conversations, {total} messages, {size_mb:.0f} MB")
    print(f"{'step':<10} {'seconds':>8} {'messages/s':>12}")
    print(f"{'import':<10} {import_seconds:>8.1f} {stored / import_seconds:>12,.0f}")
    print(f"{'export':<10} {export_seconds:>8.1f} {stored / export_seconds:>12,.0f}")
    print(f"threads imported: {len(result.thread_ids)}, messages stored: {stored}")
    print(f"exported canonical JSON: {exported_bytes / 1e6:.0f} MB")
    print(f"peak RSS: {peak_mb:.0f} MB (target <= 300 MB); import target >= 20,000 messages/s")


if __name__ == "__main__":
    main()
