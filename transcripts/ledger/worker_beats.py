"""Worker liveness rows (WorkerBeat): renewed by every worker process while it runs, forgotten
a while after it stopped."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import DateTimeField, ExpressionWrapper
from django.db.models.expressions import CombinedExpression
from django.db.models.functions import Now

from transcripts.models import WorkerBeat


def record_beat(*, worker_id: str, name: str) -> None:
    """Renew worker_id's liveness row (created on its first beat), on the database's clock."""
    if not WorkerBeat.objects.filter(pk=worker_id).update(seen_at=Now(), name=name):
        WorkerBeat.objects.create(worker_id=worker_id, name=name)


def seen_before(age: timedelta) -> ExpressionWrapper[CombinedExpression]:
    """The database's clock, age ago: liveness is compared across machines."""
    return ExpressionWrapper(Now() - age, output_field=DateTimeField())


def forget_workers_gone_for(age: timedelta) -> None:
    """Delete the rows of workers not seen for longer than age."""
    WorkerBeat.objects.filter(seen_at__lt=seen_before(age)).delete()
