"""The API's quotas: what each token and each project spent in the current minute, counted in
PostgreSQL (one row per scope in RateWindow) so every web process on every machine sees the
same counts.

`charge` adds a request's cost to its token's and its project's windows in one statement:
both counters are upserted (`INSERT … ON CONFLICT … DO UPDATE … RETURNING`, with the
project's own limits), and a counter whose minute is over starts again from this request. The
minute is the database's clock, shared by all. `api/auth.py` charges each request after its
token lookup; the endpoints that take events charge those.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from functools import cache

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections, transaction

from transcripts.errors import DomainError, InvalidInput
from transcripts.ledger.audit import record_audit
from transcripts.ledger.rights import require
from transcripts.models import Project, RateWindow
from transcripts.permissions import User, project_access

WINDOW_SECONDS = 60


class QuotaExceeded(DomainError):
    """A token or project passed its requests or events a minute (429, with Retry-After)."""

    status = 429
    code = "throttled"

    def __init__(self, message: str, *, retry_after: int, **details: object) -> None:
        super().__init__(message, retryAfter=retry_after, **details)
        self.retry_after = retry_after


@dataclass(frozen=True)
class Limits:
    """Requests and events a minute, per token and per project."""

    token_requests: int
    token_events: int
    project_requests: int
    project_events: int


def site_limits() -> Limits:
    """The limits of the settings (a project's own fields replace its project limits)."""
    return Limits(
        token_requests=int(settings.TRANSCRIPTS_TOKEN_REQUESTS_PER_MINUTE),
        token_events=int(settings.TRANSCRIPTS_TOKEN_EVENTS_PER_MINUTE),
        project_requests=int(settings.TRANSCRIPTS_PROJECT_REQUESTS_PER_MINUTE),
        project_events=int(settings.TRANSCRIPTS_PROJECT_EVENTS_PER_MINUTE),
    )


def limits_enabled() -> bool:
    """Whether the API's quotas are counted at all (TRANSCRIPTS_RATE_LIMITS)."""
    return bool(settings.TRANSCRIPTS_RATE_LIMITS)


# A project's own requests and events a minute (None: the settings' default).
ProjectLimits = tuple[int | None, int | None]


@cache
def _charge_sql(*, with_project_limits: bool) -> str:
    """The one statement of a charge (written out: it runs on every API call); it also reads
    the project's own limits when the caller does not have them."""
    window = "date_trunc('minute', statement_timestamp())"
    project = Project._meta.db_table
    own = (
        f", (SELECT requests_per_minute FROM {project} WHERE id = %s),"
        f" (SELECT events_per_minute FROM {project} WHERE id = %s)"
    )
    return (
        f"INSERT INTO {RateWindow._meta.db_table} AS w (scope, window_start, requests, events)"
        f" VALUES (%s, {window}, %s, %s), (%s, {window}, %s, %s)"
        " ON CONFLICT (scope) DO UPDATE SET"
        " requests = CASE WHEN w.window_start >= EXCLUDED.window_start"
        " THEN w.requests + EXCLUDED.requests ELSE EXCLUDED.requests END,"
        " events = CASE WHEN w.window_start >= EXCLUDED.window_start"
        " THEN w.events + EXCLUDED.events ELSE EXCLUDED.events END,"
        " window_start = GREATEST(w.window_start, EXCLUDED.window_start)"
        " RETURNING w.scope, w.requests, w.events,"
        f" EXTRACT(EPOCH FROM w.window_start + interval '{WINDOW_SECONDS} seconds'"
        " - statement_timestamp())" + (own if with_project_limits else "")
    )


def charge(
    *,
    token_id: int,
    project_id: int,
    requests: int = 1,
    events: int = 0,
    project_limits: ProjectLimits | None = None,
) -> None:
    """Count requests and events against a token and its project in one statement (both
    counters upserted, `INSERT … ON CONFLICT … DO UPDATE … RETURNING`); raise QuotaExceeded
    (after counting) when either passes its limit. project_limits, when the caller read them
    already (the token lookup does), spare the statement reading them."""
    if not limits_enabled():
        return
    token, project = f"token:{token_id}", f"project:{project_id}"
    params: list[str | int] = [token, requests, events, project, requests, events]
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        if project_limits is None:
            cursor.execute(_charge_sql(with_project_limits=True), [*params, project_id, project_id])
            rows = cursor.fetchall()
            project_limits = rows[0][4:6]
        else:
            cursor.execute(_charge_sql(with_project_limits=False), params)
            rows = cursor.fetchall()
    check([row[:4] for row in rows], project_limits)


def check(spent: list[tuple[str, int, int, Decimal]], project_limits: ProjectLimits) -> None:
    """Raise QuotaExceeded if a scope's spending passes its limit; spent holds, per scope,
    (scope, requests, events, seconds left in the minute), as the charge statement answers."""
    limits = site_limits()
    own_requests, own_events = project_limits
    for scope, spent_requests, spent_events, seconds_left in spent:
        kind = scope.partition(":")[0]
        if kind == "token":
            caps = (limits.token_requests, limits.token_events)
        else:
            caps = (
                limits.project_requests if own_requests is None else own_requests,
                limits.project_events if own_events is None else own_events,
            )
        retry_after = max(1, math.ceil(seconds_left))
        if spent_requests > caps[0]:
            raise QuotaExceeded(
                f"this {kind} made more than {caps[0]} requests this minute;"
                f" try again in {retry_after} s",
                retry_after=retry_after,
                scope=kind,
                limit=caps[0],
                per="requests a minute",
            )
        if spent_events > caps[1]:
            raise QuotaExceeded(
                f"this {kind} sent more than {caps[1]} events this minute;"
                f" try again in {retry_after} s",
                retry_after=retry_after,
                scope=kind,
                limit=caps[1],
                per="events a minute",
            )


def set_project_limits(
    *,
    project: Project,
    requests_per_minute: int | None,
    events_per_minute: int | None,
    actor: User | None = None,
) -> Project:
    """Give project its own requests and events a minute (None: the settings' default);
    actor, when given, must administer the project (None is the command line)."""
    for field, value in (
        ("requests_per_minute", requests_per_minute),
        ("events_per_minute", events_per_minute),
    ):
        if value is not None and (not isinstance(value, int) or not 0 <= value < 2**31):
            raise InvalidInput(f"{field} must be a whole number from 0, or empty", field=field)
    if actor is not None:
        require(project_access(actor, project).can_administer, "change the project's limits")
    with transaction.atomic():
        Project.objects.filter(pk=project.pk).update(
            requests_per_minute=requests_per_minute, events_per_minute=events_per_minute
        )
        project.requests_per_minute = requests_per_minute
        project.events_per_minute = events_per_minute
        if actor is not None:
            record_audit(
                actor,
                "set_limits",
                project,
                project=project,
                requestsPerMinute=requests_per_minute,
                eventsPerMinute=events_per_minute,
            )
    return project
