"""Threads, runs, events and messages: the event log and the materialized message tree."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex, OpClass
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models import Q
from django.db.models.expressions import RawSQL
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Cast, Now, Upper
from django.db.models.lookups import IsNull
from django.utils import timezone

from transcripts.fields import ULIDField
from transcripts.ids import new_ulid
from transcripts.times import parse_iso

DEFAULT_PROJECT_SLUG = "default"


def trigram(expression: Any) -> OpClass:
    """UPPER(expression) in pg_trgm's GIN operator class: what an icontains lookup can use."""
    return OpClass(Upper(expression), name="gin_trgm_ops")


def folded(expression: Any) -> models.Func:
    """expression without accents: unaccent with its dictionary named (migration 0025), so
    an index may use it ("Café" -> "Cafe", "Straße" -> "Strasse")."""
    return models.Func(expression, function="transcripts_unaccent", output_field=models.TextField())


class Project(models.Model):
    """A team's space: every thread belongs to one, people and tokens belong to projects."""

    slug = models.SlugField(max_length=50, unique=True)
    name = models.CharField(max_length=200)
    retention_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Delete threads with no activity for this many days (empty: keep forever).",
    )
    settings = models.JSONField(default=dict, blank=True)
    requests_per_minute = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="API requests a minute for the whole project (empty: the site's default).",
    )
    events_per_minute = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Events and spans a minute for the whole project (empty: the site's default).",
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name", "slug"]

    def __str__(self) -> str:
        return self.name or self.slug


class ProjectRole(models.TextChoices):
    """A member's role in a project; each includes the ones before it."""

    VIEWER = "viewer"
    EDITOR = "editor"
    MODERATOR = "moderator"
    ADMIN = "admin"


class Membership(models.Model):
    """A user's role in one project."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=20, choices=ProjectRole.choices)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="membership_one_per_user"),
        ]
        ordering = ["project", "user"]

    def __str__(self) -> str:
        return f"{self.user} ({self.role}) in {self.project}"


class Profile(models.Model):
    """Per-user preferences: the project the pages show."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    current_project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    def __str__(self) -> str:
        return f"Profile of {self.user}"


# The thread list's sort columns with an index each (project, column, id): (field, short name).
THREAD_SORT_KEYS = (
    ("created_at", "created"),
    ("message_count", "messages"),
    ("branch_count", "branches"),
    ("total_tokens", "tokens"),
    ("cost_micros", "cost"),
    ("last_run_duration_ms", "duration"),
)


class Thread(models.Model):
    """A conversation: a tree of messages of which one path is active."""

    id = ULIDField(primary_key=True, default=new_ulid, editable=False)
    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="threads")
    title = models.CharField(max_length=500, blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)
    agents = models.JSONField(default=dict, blank=True)
    # The id the thread has elsewhere (an OpenTelemetry conversation or trace id; "" for none):
    # unique per project, so the same id in another project is another thread.
    external_id = models.CharField(max_length=500, blank=True, default="")
    # Another thread, so another shard once distributed: kept by the ledger (deletion unlinks
    # it), not by a database constraint.
    parent_thread = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="child_threads",
        db_constraint=False,
    )
    # Foreign keys between thread-scoped tables are composite, with thread_id, and made by
    # migration 0011 (Django's own cannot span two columns): db_constraint=False here.
    head = models.ForeignKey(
        "Message",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_constraint=False,
    )
    hidden = models.BooleanField(default=False)
    locked = models.BooleanField(default=False)
    # Archived by an editor: out of the default thread list, still open by link.
    archived = models.BooleanField(default=False, db_default=False)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    # The thread list's columns (issue 27), kept by the ledger in the transaction of each
    # write that changes them (ledger/counters.py), so a page of the list reads no message;
    # defaults in the database too, for rows copied in (bench/scale_seed.py).
    message_count = models.PositiveIntegerField(default=0, db_default=0)
    branch_count = models.PositiveIntegerField(default=0, db_default=0)
    run_count = models.PositiveIntegerField(default=0, db_default=0)
    open_run_count = models.PositiveIntegerField(default=0, db_default=0)
    failed_run_count = models.PositiveIntegerField(default=0, db_default=0)
    flagged_count = models.PositiveIntegerField(default=0, db_default=0)
    input_tokens = models.BigIntegerField(default=0, db_default=0)
    output_tokens = models.BigIntegerField(default=0, db_default=0)
    total_tokens = models.BigIntegerField(default=0, db_default=0)
    # Millionths of a US dollar, at the prices.
    cost_micros = models.BigIntegerField(default=0, db_default=0)
    # The newest closed run's status and duration ("" and 0 before any run closed).
    last_run_status = models.CharField(max_length=20, blank=True, default="", db_default="")
    last_run_duration_ms = models.BigIntegerField(default=0, db_default=0)
    last_model = models.CharField(max_length=200, blank=True, default="", db_default="")
    last_agent = models.CharField(max_length=200, blank=True, default="", db_default="")

    class Meta:
        indexes = [
            models.Index(fields=["-updated_at"], name="thread_updated_idx"),
            # The "Archived" filter of the thread list (few rows: a partial index).
            models.Index(
                fields=["project", "-updated_at", "-id"],
                name="thread_archived_idx",
                condition=Q(archived=True),
            ),
            # The tag filter: metadata.tags @> '["tag"]' (migration 0016).
            GinIndex(
                OpClass(KeyTransform("tags", "metadata"), name="jsonb_path_ops"),
                name="thread_tags_idx",
            ),
            models.Index(
                fields=["project", "-updated_at", "-id"], name="thread_project_updated_idx"
            ),
            # The thread list's title search and agent/model filter (icontains, migration 0013).
            # The thread list's title search: any part of a title, any case, accents ignored.
            GinIndex(trigram(folded("title")), name="thread_title_folded_trgm_idx"),
            GinIndex(trigram(Cast("agents", models.TextField())), name="thread_agents_trgm_idx"),
            # The thread list's sorts (issue 27): each a keyset walk of one project.
            *(
                models.Index(fields=["project", key, "id"], name=f"thread_{name}_sort_idx")
                for key, name in THREAD_SORT_KEYS
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "external_id"],
                condition=~Q(external_id=""),
                name="thread_external_id_per_project",
            ),
        ]

    def __str__(self) -> str:
        return self.title or f"Thread {self.id}"

    @property
    def tag_names(self) -> list[str]:
        """The thread's tags: the strings of metadata.tags (anything else there is ignored)."""
        tags = self.metadata.get("tags") if isinstance(self.metadata, dict) else None
        return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []


