"""Generation end to end: a real worker process, the ledger and PostgreSQL."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from tests.factories import ask, conversation, user_message
from tests.generation.support import run_status, wait_for
from transcripts import ledger, selectors
from transcripts.errors import InvalidInput, ThreadLocked
from transcripts.generation.generators import (
    CHOICES,
    GENERATORS,
    GenerationRequest,
    Generator,
    StreamEvent,
)
from transcripts.generation.runner import generate
from transcripts.generation.start import start_generation
from transcripts.generation.tasks import reap_expired_runs
from transcripts.models import Message, Run, RunStatus

pytestmark = pytest.mark.django_db(transaction=True)
FAST = {"delayMs": 0}


def _committed(run_id: str) -> bool:
    return run_status(run_id) == RunStatus.COMMITTED


def test_it_regenerates_an_answer_and_supersedes_the_old_one(start_worker):
    thread = conversation(turns=1)
    prompt = Message.objects.get(thread=thread, active=True, role="user")
    old_answer = Message.objects.get(thread=thread, active=True, role="assistant")
    start_worker()
    run = start_generation(thread=thread, fork_from=prompt.id, parameters=FAST)
    assert run.status == RunStatus.QUEUED
    wait_for(lambda: _committed(run.id), what="the regeneration to commit")

    old_answer.refresh_from_db()
    assert not old_answer.active
    new_path = list(Message.objects.filter(thread=thread, active=True).order_by("depth"))
    assert new_path[0] == prompt
    assert all(m.run_id == run.id for m in new_path[1:])
    assert Run.objects.get(pk=old_answer.run_id).superseded_by_id == run.id
    thread.refresh_from_db()
    assert thread.head_id == new_path[-1].id
    assert any(p["type"] == "text" and p["text"] for p in new_path[-1].parts)


def test_it_edits_a_user_message_and_answers_the_edit(start_worker):
    thread = conversation(turns=1)
    edited = user_message("an edited question")
    start_worker()
    run = start_generation(
        thread=thread, fork_from=None, prefix=[{"seq": 1, **_event(edited)}], parameters=FAST
    )
    wait_for(lambda: _committed(run.id), what="the edit to commit")
    path = list(Message.objects.filter(thread=thread, active=True).order_by("depth"))
    assert path[0].parts == [{"type": "text", "text": "an edited question"}]
    assert path[0].run_id == run.id and path[-1].role == "assistant"


def test_it_replies_at_the_head(start_worker):
    thread = conversation(turns=1)
    ask(thread, "and a follow-up?")
    start_worker()
    run = start_generation(thread=thread, parameters=FAST)
    wait_for(lambda: _committed(run.id), what="the reply to commit")
    path = list(Message.objects.filter(thread=thread, active=True).order_by("depth"))
    assert [m.role for m in path[:3]] == ["user", "assistant", "user"]
    assert path[2].parts[0]["text"] == "and a follow-up?"
    assert path[-1].run_id == run.id


def test_it_stops_when_the_run_is_cancelled_mid_stream(start_worker):
    thread = conversation(turns=1)
    start_worker()
    run = start_generation(thread=thread, parameters={"delayMs": 150, "maxTokens": 400})
    wait_for(lambda: Run.objects.get(pk=run.id).last_seq >= 2, what="the first tokens")
    ledger.cancel_run(run=run.id)
    stored = Run.objects.get(pk=run.id).last_seq
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    assert stored >= 2
    assert not Message.objects.filter(run=run).exists()
    # The worker's next append is refused: no event lands after the cancel.
    time.sleep(0.6)
    assert Run.objects.get(pk=run.id).last_seq == stored


def test_a_killed_worker_leaves_a_failed_run_once_its_lease_expires(start_worker, settings):
    settings.TRANSCRIPTS_LEASE_SECONDS = 1
    thread = conversation(turns=1)
    worker = start_worker(TRANSCRIPTS_LEASE_SECONDS="1")
    run = start_generation(thread=thread, parameters={"delayMs": 300})
    wait_for(lambda: Run.objects.get(pk=run.id).last_seq >= 1, what="the worker to start")
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    wait_for(
        lambda: bool(reap_expired_runs()) or run_status(run.id) == "failed",
        timeout=10,
        what="the lease to expire",
    )
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    assert run.error is not None and run.error["code"] == "lease_expired"
    assert run.last_seq >= 1


def test_a_killed_worker_s_run_is_queued_again_when_configured(start_worker, settings):
    settings.TRANSCRIPTS_LEASE_SECONDS = 1
    settings.TRANSCRIPTS_REQUEUE_EXPIRED = True
    thread = conversation(turns=1)
    worker = start_worker(TRANSCRIPTS_LEASE_SECONDS="1")
    run = start_generation(thread=thread, parameters={"delayMs": 300})
    wait_for(lambda: Run.objects.get(pk=run.id).last_seq >= 1, what="the worker to start")
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    wait_for(lambda: bool(reap_expired_runs()), timeout=10, what="the lease to expire")
    retry = Run.objects.get(metadata__retryOf=run.id)
    assert retry.fork_from_id == run.fork_from_id and retry.parameters == run.parameters
    start_worker()
    retry.parameters = FAST
    retry.save(update_fields=["parameters"])
    wait_for(lambda: run_status(retry.id) in ("committed", "streaming"), what="the retry")
    assert run_status(run.id) == RunStatus.FAILED


def test_a_locked_thread_refuses_generation():
    thread = conversation(turns=1)
    thread.locked = True
    thread.save()
    with pytest.raises(ThreadLocked):
        start_generation(thread=thread)


def test_bad_parameters_are_refused_and_nothing_is_queued():
    thread = conversation(turns=1)
    before = Run.objects.count()
    with pytest.raises(InvalidInput):
        start_generation(thread=thread, parameters={"temperature": "hot"})
    with pytest.raises(InvalidInput):
        start_generation(thread=thread, generator="nope")
    assert Run.objects.count() == before


def _event(item):
    kind, data = item
    return {"kind": kind, "data": data}


def test_the_external_generator_leaves_the_run_queued(settings):
    settings.TRANSCRIPTS_EXTERNAL_GENERATOR = True
    thread = conversation(turns=1)
    run = start_generation(thread=thread, generator="external", model="my-agent")
    assert run_status(run.id) == RunStatus.QUEUED
    assert run.generator == "external" and run.model == "my-agent"


def test_the_wrappers_fork_where_each_action_should():
    from transcripts.generation import start as generation

    thread = conversation(turns=1)
    question = Message.objects.get(thread=thread, active=True, role="user")
    answer = Message.objects.get(thread=thread, active=True, role="assistant")

    regenerated = generation.start_regenerate(message=answer)
    assert regenerated.fork_from_id == question.id and regenerated.status == RunStatus.QUEUED

    edited = generation.start_edit(message=question, text="edited")
    assert edited.fork_from_id is None
    assert selectors.project_run(edited).messages[0]["parts"][0]["text"] == "edited"

    reply = generation.start_reply(thread=thread, text="more please", parameters=FAST)
    asked = Message.objects.get(pk=reply.fork_from_id)
    assert asked.role == "user" and asked.parent_id == answer.id and asked.active

    with pytest.raises(InvalidInput):
        generation.start_regenerate(message=question)
    with pytest.raises(InvalidInput):
        generation.start_edit(message=answer, text="x")
    with pytest.raises(InvalidInput):
        generation.start_reply(thread=thread, text="   ")
    assert selectors.last_choice(thread, among=CHOICES)["generator"] == "demo"


def test_retry_queues_the_same_generation_again():
    from transcripts.generation import start as generation

    thread = conversation(turns=1)
    question = Message.objects.get(thread=thread, active=True, role="user")
    failed = generation.start_edit(message=question, text="again", generator="demo", model="m2")
    ledger.fail_run(run=failed, error="boom")
    failed.refresh_from_db()
    retried = generation.retry(run=failed)
    assert retried.metadata["retryOf"] == failed.id
    assert (retried.fork_from_id, retried.model) == (failed.fork_from_id, "m2")
    assert selectors.project_run(retried).messages[0]["parts"][0]["text"] == "again"
    with pytest.raises(InvalidInput):
        generation.retry(run=retried)


class _SlowGenerator(Generator):
    """Thinks for longer than a lease before its first word, while another worker reaps."""

    name: ClassVar[str] = "slow"

    def stream(self, request: GenerationRequest) -> Iterator[StreamEvent]:
        yield ("step-started", {})
        deadline = time.monotonic() + 2.5
        while time.monotonic() < deadline:
            reap_expired_runs()  # what every other worker does every few seconds
            time.sleep(0.2)
        yield ("text-delta", {"delta": "Done thinking."})
        yield ("step-finished", {"finishReason": "stop"})


def test_the_heartbeat_keeps_the_lease_of_a_generator_that_is_slow_to_answer(settings, monkeypatch):
    settings.TRANSCRIPTS_LEASE_SECONDS = 1
    monkeypatch.setitem(GENERATORS, "slow", _SlowGenerator)
    thread = conversation(turns=1)
    run = start_generation(thread=thread, generator="slow")
    assert generate(run.id, worker="slow-worker") == RunStatus.COMMITTED
    run.refresh_from_db()
    assert run.status == RunStatus.COMMITTED and run.error is None
    assert run.messages.get().parts == [{"type": "text", "text": "Done thinking."}]


def test_a_worker_stops_when_its_run_is_cancelled_during_a_long_pause(settings, monkeypatch):
    settings.TRANSCRIPTS_LEASE_SECONDS = 0.6
    monkeypatch.setitem(GENERATORS, "slow", _SlowGenerator)
    thread = conversation(turns=1)
    run = start_generation(thread=thread, generator="slow")
    canceller = threading.Timer(0.5, lambda: ledger.cancel_run(run=run.id))
    canceller.start()
    try:
        assert generate(run.id, worker="w") == RunStatus.CANCELLED
    finally:
        canceller.join()
    assert Run.objects.get(pk=run.id).last_seq == 1  # nothing after the cancel


def test_an_expired_edit_is_queued_again_with_the_edited_message(settings):
    from transcripts.generation import start as generation

    settings.TRANSCRIPTS_REQUEUE_EXPIRED = True
    thread = conversation(turns=1)
    question = Message.objects.get(thread=thread, active=True, role="user")
    edit = generation.start_edit(message=question, text="the edited question")
    ledger.claim_run(run=edit.id, worker="dead-worker", lease_seconds=0.01)
    time.sleep(0.05)
    assert reap_expired_runs() == [edit.id]
    again = Run.objects.get(metadata__retryOf=edit.id)
    assert again.status == RunStatus.QUEUED and again.fork_from_id == edit.fork_from_id
    [first] = selectors.project_run(again).messages
    assert first["role"] == "user"
    assert first["parts"] == [{"type": "text", "text": "the edited question"}]


class _Webhook(ThreadingHTTPServer):
    received: list[tuple[str, dict[str, Any]]]


class _WebhookHandler(BaseHTTPRequestHandler):
    server: _Webhook

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.server.received.append((self.path, body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_a_worker_notifies_the_webhook_when_an_external_run_is_queued(start_worker, settings):
    server = _Webhook(("127.0.0.1", 0), _WebhookHandler)
    server.received = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/hooks/transcripts"
    settings.TRANSCRIPTS_EXTERNAL_WEBHOOK_URL = url
    try:
        start_worker(TRANSCRIPTS_EXTERNAL_WEBHOOK_URL=url)
        thread = conversation(turns=1)
        run = start_generation(thread=thread, generator="external", model="my-agent")
        wait_for(lambda: bool(server.received), what="the webhook call")
        assert server.received == [
            (
                "/hooks/transcripts",
                {
                    "event": "run.queued",
                    "runId": run.id,
                    "threadId": thread.id,
                    "model": "my-agent",
                },
            )
        ]
        # The worker only notified: the run waits, queued, for the outside stream layer.
        assert run_status(run.id) == RunStatus.QUEUED
    finally:
        server.shutdown()


def test_an_edit_stays_queued_until_its_generator_picks_it_up(settings):
    settings.TRANSCRIPTS_EXTERNAL_GENERATOR = True
    from transcripts.generation import start as generation

    thread = conversation(turns=1)
    question = Message.objects.get(thread=thread, active=True, role="user")
    edit = generation.start_edit(message=question, text="edited", generator="external")
    # Queued, so an outside stream layer polling GET /api/v1/runs?status=queued finds it.
    assert run_status(edit.id) == RunStatus.QUEUED
    assert list(Run.objects.filter(status="queued", generator="external")) == [edit]
    claimed = ledger.claim_run(run=edit.id, worker="agent", lease_seconds=30)
    assert claimed.status == RunStatus.STREAMING and claimed.last_seq == 1


def test_events_are_appended_in_batches_not_one_transaction_per_token():
    from transcripts.models import Event

    thread = conversation(turns=1)
    # At a realistic pace (~10 ms a token) a batch holds the tokens of ~50 ms.
    run = start_generation(thread=thread, parameters={"delayMs": 10, "maxTokens": 60})
    assert generate(run.id, worker="w") == RunStatus.COMMITTED
    stamps = list(Event.objects.filter(run_id=run.id).values_list("at", flat=True))
    batches = len(set(stamps))  # every append stamps its events with one time
    assert len(stamps) >= 20
    assert batches <= len(stamps) / 2, f"{len(stamps)} events in {batches} appends"
    # At full speed: the first event alone (so the page shows it at once), then 64 at a time.
    fast = start_generation(thread=thread, parameters=FAST)
    assert generate(fast.id, worker="w") == RunStatus.COMMITTED
    stamps = list(Event.objects.filter(run_id=fast.id).values_list("at", flat=True))
    assert len(set(stamps)) <= 2 + len(stamps) // 64


def test_the_last_choice_is_the_latest_run_of_one_of_our_generators():

    thread = conversation(turns=1)
    assert selectors.last_choice(thread, among=CHOICES) == {
        "generator": "demo",
        "model": "",
        "parameters": {},
    }
    start_generation(thread=thread, model="demo-9", parameters={"temperature": 0.3})
    # A run some agent runtime posted under its own name is not offered as a generator.
    ledger.begin_run(thread=thread, generator="pydantic-ai", model="claude-x")
    assert selectors.last_choice(thread, among=CHOICES) == {
        "generator": "demo",
        "model": "demo-9",
        "parameters": {"temperature": 0.3},
    }
