"""The chat backend driven by the real `ai` package (v6) from Node: `DefaultChatTransport`
sends a turn, leaves mid-answer, resumes with `reconnectToStream`, reads the stored
UIMessages back (valid for `validateUIMessages`) and sends a second turn with them.
Skipped, saying why, without Node and npm or the npm registry."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.api import conftest as api_fixtures
from tests.generation.support import wait_for
from transcripts.ledger.default_project import default_project
from transcripts.models import Message, RunStatus, Thread

pytestmark = pytest.mark.django_db(transaction=True)

SCRIPT = Path(__file__).parent / "fixtures" / "chat_transport.mjs"
# Installed once and kept (ignored by git): a second run needs no registry.
NODE_DIR = api_fixtures.ROOT / ".data" / "node" / "chat-ai6"
PACKAGE = "ai@6"


def _run(
    command: list[str], cwd: Path, timeout: int, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="module")
def node_dir() -> Path:
    """A directory with the AI SDK installed from the npm registry (once)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Node and npm are not installed: the AI SDK transport test needs them")
    if not (NODE_DIR / "node_modules" / "ai" / "package.json").exists():
        NODE_DIR.mkdir(parents=True, exist_ok=True)
        (NODE_DIR / "package.json").write_text('{"name": "chat-transport", "private": true}')
        try:
            install = _run(["npm", "install", "--no-audit", "--no-fund", PACKAGE], NODE_DIR, 300)
        except subprocess.TimeoutExpired:
            pytest.skip("npm install of the AI SDK took longer than 300 s")
        if install.returncode != 0:
            pytest.skip(f"npm install of the AI SDK failed: {install.stderr.strip()[-300:]}")
    shutil.copy(SCRIPT, NODE_DIR / SCRIPT.name)
    return NODE_DIR


def _text(message: dict[str, Any]) -> str:
    return "".join(p["text"] for p in message["parts"] if p["type"] == "text")


def test_use_chats_transport_sends_resumes_and_continues_a_chat(
    node_dir, live_server_asgi, start_worker, make_token
):
    start_worker()
    run = _run(
        ["node", SCRIPT.name],
        node_dir,
        180,
        CHAT_API=f"{live_server_asgi.url}/api/v1/chat",
        CHAT_TOKEN=make_token("ingest", "read"),
        CHAT_ID="node-chat-1",
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)

    before, resumed, message = out["beforeReload"], out["resumed"], out["message"]
    assert before[0]["type"] == "start" and resumed[0]["type"] == "start"
    assert resumed[0]["messageId"] == before[0]["messageId"] == message["id"]
    assert resumed[-1]["type"] == "finish"
    seen = "".join(c["delta"] for c in before if c["type"] == "text-delta")
    assert seen and _text(message).startswith(seen)  # the resumed stream replays from the start
    assert out["nothingAfterwards"]  # the answer is done: reconnecting finds nothing (204)

    thread = Thread.objects.get(project=default_project(), external_id="node-chat-1")
    stored = out["stored"]
    assert [m["role"] for m in stored] == ["user", "assistant"]
    assert stored[1]["id"] == message["id"] and _text(stored[1]) == _text(message)
    second = out["secondMessage"]
    assert second["role"] == "assistant" and _text(second)
    wait_for(
        lambda: thread.runs.filter(status=RunStatus.COMMITTED).count() == 4,
        what="both turns committed",
    )
    path = Message.objects.filter(thread=thread, active=True).order_by("depth")
    user_texts = [
        "".join(p["text"] for p in m.parts if p["type"] == "text") for m in path if m.role == "user"
    ]
    assert user_texts == ["How do B-tree indexes stay balanced?", "And when pages split?"]
    assert path.last().metadata.get("finishReason") == "stop"