class RunStatus(models.TextChoices):
    QUEUED = "queued"
    STREAMING = "streaming"
    COMMITTED = "committed"
    SUPERSEDED = "superseded"
    FAILED = "failed"
    CANCELLED = "cancelled"


OPEN_STATUSES = (RunStatus.QUEUED, RunStatus.STREAMING)


class RunOrigin(models.TextChoices):
    """Who started a run: it decides who may stop it."""

    WEB = "web"  # a member in the browser (regenerate, edit, reply, retry)
    API = "api"  # an agent through the API, with a token of the project
    IMPORT = "import"  # an import


class Run(models.Model):
    """One generation attempt inside a thread, with its own event log."""

    id = ULIDField(primary_key=True, default=new_ulid, editable=False)
    thread = models.ForeignKey(
        Thread, on_delete=models.CASCADE, related_name="runs", db_constraint=False
    )
    fork_from = models.ForeignKey(
        "Message",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="forked_runs",
        db_constraint=False,
    )
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.STREAMING)
    superseded_by = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="superseded_runs",
        db_constraint=False,
    )
    last_seq = models.PositiveIntegerField(default=0)
    error = models.JSONField(null=True, blank=True)
    usage = models.JSONField(default=dict, blank=True)
    generator = models.CharField(max_length=100, blank=True, default="")
    model = models.CharField(max_length=200, blank=True, default="")
    origin = models.CharField(max_length=10, choices=RunOrigin.choices, default=RunOrigin.API)
    parameters = models.JSONField(default=dict, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    first_event_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    snapshot = models.JSONField(null=True, blank=True)
    snapshot_seq = models.PositiveIntegerField(default=0)
    lease_owner = models.CharField(max_length=200, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["thread", "fork_from", "status"], name="run_fork_point_idx"),
            models.Index(
                fields=["status", "created_at"],
                name="run_open_idx",
                condition=Q(status__in=["queued", "streaming"]),
            ),
            # The thread list's "failed runs" filter (bench_scale: a scan of every run before).
            models.Index(fields=["thread"], name="run_failed_idx", condition=Q(status="failed")),
            # The thread list's agent/model filter (icontains, migration 0013).
            GinIndex(trigram("model"), name="run_model_trgm_idx"),
            # The dashboard's window: the runs begun in it (migration 0016).
            models.Index(fields=["created_at"], name="run_created_idx"),
        ]

    def __str__(self) -> str:
        return f"Run {self.id} ({self.status})"

    @property
    def is_open(self) -> bool:
        """Whether events may still be appended."""
        return self.status in OPEN_STATUSES


