"""Read-your-writes with a read replica: which requests may read from it, and for how long a
client that wrote reads from the primary.

A GET or HEAD reads from the replica (`db_router.ReplicaRouter`) unless the client wrote in the
last TRANSCRIPTS_READ_PRIMARY_SECONDS (the `transcripts_primary` cookie, set on the response of
every request that wrote: any POST/PUT/PATCH/DELETE, or a GET that saved a session), asks for the
primary with the `Transcripts-Read: primary` header (API clients that keep no cookies), or
follows a live run (`…/stream`, which must see events the moment they are notified).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponseBase

from transcripts.db_router import ReadRouting, current_routing

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


class ReadYourWritesMiddleware:
    """Routes a request's reads (see the module) and marks a client that wrote."""

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
        routing = ReadRouting(replica_allowed=may_read_replica(request))
        token = current_routing.set(routing)
        try:
            response = self.get_response(request)
        finally:
            current_routing.reset(token)
        return self._marked(request, routing, response)

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        routing = ReadRouting(replica_allowed=may_read_replica(request))
        token = current_routing.set(routing)
        try:
            response = await self.get_response(request)
        finally:
            current_routing.reset(token)
        return self._marked(request, routing, response)

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
