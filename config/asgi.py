"""ASGI entry point (uvicorn config.asgi:application).

Django's ASGI handler runs every sync middleware (most of settings.MIDDLEWARE) and the sync
view in thread hops of their own: a dozen per request, about 1 ms of CPU before the view does
anything (bench/bench_api.py). Event appends (`POST /api/v1/runs/{id}/events`, the ingest
path agents call the most) take one hop instead: the same middleware, in the same order, run
in their sync mode, as under WSGI (`OneHopASGIHandler`). Everything else, the live streams
(async views) first, keeps Django's own async path.
"""

from __future__ import annotations

import os
import re
from typing import IO, Any

import django
from asgiref.sync import sync_to_async
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.handlers.base import BaseHandler
from django.http import HttpResponseBase
from django.urls import set_script_prefix

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

# The requests served in one hop: event appends (never a streaming response).
ONE_HOP = re.compile(r"/api/v1/runs/[^/]+/events")


class OneHopASGIHandler(ASGIHandler):
    """Django's ASGI handler, but the requests ONE_HOP names run their whole way (request
    signals, every middleware, the view, closing the response) in one thread hop."""

    def __init__(self) -> None:
        super().__init__()
        # The same settings.MIDDLEWARE in their sync mode, loaded by the first append: built at
        # start-up, beside the async chain, they slowed a production server's first requests
        # past tests/production's timeouts.
        self.sync_handler: BaseHandler | None = None

    def sync_chain(self) -> BaseHandler:
        """The handler whose middleware run in their sync mode (built once; a race builds two
        equal ones, one of which is kept)."""
        if self.sync_handler is None:
            handler = BaseHandler()
            handler.load_middleware(is_async=False)
            self.sync_handler = handler
        return self.sync_handler

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("method") != "POST" or not ONE_HOP.fullmatch(scope.get("path", "")):
            await super().handle(scope, receive, send)
            return
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        set_script_prefix(get_script_prefix(scope))
        response = await sync_to_async(self.respond, thread_sensitive=True)(scope, body_file)
        await self.send_response(response, send)
        if response.streaming:  # not an append's answer; closed as Django would
            await sync_to_async(response.close)()

    def respond(self, scope: dict[str, Any], body_file: IO[bytes]) -> HttpResponseBase:
        """The response to a request, rendered and closed (request_finished sent: the database
        connection goes back to its pool before the answer is sent)."""
        signals.request_started.send(sender=self.__class__, scope=scope)
        try:
            request, error_response = self.create_request(scope, body_file)
            response = (
                error_response if request is None else self.sync_chain().get_response(request)
            )
            assert response is not None  # create_request gives a request or an error response
            response._handler_class = self.__class__  # type: ignore[attr-defined]
        finally:
            body_file.close()
        if not response.streaming:
            response.close()
        return response


def _application() -> OneHopASGIHandler:
    """What django.core.asgi.get_asgi_application does, with this handler."""
    django.setup(set_prefix=False)
    return OneHopASGIHandler()


application = _application()