class Event(models.Model):
    """One entry of a run's append-only event log."""

    # The key is (run, seq); in the database it is (run_id, seq, thread_id), thread_id being
    # the distribution column (migration 0011). No id, no other index and no foreign keys: the
    # ledger reads thread_id from the run it locks for the append, and deletes events with
    # their thread (ledger/deletion.py), so a per-row check would only cost the hot path.
    pk = models.CompositePrimaryKey("run", "seq")
    thread = models.ForeignKey(
        Thread, on_delete=models.CASCADE, related_name="+", db_index=False, db_constraint=False
    )
    run = models.ForeignKey(
        Run, on_delete=models.CASCADE, related_name="events", db_index=False, db_constraint=False
    )
    seq = models.PositiveIntegerField()
    kind = models.CharField(max_length=200)
    data = models.JSONField(default=dict)
    at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.run_id}#{self.seq} {self.kind}"

    def as_dict(self) -> dict[str, Any]:
        """The event in wire form."""
        return {"seq": self.seq, "kind": self.kind, "data": self.data, "at": self.at.isoformat()}


class MessageManager(models.Manager["Message"]):
    def get_queryset(self) -> models.QuerySet[Message]:
        # The search vector is only for WHERE clauses; never load it.
        return super().get_queryset().defer("search")


class Message(models.Model):
    """A canonical message materialized from a committed run."""

    id = ULIDField(primary_key=True, default=new_ulid, editable=False)
    thread = models.ForeignKey(
        Thread, on_delete=models.CASCADE, related_name="messages", db_constraint=False
    )
    run = models.ForeignKey(
        Run, on_delete=models.CASCADE, related_name="messages", db_constraint=False
    )
    parent = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="children",
        db_constraint=False,
    )
    depth = models.PositiveIntegerField()
    position = models.PositiveIntegerField(default=0)
    role = models.CharField(max_length=20)
    parts = models.JSONField(default=list)
    metadata = models.JSONField(default=dict)
    created_at = models.DateTimeField()
    active = models.BooleanField(default=False)
    first_seq = models.PositiveIntegerField(default=0)
    last_seq = models.PositiveIntegerField(default=0)
    flagged_at = models.DateTimeField(null=True, blank=True)
    flag_reason = models.TextField(blank=True, default="")
    redacted_at = models.DateTimeField(null=True, blank=True)
    # Full-text search over the text and reasoning of every message, on every branch: words
    # without their accents, and the letters of scripts written without spaces or with joined
    # affixes (Chinese, Japanese, Korean, Thai, Arabic, Hebrew) as overlapping pairs (migration
    # 0025; selectors.search_text writes queries the same way).
    search = models.GeneratedField(
        expression=RawSQL(
            "to_tsvector('transcripts_search'::regconfig, transcripts_search_text("
            "coalesce(jsonb_path_query_array(parts, '$[*].text')::text, '')))",
            [],
        ),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    objects = MessageManager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["thread", "depth"],
                condition=Q(active=True),
                name="message_one_active_per_depth",
            ),
        ]
        indexes = [
            models.Index(fields=["run", "position"], name="message_run_position_idx"),
            GinIndex(fields=["search"], name="message_search_idx"),
            # The thread list's agent/model filter: a column for each key it reads, and only
            # the messages that have one (few: the ledger's appends skip it).
            GinIndex(
                trigram(KeyTextTransform("agentId", "metadata")),
                trigram(KeyTextTransform("model", "metadata")),
                name="message_agent_model_trgm_idx",
                condition=Q(IsNull(KeyTextTransform("agentId", "metadata"), False))
                | Q(IsNull(KeyTextTransform("model", "metadata"), False)),
            ),
            # The dashboard's top agents: the runs of the messages naming an agent (few).
            models.Index(
                fields=["run"],
                name="message_agent_run_idx",
                condition=Q(metadata__has_key="agentId"),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.role} {self.id}"

    @classmethod
    def from_projection(
        cls,
        projected: Mapping[str, Any],
        *,
        thread: Thread,
        run: Run,
        depth: int,
        position: int,
        active: bool = True,
        seq_range: tuple[int, int] = (0, 0),
    ) -> Message:
        """The row of a message the projector made (unsaved): the one step from a projection
        to a Message, for commit, import and every page that shows runs not committed."""
        created_at = parse_iso(projected.get("createdAt"))
        return cls(
            id=projected["id"],
            thread=thread,
            run=run,
            parent_id=projected.get("parentMessageId"),
            depth=depth,
            position=position,
            role=projected["role"],
            parts=projected.get("parts") or [],
            metadata=projected.get("metadata") or {},
            created_at=created_at or run.created_at,
            active=active,
            first_seq=seq_range[0],
            last_seq=seq_range[1],
        )

    def as_canonical(self) -> dict[str, Any]:
        """The canonical message dict."""
        return Message.canonical_dict(
            id=self.id,
            parent_id=self.parent_id,
            role=self.role,
            parts=self.parts,
            metadata=self.metadata,
            created_at=self.created_at,
        )

    @staticmethod
    def canonical_dict(
        *,
        id: str,
        parent_id: str | None,
        role: str,
        parts: list[dict[str, Any]],
        metadata: dict[str, Any],
        created_at: datetime | None,
    ) -> dict[str, Any]:
        """A canonical message dict from its fields (createdAt only when created_at is known:
        dataset rows do not read it)."""
        message: dict[str, Any] = {
            "id": id,
            "parentMessageId": parent_id,
            "role": role,
            "parts": parts,
        }
        if created_at is not None:
            message["createdAt"] = created_at.isoformat()
        message["metadata"] = metadata
        return message


class ApiToken(models.Model):
    """A bearer token for the ingest API, stored hashed."""

    SCOPES = ("ingest", "read", "admin")

    name = models.CharField(max_length=200)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="tokens")
    prefix = models.CharField(max_length=16, db_index=True)
    token_hash = models.CharField(max_length=64, unique=True)
    scopes = models.JSONField(default=list)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @staticmethod
    def hash_token(token: str) -> str:
        """SHA-256 of a token: tokens are random, so a fast hash is enough."""
        return hashlib.sha256(token.encode()).hexdigest()

    @classmethod
    def generate(cls) -> str:
        """A new random token string."""
        return "tr_" + secrets.token_urlsafe(32)


