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
from django.contrib.auth import get_user_model
from django.db import DEFAULT_DB_ALIAS, connections, transaction

from transcripts.errors import DomainError, InvalidInput
from transcripts.ledger.audit import record_audit
from transcripts.ledger.rights import require
from transcripts.models import ApiToken, Project, RateWindow
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


# What every charge statement ends with: the counters of a minute upserted (a new minute starts
# them again), then each scope's counts and the seconds left in its minute.
_COUNTED = (
    " ON CONFLICT (scope) DO UPDATE SET"
    " requests = CASE WHEN w.window_start >= EXCLUDED.window_start"
    " THEN w.requests + EXCLUDED.requests ELSE EXCLUDED.requests END,"
    " events = CASE WHEN w.window_start >= EXCLUDED.window_start"
    " THEN w.events + EXCLUDED.events ELSE EXCLUDED.events END,"
    " window_start = GREATEST(w.window_start, EXCLUDED.window_start)"
    " RETURNING w.scope, w.requests, w.events,"
    f" EXTRACT(EPOCH FROM w.window_start + interval '{WINDOW_SECONDS} seconds'"
    " - statement_timestamp())"
)


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
        + _COUNTED
        + (own if with_project_limits else "")
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


@dataclass
class EventCharge:
    """The events a token's request carries, to be charged to the token and its project once:
    by a statement that takes them along (the API's one-statement append: `charge_cte`) or
    by `charge_events`; done says it was."""

    token_id: int
    project_id: int
    events: int
    project_limits: ProjectLimits | None  # None: not read yet (charge_cte needs them)
    done: bool = False


def charge_events(charge_: EventCharge) -> None:
    """Charge the events of charge_ unless a statement did already (QuotaExceeded past a
    limit, after counting)."""
    if not charge_.done:
        charge_.done = True
        charge(
            token_id=charge_.token_id,
            project_id=charge_.project_id,
            requests=0,
            events=charge_.events,
            project_limits=charge_.project_limits,
        )


@cache
def _charge_cte_sql() -> str:
    window = "date_trunc('minute', statement_timestamp())"
    return (
        f"charged AS (INSERT INTO {RateWindow._meta.db_table} AS w"
        " (scope, window_start, requests, events)"
        f" VALUES (%(charge_token)s, {window}, 0, %(charge_events)s),"
        f" (%(charge_project)s, {window}, 0, %(charge_events)s)"
        + _COUNTED
        + " AS seconds_left), within_limits AS ("
        " SELECT coalesce(bool_and(CASE WHEN c.scope = %(charge_token)s"
        " THEN c.requests <= %(cap_token_requests)s AND c.events <= %(cap_token_events)s"
        " ELSE c.requests <= %(cap_project_requests)s"
        " AND c.events <= %(cap_project_events)s END), true) AS ok FROM charged c)"
    )


def charge_cte(charge_: EventCharge) -> tuple[str, dict[str, str | int]]:
    """The SQL of two common table expressions and their parameters: `charged` counts the
    events of charge_ (as charge does: scope, requests, events, seconds_left), `within_limits`
    (one row, ok) says whether every count stays within its limit. A statement that takes
    them along stores nothing unless ok, and hands charged's rows to `check_charged`."""
    limits = site_limits()
    own_requests, own_events = charge_.project_limits or (None, None)
    return _charge_cte_sql(), {
        "charge_token": f"token:{charge_.token_id}",
        "charge_project": f"project:{charge_.project_id}",
        "charge_events": charge_.events,
        "cap_token_requests": limits.token_requests,
        "cap_token_events": limits.token_events,
        "cap_project_requests": limits.project_requests if own_requests is None else own_requests,
        "cap_project_events": limits.project_events if own_events is None else own_events,
    }


def check_charged(charge_: EventCharge, spent: list[tuple[str, int, int, Decimal]]) -> None:
    """Record that a statement counted charge_'s events (its `charged` rows: spent), then
    raise QuotaExceeded as charge would."""
    charge_.done = True
    # The token's scope first, as charge's statement returns them ('token:' > 'project:').
    assert charge_.project_limits is not None  # as charge_cte was given them
    check(sorted(spent, key=lambda row: row[0], reverse=True), charge_.project_limits)


@dataclass(frozen=True)
class TokenRow:
    """What an API call needs of its (live, unrevoked) token: see charge_token_request."""

    id: int
    name: str
    scopes: object  # the stored JSON list (text when Django reads jsonb as text)
    last_used_at: object
    user_is_active: bool | None
    project_id: int
    project_limits: ProjectLimits


@cache
def _token_charge_sql() -> str:
    """The token lookup and its request's charge in one statement (see charge_token_request):
    written out, as every API call runs it."""
    window = "date_trunc('minute', statement_timestamp())"
    return (
        "WITH tok AS ("
        " SELECT t.id, t.name, t.scopes, t.last_used_at, u.is_active, t.project_id,"
        " p.requests_per_minute, p.events_per_minute"
        f" FROM {ApiToken._meta.db_table} t"
        f" JOIN {Project._meta.db_table} p ON p.id = t.project_id"
        f" LEFT JOIN {get_user_model()._meta.db_table} u ON u.id = t.user_id"
        " WHERE t.token_hash = %(hash)s AND t.revoked_at IS NULL"
        "), charged AS ("
        f" INSERT INTO {RateWindow._meta.db_table} AS w (scope, window_start, requests, events)"
        f" SELECT s.scope, {window}, 1, 0 FROM tok,"
        " LATERAL (VALUES (1, 'token:' || tok.id), (2, 'project:' || tok.project_id))"
        " AS s(n, scope)"
        " WHERE %(limits)s AND tok.is_active IS NOT FALSE ORDER BY s.n"
        + _COUNTED
        + " AS seconds_left) SELECT tok.id, tok.name, tok.scopes, tok.last_used_at, tok.is_active,"
        " tok.project_id, tok.requests_per_minute, tok.events_per_minute,"
        " c.scope, c.requests, c.events, c.seconds_left"
        # The token's scope first, as charge checks them ('token:' > 'project:').
        " FROM tok LEFT JOIN charged c ON true ORDER BY c.scope DESC"
    )


def charge_token_request(token_hash: str) -> TokenRow | None:
    """The live (unrevoked) token of token_hash, None when there is none; a token of an
    active user (or of none) is charged its request to its and its project's minute in the
    same statement (as charge does; QuotaExceeded, after counting, past a limit). One round
    trip for what every API call with a token needs before anything else."""
    # Who may call is read from the primary, as db_router.ACCESS_MODELS says of tokens.
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(_token_charge_sql(), {"hash": token_hash, "limits": limits_enabled()})
        rows = cursor.fetchall()
    if not rows:
        return None
    first = rows[0]
    token = TokenRow(
        id=first[0],
        name=first[1],
        scopes=first[2],
        last_used_at=first[3],
        user_is_active=first[4],
        project_id=first[5],
        project_limits=(first[6], first[7]),
    )
    spent = [row[8:12] for row in rows if row[8] is not None]
    if spent:
        check(spent, token.project_limits)
    return token


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
