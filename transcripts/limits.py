"""Limits on every door: the API's quotas per token and per project, and the audit of login
lockouts (django-axes locks the login pages; see docs/access.md).

`QuotaMiddleware` charges each API request made with a bearer token to its token's and its
project's minute (`ledger.quotas.charge`, counted in PostgreSQL so every process sees it) and
answers 429 with Retry-After past a limit: the API's JSON error shape, or for an OTLP protobuf
export a `google.rpc.Status` carrying the `RetryInfo` OTLP exporters read.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from asgiref.sync import sync_to_async
from axes.signals import user_locked_out
from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2

from transcripts.json_errors import error_body
from transcripts.ledger.audit import record_login_lockout
from transcripts.ledger.quotas import QuotaExceeded, charge, limits_enabled
from transcripts.middleware import SyncAsyncMiddleware
from transcripts.models import ApiToken

API_PREFIX = "/api/"
OTLP_PROTOBUF = "application/x-protobuf"


def request_token(request: HttpRequest) -> str:
    """The bearer token of request's Authorization header, '' when there is none."""
    scheme, _, token = request.headers.get("Authorization", "").strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def charge_request(request: HttpRequest, *, requests: int = 1, events: int = 0) -> None:
    """Charge requests and events to the caller's token and project (nothing without a
    token); QuotaExceeded past a limit."""
    token = request_token(request)
    if token:
        charge(ApiToken.hash_token(token), requests=requests, events=events)


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


class QuotaMiddleware(SyncAsyncMiddleware):
    """Counts each API request against its token's and project's quotas; 429 past them."""

    def handle(self, request: HttpRequest) -> HttpResponseBase:
        return self._refusal(request) or self.get_response(request)

    async def ahandle(self, request: HttpRequest) -> HttpResponseBase:
        refusal = await sync_to_async(self._refusal)(request)
        return refusal or await self.get_response(request)

    @staticmethod
    def _refusal(request: HttpRequest) -> HttpResponse | None:
        if not request.path_info.startswith(API_PREFIX) or not limits_enabled():
            return None
        try:
            charge_request(request)
        except QuotaExceeded as exc:
            return throttled_response(request, exc)
        return None


def _audit_lockout(
    sender: Any, request: HttpRequest, username: str | None, ip_address: str | None, **_: Any
) -> None:
    """Record django-axes's lockout in the audit log."""
    cooloff = settings.AXES_COOLOFF_TIME
    record_login_lockout(
        username=username or "",
        ip_address=ip_address or "",
        path=request.path,
        within=cooloff if isinstance(cooloff, timedelta) else timedelta(hours=float(cooloff)),
    )


user_locked_out.connect(_audit_lockout, dispatch_uid="transcripts.limits.audit_lockout")