class AuditRecord(models.Model):
    """Who did what to which object, when and why. Kept when the object is deleted."""

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    actor_name = models.CharField(max_length=150, blank=True, default="")
    action = models.CharField(max_length=50)
    target_type = models.CharField(max_length=50)
    target_id = models.CharField(max_length=64)
    thread_id = models.CharField(max_length=26, blank=True, default="", db_index=True)
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reason = models.TextField(blank=True, default="")
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.actor_name or 'system'} {self.action} {self.target_type} {self.target_id}"


class ReportStatus(models.TextChoices):
    OPEN = "open"
    RESOLVED = "resolved"
    DISMISSED = "dismissed"


class Report(models.Model):
    """A viewer's report of a message, waiting in the moderation queue."""

    REASONS = [
        ("harmful", "Harmful or unsafe"),
        ("incorrect", "Factually incorrect"),
        ("privacy", "Personal or secret data"),
        ("spam", "Spam or abuse"),
        ("other", "Other"),
    ]

    message = models.ForeignKey(
        Message, on_delete=models.CASCADE, related_name="reports", db_constraint=False
    )
    thread = models.ForeignKey(
        Thread, on_delete=models.CASCADE, related_name="reports", db_constraint=False
    )
    reporter = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    reason = models.CharField(max_length=20, choices=REASONS)
    note = models.TextField(blank=True, default="")
    status = models.CharField(
        max_length=20, choices=ReportStatus.choices, default=ReportStatus.OPEN, db_index=True
    )
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolution_note = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            # The reports' admin list, newest first: without it PostgreSQL hashed every thread
            # to join the page's reports (bench_scale: 31 ms of 104 at 100,000 threads).
            models.Index(fields=["-created_at", "-id"], name="report_created_idx"),
        ]

    def __str__(self) -> str:
        return f"Report {self.pk} on {self.message_id} ({self.status})"


class RunRating(models.Model):
    """A reader's verdict on a run at a fork point: preferred or not, with a note."""

    run = models.ForeignKey(
        Run, on_delete=models.CASCADE, related_name="ratings", db_constraint=False
    )
    thread = models.ForeignKey(
        Thread, on_delete=models.CASCADE, related_name="ratings", db_constraint=False
    )
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    preferred = models.BooleanField(default=True)
    note = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            # thread first: a unique key holds the distribution column (migration 0011).
            models.UniqueConstraint(
                fields=["thread", "run", "user"], name="run_rating_one_per_user"
            ),
        ]

    def __str__(self) -> str:
        return f"{'preferred' if self.preferred else 'rated'} {self.run_id}"


class ImportStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class ImportJob(models.Model):
    """A large import processed by a worker, with progress the client can poll."""

    id = ULIDField(primary_key=True, default=new_ulid, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    format = models.CharField(max_length=40, blank=True, default="")
    status = models.CharField(
        max_length=20, choices=ImportStatus.choices, default=ImportStatus.QUEUED
    )
    filename = models.CharField(max_length=300, blank=True, default="")
    file = models.FileField(upload_to="imports/", blank=True)
    size = models.BigIntegerField(default=0)
    bytes_done = models.BigIntegerField(default=0)
    thread_ids = models.JSONField(default=list, blank=True)
    # What the import created and what it skipped, with why (threads, messages, branches).
    report = models.JSONField(default=dict, blank=True)
    error = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"Import {self.id} ({self.status})"

    @property
    def progress(self) -> float:
        """Share of the file read, 0 to 1."""
        if self.status == ImportStatus.DONE:
            return 1.0
        return min(1.0, self.bytes_done / self.size) if self.size else 0.0


class ShareLink(models.Model):
    """A read-only link to one branch of a thread (the path to leaf), opened without login.
    Only the secret's SHA-256 is stored; the link is shown once, when it is created."""

    id = ULIDField(primary_key=True, default=new_ulid, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    thread = models.ForeignKey(
        Thread, on_delete=models.CASCADE, related_name="shares", db_constraint=False
    )
    leaf = models.ForeignKey(
        Message, on_delete=models.CASCADE, related_name="+", db_constraint=False
    )
    # Unique with thread_id (the distribution column, migration 0011); the index's leading
    # column still finds a link by its secret alone.
    secret_hash = models.CharField(max_length=64)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Set once the expiry has been written to the audit log (by the sweeper).
    expiry_audited_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["thread", "-created_at"], name="share_thread_idx")]
        constraints = [
            models.UniqueConstraint(fields=["secret_hash", "thread"], name="share_secret_uniq"),
        ]

    def __str__(self) -> str:
        return f"Share {self.id} of {self.thread_id}"


class WorkerBeat(models.Model):
    """A worker process's last sign of life, renewed every few seconds while it runs: how the
    others tell a dead worker's task rows, and the pages tell that no worker is running."""

    # django-tasks-db's id of the worker, as recorded in its task rows' worker_ids.
    worker_id = models.CharField(max_length=64, primary_key=True)
    # host:pid, the name its leases carry.
    name = models.CharField(max_length=255)
    # The database's clock, not the worker's: liveness is compared across machines.
    started_at = models.DateTimeField(db_default=Now())
    seen_at = models.DateTimeField(db_default=Now(), db_index=True)

    def __str__(self) -> str:
        return f"{self.name} (seen {self.seen_at:%Y-%m-%d %H:%M:%S})"


class RateWindow(models.Model):
    """What one token or project spent in the current minute of the API's quotas (one row per
    scope, reset when a new minute begins; written by ledger/quotas.py in one statement). The
    table is UNLOGGED (migration 0015): a crash empties it, and a count never waits for a
    disk flush."""

    scope = models.CharField(max_length=40, primary_key=True)  # "token:ID" or "project:ID"
    window_start = models.DateTimeField()
    requests = models.BigIntegerField(default=0)
    events = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.scope} since {self.window_start:%H:%M}"


class Tag(models.Model):
    """One name of a project's tag vocabulary (a thread's tags are in metadata.tags)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="tags")
    name = models.CharField(max_length=40)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="tag_unique_per_project"),
        ]
        ordering = ["project", "name"]

    def __str__(self) -> str:
        return self.name


class ThreadPin(models.Model):
    """A thread one user pinned: pinned threads come first in that user's thread list."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    # ledger/deletion.py removes a thread's pins with it.
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="pins")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "thread"], name="thread_pin_once_per_user"),
        ]

    def __str__(self) -> str:
        return f"{self.user} pinned {self.thread_id}"


# --- judgement as data (issue 28) ------------------------------------------------------------


class ScoreDataType(models.TextChoices):
    """What a score of a config holds."""

    NUMERIC = "numeric"  # a number, within min/max when they are set
    CATEGORICAL = "categorical"  # one of the config's labels
    BOOLEAN = "boolean"  # true or false (stored as 1 or 0, and the label "true"/"false")


class ScoreWriters(models.TextChoices):
    """Who may write the scores of a config."""

    PEOPLE = "people", "People"  # members, from the pages
    API = "api", "The API"  # tokens (agents, evaluators)
    BOTH = "both", "People and the API"


class ScoreSource(models.TextChoices):
    """Where a score came from; the three are kept apart (filters, datasets, exports)."""

    PERSON = "person"
    API = "api"
    EVALUATOR = "evaluator"


class ScoreConfig(models.Model):
    """A score a project defines ("helpfulness 1-5", "policy pass/fail"): its type, range or
    labels, and who may write it. Archiving a config keeps its scores (they keep pointing at
    it) and frees its name for a new one."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="score_configs")
    name = models.CharField(max_length=100)
    data_type = models.CharField(max_length=20, choices=ScoreDataType.choices)
    min_value = models.FloatField(null=True, blank=True)
    max_value = models.FloatField(null=True, blank=True)
    labels = models.JSONField(default=list, blank=True)
    description = models.TextField(blank=True, default="")
    writers = models.CharField(
        max_length=10, choices=ScoreWriters.choices, default=ScoreWriters.BOTH
    )
    created_at = models.DateTimeField(default=timezone.now)
    archived_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["project", "name", "-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "name"],
                condition=Q(archived_at__isnull=True),
                name="score_config_name_per_project",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.data_type})"

    @property
    def label_list(self) -> list[str]:
        """The config's labels (strings only)."""
        return (
            [x for x in self.labels if isinstance(x, str)] if isinstance(self.labels, list) else []
        )


