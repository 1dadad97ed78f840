"""URLs under /api/v1/: the live stream (plain async view), the ninja API, JSON 404s."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponseBase
from django.urls import URLPattern, URLResolver, path, re_path

from transcripts.api import api, stream
from transcripts.api.docs import docs_asset
from transcripts.api.errors import error_response


def _json_method_not_allowed(
    view: Callable[..., HttpResponseBase],
) -> Callable[..., HttpResponseBase]:
    """Give ninja's bare 405 responses the API's error shape."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        response = view(request, *args, **kwargs)
        if response.status_code == 405 and "json" not in response.get("Content-Type", ""):
            allowed = response.get("Allow", "")
            json_response = error_response(
                405,
                "method_not_allowed",
                f"{request.method} is not allowed here",
                {"allowed": [m.strip() for m in allowed.split(",") if m.strip()]},
            )
            json_response["Allow"] = allowed
            return json_response
        return response

    return wrapper


def _ninja_patterns() -> list[URLPattern | URLResolver]:
    patterns, _, _ = api.urls
    for pattern in patterns:
        if isinstance(pattern, URLPattern):
            pattern.callback = _json_method_not_allowed(pattern.callback)
    return patterns


def not_found(request: HttpRequest, unknown: str = "") -> HttpResponseBase:
    """A JSON 404 for any path under the API that does not exist."""
    return error_response(404, "not_found", f"no API endpoint at {request.path}")


app_name = "api-v1"
urlpatterns: list[URLPattern | URLResolver] = [
    path("runs/<str:run_id>/stream", stream.run_stream, name="run-stream"),
    path("docs/assets/<str:name>", docs_asset, name="docs-asset"),
    *_ninja_patterns(),
    re_path(r"^(?P<unknown>.*)$", not_found),
]
