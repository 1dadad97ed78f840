"""Peak memory of imports: the hostile files of issue 24 and a generated ~50 MB ChatGPT export,
each imported (as a worker job imports it: `import_stream` on the stored file) in its own child
process, which prints its peak RSS above the baseline it measured just before the import (the
kernel's high-water mark reset after Django is set up). Goal: under 300 MB for every file.

    .venv/bin/python bench/bench_import_limits.py [--megabytes 50]

Each child runs under a 2 GB address-space cap, so a regression fails its row, not the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import setup_django
from bench_import import conversation

MB = 1 << 20
GOAL_MB = 300


def _zip(path: Path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, content in members.items():
            archive.writestr(name, content)


def depth_zip(path: Path) -> None:
    """The 541-byte zip: conversations.json nested 200 000 levels deep."""
    _zip(path, {"conversations.json": b"[" * 200_000 + b"]" * 200_000})


def depth_plain(path: Path) -> None:
    """A 1.2 MB plain file nested 600 000 levels deep (a worker job)."""
    path.write_bytes(b"[" * 600_000 + b"]" * 600_000)


def long_string_zip(path: Path) -> None:
    """A zip of one 300 MB JSON file (one string), written a piece at a time."""
    with (
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive,
        archive.open("conversations.json", "w", force_zip64=True) as member,
    ):
        member.write(b'[{"title": "')
        for _ in range(300):
            member.write(b"a" * MB)
        member.write(b'", "mapping": {}}]')


def image_references_zip(path: Path) -> None:
    """A zip whose one 10 MB image one message refers to 20 times."""
    pointer = {"content_type": "image_asset_pointer", "asset_pointer": "file-service://file-x"}
    content = {"content_type": "multimodal_text", "parts": [pointer] * 20}
    message = {"id": "a", "author": {"role": "user"}, "content": content, "create_time": 1}
    node: dict[str, object] = {"id": "a", "message": message, "parent": None, "children": []}
    item = {"title": "t", "create_time": 1, "mapping": {"a": node}, "current_node": "a"}
    _zip(path, {"conversations.json": json.dumps([item]).encode(), "file-x.png": b"\0" * 10 * MB})


def chatgpt_export(megabytes: int) -> Callable[[Path], None]:
    """A ChatGPT conversations.json of about megabytes MB, written one conversation at a time."""

    def write(path: Path) -> None:
        with path.open("wb") as out:
            out.write(b"[")
            index = 0
            while index == 0 or out.tell() < megabytes * MB:
                out.write((b"," if index else b"") + json.dumps(conversation(index, 40)).encode())
                index += 1
            out.write(b"]")

    return write


def baseline(path: Path) -> None:
    """A small valid export: the cost of an import that does nearly nothing."""
    chatgpt_export(0)(path)


def child(path: str) -> None:
    """Import path after measuring the baseline; print the outcome and the peak above it."""
    setup_django()
    from transcripts.errors import DomainError
    from transcripts.interchange import import_stream
    from transcripts.interchange.limits import memory_cap
    from transcripts.ledger.default_project import default_project

    project = default_project()
    Path("/proc/self/clear_refs").write_text("5")  # the high-water mark starts from here
    before = _status("VmRSS")
    started = time.perf_counter()
    try:
        with memory_cap(2 << 30), open(path, "rb") as handle:
            result = import_stream(handle, project=project)
        outcome = f"imported {result.report['messages']} messages"
    except DomainError as error:
        outcome = f"{error.status} {error.details.get('limit', '')}: {error.message[:70]}"
    except MemoryError:
        outcome = "MemoryError (over the 2 GB cap)"
    seconds = time.perf_counter() - started
    print(json.dumps({"outcome": outcome, "peak": _status("VmHWM") - before, "s": seconds}))


def _status(field: str) -> int:
    """A field of /proc/self/status, in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024
    raise LookupError(field)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--megabytes", type=int, default=50)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    setup_django()  # the throwaway cluster the children share (DATABASE_URL is now set)
    # The zips past the ratio are measured again with the ratio lifted: the next limit holds.
    no_ratio = {"TRANSCRIPTS_MAX_ZIP_RATIO": str(1 << 30)}
    cases: list[tuple[str, str, Callable[[Path], None], dict[str, str]]] = [
        ("baseline (one small conversation)", "base.json", baseline, {}),
        ("depth 200 000 in a zip", "depth.zip", depth_zip, {}),
        ("depth 600 000, plain 1.2 MB", "depth.json", depth_plain, {}),
        ("300 MB string in a zip", "string.zip", long_string_zip, {}),
        ("  the same, ratio lifted", "string.zip", long_string_zip, no_ratio),
        ("10 MB image referenced 20 times", "refs.zip", image_references_zip, {}),
        ("  the same, ratio lifted", "refs.zip", image_references_zip, no_ratio),
        (
            f"ChatGPT export, {args.megabytes} MB",
            "export.json",
            chatgpt_export(args.megabytes),
            {},
        ),
    ]
    print(f"{'file':36} {'size':>10} {'peak MB':>8} {'s':>6}  outcome")
    with tempfile.TemporaryDirectory() as folder:
        for label, name, write, env in cases:
            path = Path(folder) / name
            write(path)
            run = subprocess.run(
                [sys.executable, __file__, "--child", str(path)],
                capture_output=True,
                text=True,
                env={**os.environ, **env},
                check=False,
            )
            lines = run.stdout.strip().splitlines()
            if run.returncode or not lines:
                print(f"{label:36} failed: {run.stderr.strip().splitlines()[-1:]}")
                continue
            row = json.loads(lines[-1])
            peak = row["peak"] / MB
            flag = "" if peak < GOAL_MB else f"  over the {GOAL_MB} MB goal"
            size = path.stat().st_size
            print(f"{label:36} {size:>10} {peak:>8.1f} {row['s']:>6.1f}  {row['outcome']}{flag}")
            path.unlink()


if __name__ == "__main__":
    main()
