"""The skeleton every Transcripts middleware shares: one class that serves both Django's sync
stack and its async one (ASGI), so a request never changes threads for it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponseBase


class SyncAsyncMiddleware:
    """A middleware for both stacks: subclasses write `handle` (sync) and `ahandle` (async),
    each calling `self.get_response` the way its stack does."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.async_mode = iscoroutinefunction(get_response)
        if self.async_mode:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> HttpResponseBase | Awaitable[HttpResponseBase]:
        if self.async_mode:
            return self.ahandle(request)
        return self.handle(request)

    def handle(self, request: HttpRequest) -> HttpResponseBase:
        """The response to request on the sync stack."""
        raise NotImplementedError

    async def ahandle(self, request: HttpRequest) -> HttpResponseBase:
        """The response to request on the async stack."""
        raise NotImplementedError
