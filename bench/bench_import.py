"""Import a generated ChatGPT export and export it back as canonical JSON.

Prints messages/s for both directions and the peak RSS of this process.
Targets: import >= 20,000 messages/s, peak RSS <= 300 MB.

    .venv/bin/python bench/bench_import.py [--conversations 2000] [--messages 100]

With --before REF (a git revision, e.g. main), the same measurement also runs on that revision's
code (`git archive`d into a temporary directory), before and after alternating for --rounds
rounds, each in a process and on a database of its own, and the import figure is given with
the before code's best as its baseline:

    .venv/bin/python bench/bench_import.py --conversations 500 --before main --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _record import figure
from _setup import setup_django

BENCH = Path(__file__).resolve().parent
GOAL = 20_000  # imported messages/s
RSS_GOAL_MB = 300  # the import's peak RSS


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


def backend_cpu_seconds() -> float | None:
    """CPU time so far of this connection's PostgreSQL backend (user and system), when it runs
    on this machine (the embedded cluster); None when it cannot be read."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(conversations: int, messages: int) -> dict[str, Any]:
    """Import a generated export and export it back; the figures of this process."""
    setup_django(durable=True)
    from transcripts.interchange import export_thread, import_stream
    from transcripts.ledger.default_project import default_project
    from transcripts.models import Message

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "conversations.json"
        total = write_export(path, conversations, messages)
        size_mb = path.stat().st_size / 1e6
        backend = backend_cpu_seconds()
        started, cpu = time.perf_counter(), time.process_time()
        with path.open("rb") as handle:
            result = import_stream(handle, "chatgpt", project=default_project())
        import_seconds = time.perf_counter() - started
        import_cpu = time.process_time() - cpu
        backend_after = backend_cpu_seconds()
    stored = Message.objects.count()
    started = time.perf_counter()
    exported_bytes = 0
    from transcripts.models import Thread

    for thread in Thread.objects.filter(pk__in=result.thread_ids).iterator():
        exported_bytes += len(export_thread(thread, "canonical").content)
    export_seconds = time.perf_counter() - started
    with open("/proc/self/status") as status:
        peak_mb = next(int(ln.split()[1]) for ln in status if ln.startswith("VmHWM:")) / 1024
    return {
        "conversations": conversations,
        "total": total,
        "size_mb": size_mb,
        "import_seconds": import_seconds,
        "export_seconds": export_seconds,
        "threads": len(result.thread_ids),
        "stored": stored,
        "exported_mb": exported_bytes / 1e6,
        "peak_mb": peak_mb,
        "import_rate": stored / import_seconds,
        # CPU time of this process (not PostgreSQL's) per message: less swayed by the load.
        "import_cpu_us": import_cpu / stored * 1e6,
        # CPU time of PostgreSQL's backend per message (the COPY, the commit's checks, the
        # ANALYZE after it), when the database runs on this machine.
        "import_pg_cpu_us": (
            (backend_after - backend) / stored * 1e6
            if backend is not None and backend_after is not None
            else None
        ),
        "export_rate": stored / export_seconds,
    }


def show(run: dict[str, Any]) -> None:
    """The figures of one measurement, as this script has always printed them."""
    print(
        f"file: {run['conversations']} conversations, {run['total']} messages,"
        f" {run['size_mb']:.0f} MB"
    )
    print(f"{'step':<10} {'seconds':>8} {'messages/s':>12}")
    print(f"{'import':<10} {run['import_seconds']:>8.1f} {run['import_rate']:>12,.0f}")
    print(f"{'export':<10} {run['export_seconds']:>8.1f} {run['export_rate']:>12,.0f}")
    print(f"threads imported: {run['threads']}, messages stored: {run['stored']}")
    print(f"import CPU of this process: {run['import_cpu_us']:.0f} us/message")
    if run.get("import_pg_cpu_us") is not None:
        print(f"import CPU of PostgreSQL's backend: {run['import_pg_cpu_us']:.0f} us/message")
    print(f"exported canonical JSON: {run['exported_mb']:.0f} MB")
    print(
        f"peak RSS: {run['peak_mb']:.0f} MB (target <= {RSS_GOAL_MB} MB);"
        f" import target >= {GOAL:,} messages/s"
    )


