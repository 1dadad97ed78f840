"""Limits on every door: the API's quotas per token and per project, and the audit of login
lockouts (django-axes locks the login pages; see docs/access.md).

Each API request made with a bearer token is charged to its token's and its project's minute
(counted in PostgreSQL so every process sees it) after the token lookup of `api/auth.py`;
past a limit the API's error handler answers 429 with Retry-After (`throttled_response`):
the API's JSON error shape, or for an OTLP protobuf export a `google.rpc.Status` carrying the
`RetryInfo` OTLP exporters read. `charge_events` charges the events a request carries
(appends, AI SDK streams, OTLP spans).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from axes.signals import user_locked_out
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2

from transcripts.json_errors import error_body
from transcripts.ledger.audit import record_login_lockout
from transcripts.ledger.quotas import EventCharge, QuotaExceeded, charge, limits_enabled
from transcripts.permissions import Principal

OTLP_PROTOBUF = "application/x-protobuf"
# The lockout's length when AXES_COOLOFF_TIME is not a timedelta (settings.py sets one).
DEFAULT_COOLOFF = timedelta(minutes=15)


def event_charge(request: HttpRequest, events: int) -> EventCharge | None:
    """The charge of the events a request carries, for a statement to take along (the API's
    one-statement append) or for `quotas.charge_events`; None when nothing is charged (a
    browser session, no events, the limits off)."""
    principal = getattr(request, "auth", None)
    if (
        events > 0
        and limits_enabled()
        and isinstance(principal, Principal)
        and principal.token_id is not None
        and principal.project_id is not None
    ):
        return EventCharge(
            token_id=principal.token_id,
            project_id=principal.project_id,
            events=events,
            project_limits=principal.project_limits,
        )
    return None


def charge_events(request: HttpRequest, events: int) -> None:
    """Charge the events a request carries to its token and project (the request itself was
    charged by api/auth.py, with the project's limits read then); QuotaExceeded past a limit,
    which the API's error handler answers with throttled_response. A browser session is not
    charged."""
    principal = getattr(request, "auth", None)
    if (
        events > 0
        and isinstance(principal, Principal)
        and principal.token_id is not None
        and principal.project_id is not None
    ):
        charge(
            token_id=principal.token_id,
            project_id=principal.project_id,
            requests=0,
            events=events,
            project_limits=principal.project_limits,
        )


def throttled_response(request: HttpRequest, exc: QuotaExceeded) -> HttpResponse:
    """429 with Retry-After: a google.rpc.Status with RetryInfo to an OTLP protobuf export
    (what OTLP exporters honour), the API's JSON error shape to anything else."""
    response: HttpResponse
    if request.content_type == OTLP_PROTOBUF:
        retry = error_details_pb2.RetryInfo(
            retry_delay=duration_pb2.Duration(seconds=exc.retry_after)
        )
        detail = any_pb2.Any()
        detail.Pack(retry)
        status = status_pb2.Status(
            code=code_pb2.RESOURCE_EXHAUSTED, message=exc.message, details=[detail]
        )
        response = HttpResponse(status.SerializeToString(), status=429, content_type=OTLP_PROTOBUF)
    else:
        response = JsonResponse(error_body(exc.code, exc.message, exc.details), status=429)
    response["Retry-After"] = str(exc.retry_after)
    return response


def _audit_lockout(
    sender: Any, request: HttpRequest, username: str | None, ip_address: str | None, **_: Any
) -> None:
    """Record django-axes's lockout in the audit log (once per cool-off)."""
    cooloff = settings.AXES_COOLOFF_TIME
    record_login_lockout(
        username=username or "",
        ip_address=ip_address or "",
        path=request.path,
        within=cooloff if isinstance(cooloff, timedelta) else DEFAULT_COOLOFF,
    )


user_locked_out.connect(_audit_lockout, dispatch_uid="transcripts.limits.audit_lockout")
