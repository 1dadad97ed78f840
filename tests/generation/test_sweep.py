"""The worker process's chores: the sweep fails runs of dead workers and stores snapshots, and
a worker keeps its own run's snapshot as it streams. Readers do neither."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from tests.api.conftest import ApiClient
from tests.factories import conversation, events, make_thread
from transcripts import ledger, selectors
from transcripts.generation.generators import GENERATORS, GenerationRequest, Generator, StreamEvent
from transcripts.generation.runner import generate
from transcripts.generation.start import start_generation
from transcripts.ledger.default_project import default_project
from transcripts.ledger.projects import set_member
from transcripts.ledger.tokens import issue_token
from transcripts.models import Run, RunStatus
from transcripts.worker.sweeps import sweep

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_run_whose_lease_expired_is_failed_by_one_sweep_not_by_its_readers(
    client: Client,
) -> None:
    run, _ = ledger.begin_run(thread=make_thread())
    ledger.append_events(run=run, events=events(("text-delta", {"delta": "half an answ"})))
    ledger.claim_run(run=run, worker="dead-worker", lease_seconds=0.01)
    time.sleep(0.05)
    before = Run.objects.values().get(pk=run.pk)

    _, token = issue_token(project=default_project(), name="reader", scopes=["read"])
    assert ApiClient(token).get(f"/runs/{run.id}/messages").status_code == 200
    reader = User.objects.create_user("reader", password="pw")
    set_member(project=default_project(), user=reader, role="viewer")
    client.force_login(reader)
    for page in ("run_detail", "run_live"):
        assert client.get(reverse(page, args=[run.id])).status_code == 200
    assert Run.objects.values().get(pk=run.pk) == before

    assert sweep().expired == [run.id]
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    assert run.error is not None and run.error["code"] == "lease_expired"
    assert sweep().expired == []


def test_one_sweep_stores_the_snapshot_of_a_long_run_fed_through_the_api(settings: Any) -> None:
    settings.TRANSCRIPTS_SNAPSHOT_EVERY = 10
    run, _ = ledger.begin_run(thread=make_thread())
    ledger.append_events(
        run=run, events=events(*[("text-delta", {"delta": f"{n} "}) for n in range(12)])
    )
    assert sweep().snapshotted == [run.id]
    run.refresh_from_db()
    assert run.snapshot_seq == 12 and run.status == RunStatus.STREAMING
    assert sweep().snapshotted == []


class _LongGenerator(Generator):
    """Streams 200 words, noting the snapshot the worker has stored before the last one."""

    name: ClassVar[str] = "long"
    seen_snapshot_seq: ClassVar[int] = 0

    def stream(self, request: GenerationRequest) -> Iterator[StreamEvent]:
        for n in range(200):
            yield ("text-delta", {"delta": f"word{n} "})
        stored = Run.objects.values_list("snapshot_seq", flat=True).get(pk=request.run_id)
        type(self).seen_snapshot_seq = stored
        yield ("step-finished", {"finishReason": "stop"})


def test_a_worker_stores_its_run_s_snapshot_as_it_streams(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.TRANSCRIPTS_SNAPSHOT_EVERY = 50
    monkeypatch.setitem(GENERATORS, "long", _LongGenerator)
    run = start_generation(thread=conversation(turns=1), generator="long")
    assert generate(run.id, worker="w") == RunStatus.COMMITTED
    # Stored mid-stream, before commit stores the final one (at seq 201).
    assert 50 <= _LongGenerator.seen_snapshot_seq <= 200
    text = selectors.project_run(run.id).messages[0]["parts"][0]["text"]
    assert text == "".join(f"word{n} " for n in range(200))
