"""The API's quotas: what each token and each project spent in the current minute, counted in
PostgreSQL (one row per scope in RateWindow) so every web process on every machine sees the
same counts.

`charge` adds a request's cost to its token's and its project's windows and says whether a
limit is passed, in one statement: the token is found by its hash, both counters are
upserted (`INSERT … ON CONFLICT … DO UPDATE … RETURNING`), and a counter whose minute is over
starts again from this request. The minute is the database's clock, shared by all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections

from transcripts.errors import DomainError
from transcripts.models import ApiToken, Project, RateWindow

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


@cache
def _charge_sql() -> str:
    """The one statement of a charge (written out: it runs on every API call)."""
    window = "date_trunc('minute', statement_timestamp())"
    return (
        "WITH caller AS ("
        " SELECT t.id AS token_id, t.project_id,"
        " p.requests_per_minute, p.events_per_minute"
        f" FROM {ApiToken._meta.db_table} t"
        f" JOIN {Project._meta.db_table} p ON p.id = t.project_id"
        " WHERE t.token_hash = %s AND t.revoked_at IS NULL"
        "), charged AS ("
        f" INSERT INTO {RateWindow._meta.db_table} AS w (scope, window_start, requests, events)"
        f" SELECT s.scope, {window}, %s, %s FROM caller,"
        " LATERAL (VALUES ('token:' || caller.token_id), ('project:' || caller.project_id))"
        " AS s(scope)"
        " ON CONFLICT (scope) DO UPDATE SET"
        " requests = CASE WHEN w.window_start >= EXCLUDED.window_start"
        " THEN w.requests + EXCLUDED.requests ELSE EXCLUDED.requests END,"
        " events = CASE WHEN w.window_start >= EXCLUDED.window_start"
        " THEN w.events + EXCLUDED.events ELSE EXCLUDED.events END,"
        " window_start = GREATEST(w.window_start, EXCLUDED.window_start)"
        " RETURNING w.scope, w.requests, w.events,"
        f" EXTRACT(EPOCH FROM w.window_start + interval '{WINDOW_SECONDS} seconds'"
        " - statement_timestamp())"
        ")"
        " SELECT c.*, caller.requests_per_minute, caller.events_per_minute"
        " FROM charged c, caller"
    )


def charge(token_hash: str, *, requests: int = 1, events: int = 0) -> None:
    """Count requests and events against the token of token_hash and its project; raise
    QuotaExceeded (after counting) when either passes a limit. An unknown or revoked token
    costs nothing here (authentication refuses it)."""
    if not limits_enabled():
        return
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(_charge_sql(), [token_hash, requests, events])
        rows = cursor.fetchall()
    limits = site_limits()
    for scope, spent_requests, spent_events, seconds_left, own_requests, own_events in rows:
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