def in_process(tree: Path, conversations: int, messages: int) -> dict[str, Any]:
    """measure() run by this script in a process of its own on the code of tree."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "BENCH_RECORD")}
    out = subprocess.run(
        [
            sys.executable,
            str(tree / "bench" / Path(__file__).name),
            "--json",
            "--conversations",
            str(conversations),
            "--messages",
            str(messages),
        ],
        cwd=tree,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    measured: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return measured


def before_tree(ref: str, into: Path) -> Path:
    """The code of revision ref, with this script and its helpers, in a directory of into."""
    tree = into / "before"
    tree.mkdir()
    archive = subprocess.run(
        ["git", "archive", ref], cwd=BENCH.parent, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    for name in (Path(__file__).name, "_setup.py", "_record.py"):
        shutil.copy(BENCH / name, tree / "bench" / name)
    return tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--conversations", type=int, default=2000)
    parser.add_argument("--messages", type=int, default=100)
    parser.add_argument("--before", help="a git revision to measure in the same run (A/B)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.json:
        print(json.dumps(measure(args.conversations, args.messages)))
        return
    if not args.before:
        run = measure(args.conversations, args.messages)
        show(run)
        report(run, None)
        return
    befores: list[dict[str, Any]] = []
    afters: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        tree = before_tree(args.before, Path(tmp))
        for round_ in range(1, args.rounds + 1):
            for label, where, runs in (("before", tree, befores), ("after", BENCH.parent, afters)):
                runs.append(in_process(where, args.conversations, args.messages))
                load = os.getloadavg()[0]
                print(
                    f"round {round_} {label:<6} import {runs[-1]['import_rate']:>8,.0f} msg/s"
                    f"  CPU {runs[-1]['import_cpu_us']:>4.0f} us/msg"
                    f" + PostgreSQL {runs[-1].get('import_pg_cpu_us') or 0:>4.0f}"
                    f"  export {runs[-1]['export_rate']:>8,.0f} msg/s"
                    f"  peak RSS {runs[-1]['peak_mb']:>4.0f} MB  (load {load:.1f})",
                    flush=True,
                )
    best = max(afters, key=lambda r: r["import_rate"])
    show(best)
    report(best, max(befores, key=lambda r: r["import_rate"]), args.before)


def report(run: dict[str, Any], before: dict[str, Any] | None, ref: str = "") -> None:
    """The FIGURE lines: import messages/s (against the before code when measured) and RSS."""
    messages = f"{run['stored']:,} messages"
    figure(
        f"import, ChatGPT export of {messages}",
        run["import_rate"],
        "messages/s",
        goal=f">= {GOAL:,}",
        ok=run["import_rate"] >= GOAL,
        baseline=(f"{ref} code, same run", before["import_rate"]) if before else None,
        note=(
            f"best of the rounds; load {os.getloadavg()[0]:.1f} at the end"
            if before
            else "no baseline in this run (use --before REF)"
        ),
    )
    figure(
        f"import CPU of the importing process, {messages}",
        run["import_cpu_us"],
        "us/message",
        baseline=(f"{ref} code, same run", before["import_cpu_us"]) if before else None,
        note="Python's share; PostgreSQL's backend works beside it",
    )
    if run.get("import_pg_cpu_us") is not None:
        pg_before = before.get("import_pg_cpu_us") if before else None
        figure(
            f"import CPU of PostgreSQL's backend, {messages}",
            run["import_pg_cpu_us"],
            "us/message",
            baseline=(f"{ref} code, same run", pg_before) if pg_before else None,
            note="the COPY, the commit's checks and the ANALYZE after it",
        )
    figure(
        f"import peak RSS, {messages}",
        run["peak_mb"],
        "MB",
        goal=f"<= {RSS_GOAL_MB}",
        ok=run["peak_mb"] <= RSS_GOAL_MB,
        baseline=(f"{ref} code, same run", before["peak_mb"]) if before else None,
    )


if __name__ == "__main__":
    main()
