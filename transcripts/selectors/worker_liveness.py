"""Reads of worker liveness (the rows workers renew while they run)."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import DurationField, ExpressionWrapper, Max
from django.db.models.functions import Now

from transcripts.models import WorkerBeat


def since_a_worker_was_seen() -> timedelta | None:
    """How long ago the most recently seen worker last beat (on the database's clock), or
    None when no worker ever ran against this database."""
    age = ExpressionWrapper(Now() - Max("seen_at"), output_field=DurationField())
    found: timedelta | None = WorkerBeat.objects.aggregate(age=age)["age"]
    return found
