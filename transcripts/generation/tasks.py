"""Queueing generation, and the tasks a worker runs for it (Django Tasks API; see
`transcripts.worker`).

`start_generation` queues a run and, once it commits, the `generate_run` task; that task first
fails (or, with TRANSCRIPTS_REQUEUE_EXPIRED, queues again) the runs of workers that died, so
queueing and the task call each other and live in this one module. The ways to start (regenerate,
edit, reply, ...) are in `start.py`.
"""

from __future__ import annotations

import json
import logging
import urllib.request
from collections.abc import Mapping
from typing import TypedDict

from django.conf import settings
from django.db import transaction
from django_tasks import task

from transcripts import ledger
from transcripts.db_availability import patiently
from transcripts.errors import DomainError, InvalidInput
from transcripts.generation.generators import (
    EXTERNAL,
    GENERATORS,
    get_generator,
    unavailable_reason,
)
from transcripts.generation.runner import generate
from transcripts.jsonvalue import JsonObject
from transcripts.models import Run, RunOrigin, RunStatus, Thread

logger = logging.getLogger(__name__)


class RunChoice(TypedDict, total=False):
    """The generator, model and parameters a run is started with (start_generation's)."""

    generator: str
    model: str
    parameters: Mapping[str, object] | None


class GenerationOptions(RunChoice, total=False):
    """start_generation's options the ways to start pass on, with the run's metadata."""

    metadata: Mapping[str, object] | None


def _number(value: object) -> str | int | float:
    """value when float() and int() may read it; else TypeError, as they would raise."""
    if isinstance(value, str | int | float):
        return value
    raise TypeError(f"{type(value).__name__} is not a number")


def _clean_parameters(parameters: Mapping[str, object] | None) -> dict[str, object]:
    params = dict(parameters or {})
    for key in ("temperature", "maxTokens", "delayMs"):
        if params.get(key) in ("", None):
            params.pop(key, None)
    try:
        if "temperature" in params:
            params["temperature"] = temperature = float(_number(params["temperature"]))
            if not 0 <= temperature <= 2:
                raise ValueError
        if "maxTokens" in params:
            params["maxTokens"] = max_tokens = int(_number(params["maxTokens"]))
            if not 1 <= max_tokens <= 100_000:
                raise ValueError
        if "delayMs" in params:
            params["delayMs"] = max(0.0, float(_number(params["delayMs"])))
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
    fork_from: object = ledger.HEAD,
    generator: str = "demo",
    model: str = "",
    parameters: Mapping[str, object] | None = None,
    prefix: list[JsonObject] | None = None,
    metadata: Mapping[str, object] | None = None,
) -> Run:
    """Queue a run for generator, forked from fork_from; prefix events (an edit) come first.
    A generator that cannot run on this server now (an unknown one, OpenAI without a key) is
    refused (InvalidInput) before anything is written."""
    if generator != EXTERNAL and generator not in GENERATORS:
        raise InvalidInput(f"unknown generator {generator!r}", field="generator")
    reason = unavailable_reason(generator)
    if reason:
        raise InvalidInput(
            f"the {generator} generator can't run on this server: {reason}",
            field="generator",
            reason=reason,
        )
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
            origin=RunOrigin.WEB,
        )
        if prefix:
            # Still queued: a worker (or the outside stream layer) has to pick it up.
            ledger.append_events(run=run, events=prefix, start=False)

        if generator == EXTERNAL:
            if getattr(settings, "TRANSCRIPTS_EXTERNAL_WEBHOOK_URL", ""):
                transaction.on_commit(lambda: notify_external_webhook.enqueue(run.id))
        else:
            transaction.on_commit(lambda: generate_run.enqueue(run.id))
    return run


def queue_again(run: Run) -> Run:
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


def reap_expired_runs() -> list[str]:
    """Fail runs whose worker died; with TRANSCRIPTS_REQUEUE_EXPIRED, queue a fresh attempt.
    Waits out a database outage."""
    return patiently(_reap_expired_runs, what="failing the runs of dead workers")


def _reap_expired_runs() -> list[str]:
    expired = ledger.expire_leases()
    if getattr(settings, "TRANSCRIPTS_REQUEUE_EXPIRED", False):
        for run in Run.objects.filter(pk__in=expired).select_related("thread"):
            try:
                queue_again(run)
            except DomainError as exc:
                logger.warning("could not re-queue run %s: %s", run.id, exc)
    return expired


@task(queue_name="generation")
def generate_run(run_id: str) -> str:
    """Generate one run with its generator; reaps dead workers' runs first."""
    reap_expired_runs()
    return generate(run_id)


@task()
def notify_external_webhook(run_id: str) -> int:
    """Tell an outside stream layer that a run is queued for it."""
    url = getattr(settings, "TRANSCRIPTS_EXTERNAL_WEBHOOK_URL", "")
    run = Run.objects.get(pk=run_id)
    body = json.dumps(
        {"event": "run.queued", "runId": run.id, "threadId": run.thread_id, "model": run.model}
    ).encode()
    request = urllib.request.Request(
        url, data=body, headers={"content-type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return int(response.status)
