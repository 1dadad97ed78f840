"""Generation: start runs for a generator, and the worker loop that streams them into the ledger."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from transcripts import ledger
from transcripts.errors import Conflict, DomainError, GeneratorError, InvalidInput, RunClosed
from transcripts.generation.generators import (
    EXTERNAL,
    GENERATORS,
    GenerationRequest,
    get_generator,
)
from transcripts.models import Message, Run, RunStatus, Thread
from transcripts.selectors import path_to

logger = logging.getLogger(__name__)

FLUSH_SECONDS = 0.05
FLUSH_EVENTS = 64


def lease_seconds() -> float:
    """How long a worker's lease lasts without a heartbeat."""
    return float(getattr(settings, "TRANSCRIPTS_LEASE_SECONDS", 30))


def worker_name() -> str:
    """This process's worker identity."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _clean_parameters(parameters: Mapping[str, Any] | None) -> dict[str, Any]:
    params = dict(parameters or {})
    for key in ("temperature", "maxTokens", "delayMs"):
        if params.get(key) in ("", None):
            params.pop(key, None)
    try:
        if "temperature" in params:
            params["temperature"] = float(params["temperature"])
            if not 0 <= params["temperature"] <= 2:
                raise ValueError
        if "maxTokens" in params:
            params["maxTokens"] = int(params["maxTokens"])
            if not 1 <= params["maxTokens"] <= 100_000:
                raise ValueError
        if "delayMs" in params:
            params["delayMs"] = max(0.0, float(params["delayMs"]))
    except (TypeError, ValueError):
        raise InvalidInput(
            "temperature must be between 0 and 2 and maxTokens between 1 and 100000",
            parameters=params,
        ) from None
    if params.get("systemPrompt") in ("", None):
        params.pop("systemPrompt", None)
    return params


def start_generation(
    *,
    thread: Thread,
    fork_from: Any = ledger.HEAD,
    generator: str = "demo",
    model: str = "",
    parameters: Mapping[str, Any] | None = None,
    prefix: list[dict[str, Any]] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Run:
    """Queue a run for generator, forked from fork_from; prefix events (an edit) come first."""
    if generator != EXTERNAL and generator not in GENERATORS:
        raise InvalidInput(f"unknown generator {generator!r}", field="generator")
    params = _clean_parameters(parameters)
    if not model and generator != EXTERNAL:
        model = get_generator(generator).default_model()
    with transaction.atomic():
        run, _ = ledger.begin_run(
            thread=thread,
            fork_from=fork_from,
            status=RunStatus.QUEUED,
            generator=generator,
            model=model,
            parameters=params,
            metadata=metadata,
        )
        if prefix:
            # Still queued: a worker (or the outside stream layer) has to pick it up.
            ledger.append_events(run=run, events=prefix, start=False)
        from transcripts.generation import tasks

        if generator == EXTERNAL:
            if getattr(settings, "TRANSCRIPTS_EXTERNAL_WEBHOOK_URL", ""):
                transaction.on_commit(lambda: tasks.notify_external_webhook.enqueue(run.id))
        else:
            transaction.on_commit(lambda: tasks.generate_run.enqueue(run.id))
    return run


def conversation_for(run: Run) -> list[dict[str, Any]]:
    """The canonical messages a generator continues: the path to the fork point, then the run's."""
    history: list[dict[str, Any]] = []
    if run.fork_from_id:
        fork = Message.objects.select_related("thread").get(pk=run.fork_from_id)
        history = [m.as_canonical() for m in path_to(fork)]
    return history + ledger.project_run(run).messages


class _Heartbeat:
    """Renews the worker's lease in the background, so a generator that is slow to produce
    its next event (a model thinking for a minute) keeps its run; notices a cancel or a lost
    lease."""

    def __init__(self, run_id: str, worker: str) -> None:
        self.run_id = run_id
        self.worker = worker
        self.lost: DomainError | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"lease-{run_id}", daemon=True)

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        seconds = lease_seconds()
        try:
            while not self._stop.wait(max(0.1, seconds / 3)):
                try:
                    ledger.renew_lease(run=self.run_id, worker=self.worker, lease_seconds=seconds)
                except DomainError as exc:  # cancelled, failed, or leased by another worker
                    self.lost = exc
                    return
                except Exception:  # a database hiccup: the next beat tries again
                    logger.exception("could not renew the lease of run %s", self.run_id)
        finally:
            connection.close()


class _Batcher:
    """Numbers events and appends them in small batches (every ~50 ms or 64 events)."""

    def __init__(self, run: Run, heartbeat: _Heartbeat) -> None:
        self.run = run
        self.heartbeat = heartbeat
        self.next_seq = run.last_seq + 1
        self.pending: list[dict[str, Any]] = []
        self.flushed_any = False
        self.last_flush = time.monotonic()

    def add(self, kind: str, data: dict[str, Any]) -> None:
        if self.heartbeat.lost is not None:
            raise self.heartbeat.lost
        self.pending.append({"seq": self.next_seq, "kind": kind, "data": data})
        self.next_seq += 1
        due = time.monotonic() - self.last_flush >= FLUSH_SECONDS
        if not self.flushed_any or due or len(self.pending) >= FLUSH_EVENTS:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            ledger.append_events(run=self.run, events=self.pending)
            self.pending = []
            self.flushed_any = True
        self.last_flush = time.monotonic()


