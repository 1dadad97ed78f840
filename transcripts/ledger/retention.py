"""Retention: a project may delete threads with no activity for N days (off by default)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from transcripts.ledger.audit import record_system_audit
from transcripts.ledger.deletion import Deleted, delete_threads
from transcripts.models import Project, Thread

BATCH = 500  # threads per transaction: a long purge never holds locks for long


@dataclass(frozen=True)
class Purge:
    """What retention removed (or, in a dry run, would remove) from one project."""

    project: Project
    cutoff: datetime
    deleted: Deleted
    dry_run: bool


def expired_threads(project: Project, *, now: datetime) -> QuerySet[Thread]:
    """The project's threads with no activity since its retention period began."""
    if project.retention_days is None:
        return Thread.objects.none()
    cutoff = now - timedelta(days=project.retention_days)
    return Thread.objects.filter(project=project, updated_at__lt=cutoff)


def _count(threads: QuerySet[Thread]) -> Deleted:
    from transcripts.models import Event, Message, Report, Run, RunRating

    ids = threads.values("pk")
    return Deleted(
        threads=threads.count(),
        runs=Run.objects.filter(thread__in=ids).count(),
        events=Event.objects.filter(run__thread__in=ids).count(),
        messages=Message.objects.filter(thread__in=ids).count(),
        reports=Report.objects.filter(thread__in=ids).count(),
        ratings=RunRating.objects.filter(thread__in=ids).count(),
    )


def purge_project(project: Project, *, now: datetime, dry_run: bool = False) -> Purge:
    """Delete (or count, in a dry run) the project's expired threads; audited with counts."""
    assert project.retention_days is not None
    cutoff = now - timedelta(days=project.retention_days)
    threads = expired_threads(project, now=now)
    if dry_run:
        return Purge(project, cutoff, _count(threads), dry_run=True)
    deleted = Deleted()
    while True:
        with transaction.atomic():
            batch = [str(i) for i in threads.order_by("pk").values_list("pk", flat=True)[:BATCH]]
            if not batch:
                break
            deleted += delete_threads(batch)
    if deleted.threads:
        record_system_audit(
            "purge",
            project,
            reason=f"no activity for {project.retention_days} days",
            slug=project.slug,
            cutoff=cutoff.isoformat(),
            **deleted.as_dict(),
        )
    return Purge(project, cutoff, deleted, dry_run=False)


def purge_expired(*, now: datetime | None = None, dry_run: bool = False) -> list[Purge]:
    """Apply every project's retention period (projects without one are left alone)."""
    moment = now or timezone.now()
    projects = Project.objects.filter(retention_days__isnull=False).order_by("slug")
    return [purge_project(project, now=moment, dry_run=dry_run) for project in projects]
