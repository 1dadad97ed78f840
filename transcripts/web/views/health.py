"""The probes: liveness (/healthz) and readiness (/readyz). No login: load balancers call them."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_safe

from transcripts import outage
from transcripts.db_availability import database_problem


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness: the process answers. Never touches the database, so an outage of the database
    does not get healthy web processes restarted."""
    return JsonResponse({"ok": True})


@require_safe
def readyz(request: HttpRequest) -> HttpResponse:
    """Readiness: 200 when the database answers this process; else 503, Retry-After and why."""
    problem = database_problem()
    if problem:
        return outage.with_retry_after(JsonResponse({"ok": False, "database": problem}, status=503))
    return JsonResponse({"ok": True, "database": "ok"})