class Score(models.Model):
    """A judgement on one message, run or thread: a name, a number and/or a label, a comment,
    its source (a person, the API, an evaluator) and its author (a user or a token).

    The target is the message when message is set, else the run when run is set, else the
    thread (a check constraint allows at most one of message and run); the thread is stored
    always, so a thread's scores and a thread list filtered by score read one table.
    """

    id = ULIDField(primary_key=True, default=new_ulid, editable=False)
    # The project, thread and run have no index of their own: score_name_value_idx,
    # score_thread_idx and score_run_idx begin with them.
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+", db_index=False)
    # Thread-scoped like the tree's tables: deleted with the thread by ledger/deletion.py.
    thread = models.ForeignKey(
        Thread, on_delete=models.CASCADE, related_name="scores", db_constraint=False,
        db_index=False,
    )  # fmt: skip
    run = models.ForeignKey(
        Run,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="scores",
        db_constraint=False,
        db_index=False,
    )
    message = models.ForeignKey(
        Message,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="scores",
        db_constraint=False,
    )
    name = models.CharField(max_length=100)
    config = models.ForeignKey(
        ScoreConfig, null=True, blank=True, on_delete=models.SET_NULL, related_name="scores"
    )
    value = models.FloatField(null=True, blank=True)
    label = models.CharField(max_length=100, blank=True, default="")
    comment = models.TextField(blank=True, default="")
    source = models.CharField(max_length=10, choices=ScoreSource.choices)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    token = models.ForeignKey(
        ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The caller's own id of the score ("" for none): unique per project, so a repeated one
    # updates the score instead of adding another.
    external_id = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(message__isnull=True) | Q(run__isnull=True), name="score_one_target"
            ),
            models.CheckConstraint(
                condition=Q(value__isnull=False) | ~Q(label=""), name="score_has_value"
            ),
            models.UniqueConstraint(
                fields=["project", "external_id"],
                condition=~Q(external_id=""),
                name="score_external_id_per_project",
            ),
        ]
        indexes = [
            # The scores of a thread (and of its messages on a page).
            models.Index(fields=["thread", "message", "created_at"], name="score_thread_idx"),
            # "Scores named X with value < v" in a project: the thread list's score filter
            # reads the threads from the index alone.
            models.Index(
                fields=["project", "name", "value", "thread"], name="score_name_value_idx"
            ),
            models.Index(fields=["run"], name="score_run_idx", condition=Q(run__isnull=False)),
            # A thread's scores of one name (migration 0022): the thread list's check per
            # thread of `score:name<v` and its Score column's average, from the index alone.
            models.Index(fields=["thread", "name", "value"], name="score_thread_name_idx"),
            # `score:policy=fail`: a project's scores of one name and label (labelled ones only).
            models.Index(
                fields=["project", "name", "label", "thread"],
                name="score_name_label_idx",
                condition=~Q(label=""),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name}={self.shown_value} on {self.target_type} {self.target_id}"

    @property
    def target_type(self) -> str:
        """ "message", "run" or "thread": what the score judges."""
        if self.message_id is not None:
            return "message"
        return "run" if self.run_id is not None else "thread"

    @property
    def target_id(self) -> str:
        """The id of what the score judges."""
        return str(self.message_id or self.run_id or self.thread_id)

    @property
    def shown_value(self) -> str:
        """The value as people read it: the label, else the number (without a needless .0)."""
        if self.label:
            return self.label
        if self.value is None:
            return ""
        return str(int(self.value)) if self.value.is_integer() else f"{self.value:g}"


class Feedback(models.Model):
    """A member's thumbs up or down on one answer, with an optional comment: one per person
    per message, changeable and removable.

    Its own table rather than a Score of a reserved name: it belongs to a person (never a
    token or an evaluator), needs no config, and "one per person per message" is a unique
    constraint here, where among scores it would be a rule only for one name. The thread list's
    `feedback:` filter, the counts on a message and the datasets' `feedback=up` read it
    directly; exports carry it beside the scores.
    """

    # No index of its own: feedback_one_per_person begins with it.
    thread = models.ForeignKey(
        Thread, on_delete=models.CASCADE, related_name="feedback", db_constraint=False,
        db_index=False,
    )  # fmt: skip
    message = models.ForeignKey(
        Message, on_delete=models.CASCADE, related_name="feedback", db_constraint=False
    )
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    up = models.BooleanField()
    comment = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            # thread first: it also finds a thread's feedback (and a message's, for the counts).
            models.UniqueConstraint(
                fields=["thread", "message", "user"], name="feedback_one_per_person"
            ),
        ]

    def __str__(self) -> str:
        return f"{'up' if self.up else 'down'} on {self.message_id} by {self.user_id}"


