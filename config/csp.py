"""The Content-Security-Policy header: one policy (settings.TRANSCRIPTS_CSP) on every response."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponseBase
from django.utils.decorators import sync_and_async_middleware

HEADER = "Content-Security-Policy"


def with_policy(response: HttpResponseBase) -> HttpResponseBase:
    """The response with the site's policy, unless a view set its own or the policy is off."""
    policy: str = settings.TRANSCRIPTS_CSP
    if policy and HEADER not in response.headers:
        response.headers[HEADER] = policy
    return response


@sync_and_async_middleware
def content_security_policy(
    get_response: Callable[[HttpRequest], Any],
) -> Callable[[HttpRequest], HttpResponseBase | Awaitable[HttpResponseBase]]:
    """Sync or async as the handler is, so SSE streams stay on the event loop."""
    if iscoroutinefunction(get_response):

        async def async_middleware(request: HttpRequest) -> HttpResponseBase:
            return with_policy(await get_response(request))

        return async_middleware

    def middleware(request: HttpRequest) -> HttpResponseBase:
        return with_policy(get_response(request))

    return middleware
