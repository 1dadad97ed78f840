"""Database outages met by requests: the middleware that answers them 503, not 500.

While PostgreSQL is down or unreachable, a request that needs it fails within about a second
(libpq's `connect_timeout` and the pool's `timeout`, TRANSCRIPTS_DB_CONNECT_TIMEOUT and
TRANSCRIPTS_DB_POOL_TIMEOUT) and is answered 503 with Retry-After: pages with a plain page,
the API with its JSON error shape. `/healthz` never touches the database; `/readyz` says
whether it answers and why not.

A request that finds every pooled connection in use while the database answers (a busy
process, not an outage) waits TRANSCRIPTS_DB_POOL_TIMEOUT seconds, then is answered 503 with
Retry-After: BUSY_RETRY_AFTER_SECONDS and the code `busy`; `/readyz` stays 200 meanwhile.

What counts as an outage (and as busy) is `db_availability`'s, which the worker and the live
stream use too, so they wait and retry instead of failing.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from contextlib import suppress

from django.core.signals import got_request_exception, request_started
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse

from transcripts.db_availability import (
    describe,
    forget_connection,
    is_busy,
    is_outage,
    open_pool,
)
from transcripts.db_router import current_routing
from transcripts.json_errors import error_body
from transcripts.middleware import SyncAsyncMiddleware

logger = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5
BUSY_RETRY_AFTER_SECONDS = 1
API_PREFIX = "/api/"

UNAVAILABLE_PAGE = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Unavailable · Transcripts</title></head>
<body>
<h1>Transcripts is unavailable for a moment</h1>
<p>Its database does not answer right now. Try again in a few seconds.</p>
</body>
</html>
"""

BUSY_PAGE = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Busy · Transcripts</title></head>
<body>
<h1>Transcripts is busy</h1>
<p>Every connection to its database is in use right now. Try again in a second.</p>
</body>
</html>
"""


class _Reporter:
    """Logs an outage once per interval, not once per request that meets it."""

    def __init__(self, every_seconds: float) -> None:
        self.every_seconds = every_seconds
        self._last = float("-inf")
        self._lock = threading.Lock()

    def report(self, exc: BaseException) -> None:
        now = time.monotonic()
        with self._lock:
            if now - self._last < self.every_seconds:
                return
            self._last = now
        logger.warning("the database is unavailable (%s): answering 503", describe(exc))


_reporter = _Reporter(every_seconds=10.0)


def with_retry_after(response: HttpResponse, seconds: int = RETRY_AFTER_SECONDS) -> HttpResponse:
    """response marked as temporary: Retry-After, and not to be cached."""
    response["Retry-After"] = str(seconds)
    response["Cache-Control"] = "no-store"
    # The outage is reported once per interval (see _Reporter); Django would log every such
    # 503 as an error (and mail it to ADMINS when configured).
    response._has_been_logged = True  # type: ignore[attr-defined]
    return response


def unavailable_response(request: HttpRequest, exc: BaseException | None = None) -> HttpResponse:
    """503 with Retry-After: the API's JSON error shape under /api/, a plain page elsewhere;
    the `busy` answer instead when exc is a busy pool, not an outage."""
    if exc is not None and is_busy(exc):
        return busy_response(request)
    if exc is not None and not _replica_failed():
        _reporter.report(exc)
        forget_connection()
    message = f"the database is unavailable; try again in {RETRY_AFTER_SECONDS} s"
    return _temporary(request, "unavailable", message, UNAVAILABLE_PAGE, RETRY_AFTER_SECONDS)


def busy_response(
    request: HttpRequest, why: str = "every database connection is in use"
) -> HttpResponse:
    """503 with a short Retry-After: the process is busy (the database is fine); the API's
    JSON error shape with the code `busy` under /api/, a plain page elsewhere."""
    message = f"the server is busy ({why}); try again in {BUSY_RETRY_AFTER_SECONDS} s"
    return _temporary(request, "busy", message, BUSY_PAGE, BUSY_RETRY_AFTER_SECONDS)


def _temporary(
    request: HttpRequest, code: str, message: str, page: str, retry_after: int
) -> HttpResponse:
    """503 with Retry-After: the API's JSON error shape (code, message) under /api/, page
    elsewhere."""
    response: HttpResponse
    if request.path_info.startswith(API_PREFIX):
        body = error_body(code, message, {"retryAfter": retry_after})
        response = JsonResponse(body, status=503)
    else:
        response = HttpResponse(page, status=503, content_type="text/html")
    return with_retry_after(response, retry_after)


def _replica_failed() -> bool:
    """Whether this request's failure was the read replica's: the primary is fine, and
    `read_your_writes` serves the request again from it."""
    routing = current_routing.get()
    return routing is not None and routing.replica_failed


class OutageMiddleware(SyncAsyncMiddleware):
    """Answers a request that met a database outage with 503 and Retry-After, not a 500."""

    def handle(self, request: HttpRequest) -> HttpResponseBase:
        return self._checked(request, self.get_response(request))

    async def ahandle(self, request: HttpRequest) -> HttpResponseBase:
        return self._checked(request, await self.get_response(request))

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if is_outage(exception) and not _replica_failed():
            return unavailable_response(request, exception)
        return None

    def _checked(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        # An outage met outside a view (in another middleware) went to Django's 500 handler,
        # which told got_request_exception; the receiver below marked the request.
        if response.status_code == 500 and getattr(request, "database_busy", False):
            return busy_response(request)
        if response.status_code == 500 and getattr(request, "database_outage", False):
            return unavailable_response(request)
        return response


def _mark_outage(sender: object, request: HttpRequest | None = None, **kwargs: object) -> None:
    exc = sys.exc_info()[1]
    if request is not None and exc is not None and is_busy(exc):
        request.database_busy = True  # type: ignore[attr-defined]
    elif request is not None and exc is not None and is_outage(exc) and not _replica_failed():
        request.database_outage = True  # type: ignore[attr-defined]
        _reporter.report(exc)
        forget_connection()


class _IdleCheck:
    """Checks the pool's idle connections when a request follows a pause: a process that served
    nothing during an outage holds connections the restart broke, and psycopg_pool, finding a
    second broken one, would pause past the request's whole wait. Busy processes meet the
    outage themselves (and drop them, see forget_connection); they pay nothing here."""

    def __init__(self, after_seconds: float) -> None:
        self.after_seconds = after_seconds
        self._last = time.monotonic()

    def on_request_started(self, sender: object, **kwargs: object) -> None:
        now = time.monotonic()
        paused = now - self._last >= self.after_seconds
        self._last = now
        pool = open_pool() if paused else None
        if pool is not None:
            with suppress(Exception):
                pool.check()


_idle_check = _IdleCheck(after_seconds=1.0)
got_request_exception.connect(_mark_outage, dispatch_uid="transcripts.outage")
request_started.connect(_idle_check.on_request_started, dispatch_uid="transcripts.outage.idle")
