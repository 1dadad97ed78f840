"""The export API's bytes, pinned: every format of two fixed threads (fixed ids and times)
against golden files recorded before exports streamed (issue 30), so streaming changes how
the bytes are written, never which bytes.

The threads are imported from `golden_exports/source-*.json` (canonical documents with
events, scores and feedback: every branch, tool calls and results, reasoning, a file, a
redacted message, a flagged one, failed and cancelled runs). UPDATE_GOLDEN=1 writes the files
again (only for a deliberate change of an export's bytes).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.api.conftest import ApiClient
from tests.base import make_user
from transcripts import interchange
from transcripts.interchange import export_stream
from transcripts.ledger.default_project import default_project
from transcripts.ledger.projects import set_member
from transcripts.ledger.tokens import issue_token
from transcripts.models import Score, Thread

pytestmark = pytest.mark.django_db

GOLDEN = Path(__file__).resolve().parent / "golden_exports"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
SOURCES = ("branches", "linear")
# (name of the golden file, query): every format, and the options that change the bytes.
QUERIES: list[tuple[str, dict[str, str]]] = [
    *((key, {"format": key}) for key in interchange.EXPORT_FORMATS),
    ("canonical-events", {"format": "canonical", "events": "true"}),
    ("canonical-leaf", {"format": "canonical", "leaf": "{leaf}"}),
    ("threadprotocol-leaf", {"format": "threadprotocol", "leaf": "{leaf}"}),
    ("threadprotocol-all", {"format": "threadprotocol", "branches": "all"}),
    ("threadprotocol-active", {"format": "threadprotocol", "branches": "active"}),
    ("openai-leaf", {"format": "openai", "leaf": "{leaf}"}),
    ("markdown-leaf", {"format": "markdown", "leaf": "{leaf}"}),
]
# A leaf off the active path (the first answer, replaced by a regeneration).
LEAVES = {"branches": "01HZZ010000000000000000004", "linear": "01HZZ020000000000000000004"}


def _imported(source: str) -> Thread:
    document = json.loads((GOLDEN / f"source-{source}.json").read_text())
    set_member(project=default_project(), user=make_user("golden"), role="viewer")
    [thread_id] = interchange.import_data(document, project=default_project()).thread_ids
    assert thread_id == document["thread"]["id"]
    # The import stamps the thread's own times: give them back the document's.
    Thread.objects.filter(pk=thread_id).update(
        created_at=document["thread"]["createdAt"], updated_at=document["thread"]["updatedAt"]
    )
    # and its scores the ids they had there (an import gives them new ones).
    for score in document.get("scores", []):
        Score.objects.filter(thread_id=thread_id, name=score["name"]).update(id=score["id"])
    return Thread.objects.get(pk=thread_id)


def _reader() -> ApiClient:
    _, raw = issue_token(project=default_project(), name="golden", scopes=("read",))
    return ApiClient(raw)


@pytest.mark.parametrize("batches", ["default", "tiny"])
@pytest.mark.parametrize("source", SOURCES)
def test_every_export_writes_the_bytes_it_wrote_before_streaming(
    source: str, batches: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if batches == "tiny":  # every batch boundary of the streamed exports is crossed
        for name in ("MESSAGE_BATCH", "RUN_BATCH", "ACTION_BATCH"):
            monkeypatch.setattr(export_stream, name, 2)
        monkeypatch.setattr(export_stream, "CHUNK_BYTES", 100)
    thread = _imported(source)
    reader = _reader()
    for name, query in QUERIES:
        params = {k: v.format(leaf=LEAVES[source]) for k, v in query.items()}
        response = reader.get(f"/threads/{thread.id}/export", **params)
        assert response.status_code == 200, (name, response.content)
        body = b"".join(response.streaming_content)
        path = GOLDEN / f"{source}.{name}.out"
        if UPDATE and batches == "default":
            path.write_bytes(body)
        assert body == path.read_bytes(), f"{path.name} changed"
        # The whole-string path (the command line's) writes the same bytes.
        whole = interchange.export_thread(
            thread,
            params["format"],
            leaf=params.get("leaf"),
            with_events=params.get("events") == "true",
            branches=params.get("branches"),
        )
        assert whole.content.encode() == body, name
