"""Background tasks (Django Tasks API; run them with `manage.py db_worker`)."""

from __future__ import annotations

import json
import logging
import urllib.request

from django.conf import settings
from django_tasks import task

from transcripts.models import Run
from transcripts.worker import process as worker

logger = logging.getLogger(__name__)


@task(queue_name="generation")
def generate_run(run_id: str) -> str:
    """Generate one run with its generator; reaps dead workers' runs first."""
    worker.reap_expired_runs()
    return worker.generate(run_id)


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


@task()
def import_file(job_id: str) -> str:
    """Import an uploaded file too large to import within the request."""
    from transcripts.interchange import run_import_job

    return str(run_import_job(job_id).status)