def generate(run_id: str, *, worker: str | None = None) -> str:
    """Claim the run, stream its generator's events into the ledger and commit; returns status."""
    worker = worker or worker_name()
    try:
        run = ledger.claim_run(run=run_id, worker=worker, lease_seconds=lease_seconds())
    except (RunClosed, Conflict) as exc:
        logger.info("run %s not generated: %s", run_id, exc)
        return "skipped"
    request = GenerationRequest(
        run_id=run.id,
        messages=conversation_for(run),
        model=run.model,
        parameters=dict(run.parameters),
    )
    with _Heartbeat(run.id, worker) as heartbeat:
        batcher = _Batcher(run, heartbeat)
        try:
            for kind, data in get_generator(run.generator).stream(request):
                batcher.add(kind, data)
            batcher.flush()
            if heartbeat.lost is not None:
                raise heartbeat.lost
            ledger.commit_run(run=run.id)
            return RunStatus.COMMITTED
        except RunClosed:
            # Cancelled (or closed otherwise) while streaming: stop quietly, keep what was stored.
            return Run.objects.get(pk=run.id).status
        except Conflict as exc:
            if exc is heartbeat.lost:  # another worker holds the run now: leave it to them
                logger.warning("lost the lease of run %s: %s", run.id, exc)
                return "lost"
            return _fail(run.id, str(exc), type(exc).__name__)
        except (GeneratorError, DomainError) as exc:
            return _fail(run.id, str(exc), type(exc).__name__)
        except Exception as exc:
            logger.exception("generator %s crashed on run %s", run.generator, run.id)
            return _fail(run.id, f"{type(exc).__name__}: {exc}", "generator_crashed")


def _fail(run_id: str, message: str, code: str) -> str:
    with contextlib.suppress(DomainError):
        ledger.fail_run(run=run_id, error={"message": message, "code": code})
    return RunStatus.FAILED


def reap_expired_runs() -> list[str]:
    """Fail runs whose worker died; with TRANSCRIPTS_REQUEUE_EXPIRED, queue a fresh attempt."""
    expired = ledger.expire_leases()
    if getattr(settings, "TRANSCRIPTS_REQUEUE_EXPIRED", False):
        for run in Run.objects.filter(pk__in=expired).select_related("thread"):
            try:
                _queue_again(run)
            except DomainError as exc:
                logger.warning("could not re-queue run %s: %s", run.id, exc)
    return expired


def _user_message_event(text: str) -> dict[str, Any]:
    text = text.strip()
    if not text:
        raise InvalidInput("the message is empty", field="text")
    return {
        "seq": 1,
        "kind": "message",
        "data": {"role": "user", "parts": [{"type": "text", "text": text}]},
    }


def start_regenerate(*, message: Message, **options: Any) -> Run:
    """Regenerate an assistant message: a new run forked from its parent."""
    if message.role != "assistant":
        raise InvalidInput("only an assistant message can be regenerated", role=message.role)
    return start_generation(thread=message.thread, fork_from=message.parent_id, **options)


def start_edit(*, message: Message, text: str, **options: Any) -> Run:
    """Edit a user message: a run forked from its parent, the edited message first."""
    if message.role != "user":
        raise InvalidInput("only a user message can be edited", role=message.role)
    prefix = [_user_message_event(text)]
    return start_generation(
        thread=message.thread, fork_from=message.parent_id, prefix=prefix, **options
    )


def start_reply(*, thread: Thread, text: str, fork_from: Any = ledger.HEAD, **options: Any) -> Run:
    """Reply at the head (or below fork_from): the user's message is committed, then answered."""
    event = _user_message_event(text)
    with transaction.atomic():
        turn, _ = ledger.begin_run(thread=thread, fork_from=fork_from, generator="user")
        ledger.append_events(run=turn, events=[event])
        ledger.commit_run(run=turn)
        question = turn.messages.get()
        return start_generation(thread=thread, fork_from=question.id, **options)


def retry(*, run: Run) -> Run:
    """Run a failed or cancelled run's generation again, from the same fork point."""
    if run.status not in (RunStatus.FAILED, RunStatus.CANCELLED):
        raise InvalidInput("only a failed or cancelled run can be retried", status=run.status)
    return _queue_again(run)


def _queue_again(run: Run) -> Run:
    """A fresh attempt of run's generation: same fork point, options and edited message."""
    prefix = [
        {"seq": e.seq, "kind": e.kind, "data": e.data}
        for e in run.events.filter(seq=1, kind="message")
    ]
    return start_generation(
        thread=run.thread,
        fork_from=run.fork_from_id,
        generator=run.generator,
        model=run.model,
        parameters=run.parameters,
        prefix=prefix,
        metadata={"retryOf": run.id},
    )


def last_choice(thread: Thread) -> dict[str, Any]:
    """The generator, model and parameters the thread's latest generated run used.

    Runs a stream layer posted under its own name (not one of ours) are no choice to repeat.
    """
    run = (
        Run.objects.filter(thread=thread, generator__in=[*GENERATORS, EXTERNAL])
        .order_by("-created_at")
        .first()
    )
    if run is None:
        return {"generator": "demo", "model": "", "parameters": {}}
    return {"generator": run.generator, "model": run.model, "parameters": dict(run.parameters)}
