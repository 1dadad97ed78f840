"""Database outages: what counts as one, and how every part answers it.

While PostgreSQL is down or unreachable, a request that needs it fails within about a second
(libpq's `connect_timeout` and the pool's `timeout`, TRANSCRIPTS_DB_CONNECT_TIMEOUT and
TRANSCRIPTS_DB_POOL_TIMEOUT) and is answered 503 with Retry-After: pages with a plain page,
the API with its JSON error shape. `/healthz` never touches the database; `/readyz` says
whether it answers and why not. The worker and the live stream use the same test of what an
outage is, so they wait and retry instead of failing.
"""

from __future__ import annotations

import logging
import random
import sys
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Any, TypeVar

import psycopg
from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.core.signals import got_request_exception, request_started
from django.db import Error, InterfaceError, connection
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from psycopg_pool import PoolTimeout

logger = logging.getLogger(__name__)
T = TypeVar("T")

RETRY_AFTER_SECONDS = 5
# SQLSTATEs of a server that cannot serve anyone right now (shutting down, crashed, starting
# up, out of connections), as opposed to refusing one statement.
_UNAVAILABLE_STATES = frozenset({"57P01", "57P02", "57P03", "53300"})
# Keys of Django's OPTIONS that are not libpq connection parameters.
_DJANGO_ONLY_OPTIONS = frozenset({"isolation_level", "server_side_binding", "pool", "assume_role"})
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


def _cause(exc: BaseException) -> BaseException:
    """The driver's exception behind Django's wrapper of it."""
    if isinstance(exc, Error) and exc.__cause__ is not None:
        return exc.__cause__
    return exc


def is_outage(exc: BaseException) -> bool:
    """Whether exc means the database cannot be reached or cannot serve (down, restarting,
    cut off, no connection to be had), rather than a refusal of one statement."""
    cause = _cause(exc)
    if isinstance(cause, psycopg.InterfaceError):
        return True
    if isinstance(cause, psycopg.OperationalError):
        # Failures to connect or to stay connected come from libpq itself, with no SQLSTATE.
        state = cause.sqlstate
        return state is None or state.startswith("08") or state in _UNAVAILABLE_STATES
    return isinstance(exc, InterfaceError)


def describe(exc: BaseException) -> str:
    """What went wrong, in one line, without the server's address."""
    cause = _cause(exc)
    text = str(cause).strip()
    first_line = text.splitlines()[0] if text else type(cause).__name__
    # libpq says 'connection to server on socket "/path" failed: Connection refused'.
    _, found, reason = first_line.rpartition("failed: ")
    return (reason if found else first_line).strip() or type(cause).__name__


def forget_connection() -> None:
    """After an outage: drop this thread's connection and the pool's idle ones, so the next use
    connects afresh. A restart breaks every idle pooled connection, and psycopg_pool would find
    them one check at a time, pausing a second after the second one (a request's whole wait)."""
    with suppress(Exception):
        connection.close()
    pool = _open_pool()
    if pool is not None:
        with suppress(Exception):
            pool.drain()


def _open_pool() -> Any:
    """This process's connection pool, if it is open (a pool not opened yet must be left
    alone: psycopg_pool loses the work asked of it before it opens)."""
    pool = getattr(connection, "pool", None)
    return pool if pool is not None and not pool.closed else None


def conninfo() -> str:
    """libpq connection string of the default database (its timeouts included)."""
    db = settings.DATABASES["default"]
    params: dict[str, Any] = {
        "dbname": db.get("NAME") or None,
        "user": db.get("USER") or None,
        "password": db.get("PASSWORD") or None,
        "host": db.get("HOST") or None,
        "port": db.get("PORT") or None,
    }
    options = db.get("OPTIONS") or {}
    params.update({k: v for k, v in options.items() if k not in _DJANGO_ONLY_OPTIONS})
    return psycopg.conninfo.make_conninfo(**{k: v for k, v in params.items() if v is not None})


class Backoff:
    """Pauses between attempts against a database that fails: doubling from `first` up to
    `most` seconds (with jitter, so workers do not come back in step), and from `first` again
    once `calm_after` seconds have passed without a failure."""

    def __init__(self, first: float = 0.25, most: float = 2.0, calm_after: float = 60.0) -> None:
        self.first, self.most, self.calm_after = first, most, calm_after
        self._failures = 0
        self._last_failure = float("-inf")

    def next_delay(self) -> float:
        now = time.monotonic()
        if now - self._last_failure > self.calm_after:
            self._failures = 0
        self._last_failure = now
        delay = min(self.most, self.first * 2**self._failures)
        self._failures += 1
        return float(delay * random.uniform(0.8, 1.2))


