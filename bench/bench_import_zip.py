"""Import a generated ChatGPT export zip (split conversations-NNN.json files and one image per
conversation) and print messages/s, the report's counts and the peak RSS of this process.

    .venv/bin/python bench/bench_import_zip.py [--conversations 1000] [--messages 50] [--split 250]
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import setup_django
from bench_import import conversation

PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def write_zip(path: Path, conversations: int, messages: int, split: int) -> int:
    """Write the export zip one split at a time; returns the message count."""
    total = 0
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for start in range(0, conversations, split):
            items = []
            for index in range(start, min(start + split, conversations)):
                item = conversation(index, messages)
                first = next(n for n in item["mapping"].values() if n["message"])
                pointer = f"sediment://file_{index:08x}"
                first["message"]["content"] = {
                    "content_type": "multimodal_text",
                    "parts": [
                        {"content_type": "image_asset_pointer", "asset_pointer": pointer},
                        "?",
                    ],
                }
                archive.writestr(f"file_{index:08x}-image.png", PIXEL)
                total += sum(1 for node in item["mapping"].values() if node["message"])
                items.append(item)
            archive.writestr(f"conversations-{start // split:03d}.json", json.dumps(items))
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--conversations", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=50)
    parser.add_argument("--split", type=int, default=250)
    args = parser.parse_args()
    setup_django(durable=True)
    from transcripts.interchange import import_stream
    from transcripts.ledger.default_project import default_project

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "chatgpt-export.zip"
        total = write_zip(path, args.conversations, args.messages, args.split)
        size_mb = path.stat().st_size / 1e6
        started = time.perf_counter()
        with path.open("rb") as handle:
            result = import_stream(handle, project=default_project())
        seconds = time.perf_counter() - started
    with open("/proc/self/status") as status:
        peak_mb = next(int(ln.split()[1]) for ln in status if ln.startswith("VmHWM:")) / 1024
    report = result.report
    print(f"zip: {args.conversations} conversations in splits of {args.split}, {size_mb:.1f} MB")
    print(f"import: {seconds:.1f} s, {total / seconds:,.0f} messages/s")
    print(
        f"report: {report['threads']} threads, {report['messages']} messages, "
        f"{report['branches']} branches, {report['filesInlined']} files inlined, "
        f"{report['skippedTotal']} skipped"
    )
    print(f"peak RSS: {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
