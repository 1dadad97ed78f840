"""Read-your-writes with a read replica: which requests may read from it, and for how long a
client that wrote reads from the primary.

A GET or HEAD reads from the replica (`db_router.ReplicaRouter`) unless the client wrote in the
last TRANSCRIPTS_READ_PRIMARY_SECONDS (the `transcripts_primary` cookie, set on the response of
every request that wrote: any POST/PUT/PATCH/DELETE, or a GET that saved a session), asks for the
primary with the `Transcripts-Read: primary` header (API clients that keep no cookies), or
follows a live run (`…/stream`, which must see events the moment they are notified).

A request whose read the replica fails (down mid-request, or a query cancelled by a conflict
with recovery: see `db_router`) is served once more, from the primary: a GET writes nothing, so
the page or answer comes out as if the replica had not been there.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase

from transcripts.db_router import ReadRouting, current_routing
from transcripts.middleware import SyncAsyncMiddleware

PRIMARY_COOKIE = "transcripts_primary"
PRIMARY_HEADER = "Transcripts-Read"
READ_METHODS = frozenset({"GET", "HEAD"})


def primary_seconds() -> int:
    """How long after a write the client's reads go to the primary."""
    return int(getattr(settings, "TRANSCRIPTS_READ_PRIMARY_SECONDS", 5))


def may_read_replica(request: HttpRequest) -> bool:
    """Whether request is a plain read that a replica a moment behind may answer."""
    return (
        request.method in READ_METHODS
        and PRIMARY_COOKIE not in request.COOKIES
        and request.headers.get(PRIMARY_HEADER, "").strip().lower() != "primary"
        and not request.path_info.rstrip("/").endswith("/stream")
    )


class ReadYourWritesMiddleware(SyncAsyncMiddleware):
    """Routes a request's reads (see the module) and marks a client that wrote."""

    def handle(self, request: HttpRequest) -> HttpResponseBase:
        routing = ReadRouting(replica_allowed=may_read_replica(request))
        response = self._served(request, routing)
        if routing.replica_failed:
            _discard(response)
            routing = ReadRouting(replica_allowed=False)
            response = self._served(request, routing)
        return self._marked(request, routing, response)

    def _served(self, request: HttpRequest, routing: ReadRouting) -> HttpResponseBase:
        token = current_routing.set(routing)
        try:
            response: HttpResponseBase = self.get_response(request)
            return response
        finally:
            current_routing.reset(token)

    async def ahandle(self, request: HttpRequest) -> HttpResponseBase:
        routing = ReadRouting(replica_allowed=may_read_replica(request))
        response = await self._aserved(request, routing)
        if routing.replica_failed:
            _discard(response)
            routing = ReadRouting(replica_allowed=False)
            response = await self._aserved(request, routing)
        return self._marked(request, routing, response)

    async def _aserved(self, request: HttpRequest, routing: ReadRouting) -> HttpResponseBase:
        token = current_routing.set(routing)
        try:
            response: HttpResponseBase = await self.get_response(request)
            return response
        finally:
            current_routing.reset(token)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        """A view's exception from a failed replica read is answered by the retry: not logged
        as a server error, nor taken for an outage of the primary."""
        routing = current_routing.get()
        if routing is None or not routing.replica_failed:
            return None
        placeholder = HttpResponse(status=503)
        placeholder._has_been_logged = True  # type: ignore[attr-defined]
        return placeholder

    def _marked(
        self, request: HttpRequest, routing: ReadRouting, response: HttpResponseBase
    ) -> HttpResponseBase:
        if routing.wrote or request.method not in READ_METHODS:
            response.set_cookie(
                PRIMARY_COOKIE,
                "1",
                max_age=primary_seconds(),
                secure=settings.SESSION_COOKIE_SECURE,
                httponly=True,
                samesite="Lax",
            )
        return response


def _discard(response: HttpResponseBase) -> None:
    """Release what the failed attempt's response holds (its streamed content, if any)."""
    response.close()