def patiently(action: Callable[[], T], *, what: str) -> T:
    """action(), tried again after a growing pause for as long as the database is unavailable
    (other errors are raised at once)."""
    backoff = Backoff()
    failing_since: float | None = None
    while True:
        try:
            result = action()
        except Error as exc:
            if not is_outage(exc):
                raise
            if failing_since is None:
                failing_since = time.monotonic()
                logger.warning(
                    "%s: the database is unavailable (%s); trying again until it answers",
                    what,
                    describe(exc),
                )
            forget_connection()
            time.sleep(backoff.next_delay())
        else:
            if failing_since is not None:
                waited = time.monotonic() - failing_since
                logger.warning("%s: the database is back after %.1f s", what, waited)
            return result


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


def with_retry_after(response: HttpResponse) -> HttpResponse:
    """response marked as temporary: Retry-After, and not to be cached."""
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    response["Cache-Control"] = "no-store"
    # The outage is reported once per interval (see _Reporter); Django would log every such
    # 503 as an error (and mail it to ADMINS when configured).
    response._has_been_logged = True  # type: ignore[attr-defined]
    return response


def unavailable_response(request: HttpRequest, exc: BaseException | None = None) -> HttpResponse:
    """503 with Retry-After: the API's JSON error shape under /api/, a plain page elsewhere."""
    if exc is not None and not _replica_failed():
        _reporter.report(exc)
        forget_connection()
    response: HttpResponse
    if request.path_info.startswith(API_PREFIX):
        # Imported here: the worker uses this module and has no use for the API.
        from transcripts.api.errors import error_body

        message = f"the database is unavailable; try again in {RETRY_AFTER_SECONDS} s"
        body = error_body("unavailable", message, {"retryAfter": RETRY_AFTER_SECONDS})
        response = JsonResponse(body, status=503)
    else:
        response = HttpResponse(UNAVAILABLE_PAGE, status=503, content_type="text/html")
    return with_retry_after(response)


def _replica_failed() -> bool:
    """Whether this request's failure was the read replica's: the primary is fine, and
    `read_your_writes` serves the request again from it."""
    # Imported here: db_router uses this module.
    from transcripts.db_router import current_routing

    routing = current_routing.get()
    return routing is not None and routing.replica_failed


def database_problem() -> str:
    """'' when the database answers this process; else why not, in a line."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Error as exc:
        forget_connection()
        if isinstance(_cause(exc), PoolTimeout):
            # The pool only says it waited: ask the server directly what is wrong.
            try:
                psycopg.connect(conninfo(), autocommit=True).close()
            except psycopg.Error as direct:
                return describe(direct)
            return "the database answers, but no pooled connection came free in time"
        return describe(exc)
    return ""


class OutageMiddleware:
    """Answers a request that met a database outage with 503 and Retry-After, not a 500."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.async_mode = iscoroutinefunction(get_response)
        if self.async_mode:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.async_mode:
            return self.__acall__(request)
        return self._checked(request, self.get_response(request))

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        return self._checked(request, await self.get_response(request))

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if is_outage(exception) and not _replica_failed():
            return unavailable_response(request, exception)
        return None

    def _checked(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        # An outage met outside a view (in another middleware) went to Django's 500 handler,
        # which told got_request_exception; the receiver below marked the request.
        if response.status_code == 500 and getattr(request, "database_outage", False):
            return unavailable_response(request)
        return response


def _mark_outage(sender: Any, request: HttpRequest | None = None, **kwargs: Any) -> None:
    exc = sys.exc_info()[1]
    if request is not None and exc is not None and is_outage(exc) and not _replica_failed():
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

    def on_request_started(self, sender: Any, **kwargs: Any) -> None:
        now = time.monotonic()
        paused = now - self._last >= self.after_seconds
        self._last = now
        pool = _open_pool() if paused else None
        if pool is not None:
            with suppress(Exception):
                pool.check()


_idle_check = _IdleCheck(after_seconds=1.0)
got_request_exception.connect(_mark_outage, dispatch_uid="transcripts.outage")
request_started.connect(_idle_check.on_request_started, dispatch_uid="transcripts.outage.idle")