class AnnotationQueue(models.Model):
    """A list of threads (or answers) for people to score one at a time (issue 28): which
    configs it asks for, who reviews (the assigned members; nobody assigned: every editor and
    up), how many reviews each item wants, and whether it is closed."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="queues")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    configs = models.ManyToManyField(ScoreConfig, related_name="+")
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="+", blank=True)
    reviews_per_item = models.PositiveSmallIntegerField(default=1)
    # The thread-list query string the items were taken from ("" when picked by id), kept for
    # the record.
    source_filter = models.CharField(max_length=2000, blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["project", "-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(reviews_per_item__gte=1), name="queue_reviews_per_item_positive"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class QueueItemState(models.TextChoices):
    """Where an item stands: waiting for reviews, or done (it has them all)."""

    OPEN = "open"
    DONE = "done"


class QueueItem(models.Model):
    """One thing a queue asks its reviewers to judge: a thread, on the branch ending at
    message (its last answer when the item was added; None: a thread without one)."""

    queue = models.ForeignKey(AnnotationQueue, on_delete=models.CASCADE, related_name="items")
    # Thread-scoped like the scores: deleted with the thread by ledger/deletion.py.
    thread = models.ForeignKey(
        Thread, on_delete=models.CASCADE, related_name="+", db_constraint=False
    )
    message = models.ForeignKey(
        Message,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        db_constraint=False,
    )
    done_count = models.PositiveSmallIntegerField(default=0)
    state = models.CharField(
        max_length=10, choices=QueueItemState.choices, default=QueueItemState.OPEN
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["queue", "message"],
                condition=Q(message__isnull=False),
                name="queue_item_one_per_message",
            ),
            models.UniqueConstraint(
                fields=["queue", "thread"],
                condition=Q(message__isnull=True),
                name="queue_item_one_per_thread",
            ),
        ]
        indexes = [
            # The next open item of a queue, oldest first (the claim).
            models.Index(fields=["queue", "state", "id"], name="queue_item_next_idx"),
            models.Index(fields=["thread"], name="queue_item_thread_idx"),
        ]

    def __str__(self) -> str:
        return f"item {self.pk} of queue {self.queue_id}"


class QueueReview(models.Model):
    """A reviewer's hold on an item (a 15-minute lease), then their review of it: completed
    (scored) or skipped. A lease that runs out returns the item to the queue. The reviewer is
    a member (user) or an API token (token)."""

    item = models.ForeignKey(QueueItem, on_delete=models.CASCADE, related_name="reviews")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    token = models.ForeignKey(
        ApiToken, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    leased_until = models.DateTimeField()
    completed_at = models.DateTimeField(null=True, blank=True)
    skipped = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(reviewer__isnull=True, token__isnull=False)
                | Q(reviewer__isnull=False, token__isnull=True),
                name="queue_review_one_reviewer",
            ),
            models.UniqueConstraint(
                fields=["item", "reviewer"],
                condition=Q(reviewer__isnull=False),
                name="queue_review_one_per_user",
            ),
            models.UniqueConstraint(
                fields=["item", "token"],
                condition=Q(token__isnull=False),
                name="queue_review_one_per_token",
            ),
        ]

    def __str__(self) -> str:
        return f"review of item {self.item_id}"


class ExperimentStatus(models.TextChoices):
    """Where an experiment stands: running (its items are being generated), paused (no new
    item starts; those started finish), cancelled, or completed (every item is done or
    failed)."""

    RUNNING = "running"
    PAUSED = "paused"
    CANCELLED = "cancelled"
    COMPLETED = "completed"


class ForkRule(models.TextChoices):
    """Where an experiment forks each thread: the last user message (answered again), a given
    message per thread, or every user turn (each on its own branch)."""

    LAST_USER = "last-user"
    MESSAGE = "message"
    EACH_USER = "each-user"


class Experiment(models.Model):
    """A candidate (generator, model, parameters, system prompt) replayed on a set of threads,
    each answer a branch beside the original at its fork point (issue 29)."""

    id = ULIDField(primary_key=True, default=new_ulid, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="experiments")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    status = models.CharField(
        max_length=20, choices=ExperimentStatus.choices, default=ExperimentStatus.RUNNING
    )
    # Where the threads came from, for the record: {"filter": "...", "tag": "...",
    # "queue": id, "threadIds": n, "messageIds": n}.
    source = models.JSONField(default=dict, blank=True)
    fork_rule = models.CharField(
        max_length=20, choices=ForkRule.choices, default=ForkRule.LAST_USER
    )
    generator = models.CharField(max_length=100)
    model = models.CharField(max_length=200, blank=True, default="")
    parameters = models.JSONField(default=dict, blank=True)
    # The candidate's system prompt ("" for the thread's own) and whether it replaces the
    # thread's system messages or comes before them.
    system_prompt = models.TextField(blank=True, default="")
    system_prompt_mode = models.CharField(max_length=10, blank=True, default="replace")
    # The evaluators run on each pair: [{"type": "exact-match"}, {"type": "regex", ...}].
    evaluators = models.JSONField(default=list, blank=True)
    concurrency = models.PositiveSmallIntegerField(default=4)
    # The caller's Idempotency-Key ("" for none): the same key makes one experiment.
    idempotency_key = models.CharField(max_length=200, blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    token = models.ForeignKey(
        ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    thread_count = models.PositiveIntegerField(default=0)
    item_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["project", "-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "idempotency_key"],
                condition=~Q(idempotency_key=""),
                name="experiment_idempotency_key",
            ),
            models.CheckConstraint(
                condition=Q(concurrency__gte=1), name="experiment_concurrency_positive"
            ),
        ]
        indexes = [
            # The sweeper's look at the experiments still running.
            models.Index(
                fields=["status"], name="experiment_running_idx", condition=Q(status="running")
            ),
        ]

    def __str__(self) -> str:
        return self.name


class ItemStatus(models.TextChoices):
    """One item's life: pending (not started), queued (its run waits for a worker), running,
    done (its candidate is a branch), failed (the candidate could not be made), cancelled."""

    PENDING = "pending"
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


ITEM_IN_FLIGHT = (ItemStatus.QUEUED, ItemStatus.RUNNING)


class Outcome(models.TextChoices):
    """Which answer of a pair is better: the candidate (win), the baseline (loss), or a tie."""

    WIN = "win"
    LOSS = "loss"
    TIE = "tie"


class ExperimentItem(models.Model):
    """One fork point of an experiment: the thread, the message the candidate answers (its
    fork point, chosen when the experiment was made), the baseline answer there and the
    candidate's run, with the pair's metrics, evaluator results and verdicts."""

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField()
    # Thread-scoped like the scores: deleted with the thread by ledger/deletion.py.
    thread = models.ForeignKey(
        Thread, on_delete=models.CASCADE, related_name="+", db_constraint=False
    )
    fork_from = models.ForeignKey(
        Message, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        db_constraint=False,
    )  # fmt: skip
    # The baseline answer: the messages after the fork point on the active path when the
    # experiment was made (ids, in order; [] when the fork point had no answer), and the run
    # of the first.
    baseline_ids = models.JSONField(default=list, blank=True)
    baseline_run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        db_constraint=False,
    )  # fmt: skip
    run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        db_constraint=False,
    )  # fmt: skip
    status = models.CharField(max_length=20, choices=ItemStatus.choices, default=ItemStatus.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.JSONField(null=True, blank=True)
    # Metrics of each side: {"tokensIn", "tokensOut", "latencyMs", "ttftMs", "cost", "length"}.
    baseline_metrics = models.JSONField(default=dict, blank=True)
    candidate_metrics = models.JSONField(default=dict, blank=True)
    # The evaluators' results: [{"name", "type", "baseline", "candidate", "pass", ...}].
    evaluations = models.JSONField(default=list, blank=True)
    # The LLM judge's verdict and a person's (the person's counts when both exist).
    judge_outcome = models.CharField(max_length=10, blank=True, default="")
    person_outcome = models.CharField(max_length=10, blank=True, default="")
    judged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    outcome = models.CharField(max_length=10, blank=True, default="")
    # Whether the two sides disagree: an evaluator passes one and fails the other, a pair
    # evaluator fails, or a verdict is not a tie.
    disagreement = models.BooleanField(default=False)
    adopted_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["experiment", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["experiment", "position"], name="experiment_item_position"
            ),
        ]
        indexes = [
            # The next items to start, and the counts per status.
            models.Index(fields=["experiment", "status", "position"], name="experiment_item_next"),
            # The sweeper's look at the items in flight, across experiments (few rows).
            models.Index(
                fields=["experiment"],
                name="experiment_item_in_flight",
                condition=Q(status__in=["queued", "running"]),
            ),
            models.Index(fields=["thread"], name="experiment_item_thread_idx"),
            models.Index(fields=["run"], name="experiment_item_run_idx"),
        ]

    def __str__(self) -> str:
        return f"item {self.position} of experiment {self.experiment_id}"
