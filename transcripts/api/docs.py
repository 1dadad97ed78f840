"""Interactive API docs served from ninja's own Swagger UI files, never from a CDN."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ninja
from django.http import FileResponse, HttpRequest, HttpResponse, HttpResponseBase
from django.urls import reverse
from django.utils.html import escape
from django.views.decorators.http import require_GET
from ninja.openapi.docs import Swagger

from transcripts.api.errors import error_response

if TYPE_CHECKING:
    from ninja import NinjaAPI

ASSETS_DIR = Path(ninja.__file__).parent / "static" / "ninja"
ASSETS = {
    "swagger-ui.css": "text/css",
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui-init.js": "text/javascript",
    "favicon.svg": "image/svg+xml",
    "favicon.png": "image/png",
}
# The bar on top is Swagger UI's own (its stylesheet styles it): a way back to the app.
PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="stylesheet" href="{assets}swagger-ui.css">
<link rel="icon" href="{assets}favicon.svg" type="image/svg+xml">
</head>
<body>
<header class="swagger-ui"><nav class="topbar" aria-label="Transcripts"><div class="wrapper">
<div class="topbar-wrapper"><a href="{home}">← Back to Transcripts</a></div></div></nav></header>
<script type="application/json" id="swagger-settings">{settings}</script>
<div id="swagger-ui"></div>
<script src="{assets}swagger-ui-bundle.js"></script>
<script src="{assets}swagger-ui-init.js"></script>
</body>
</html>
"""


class LocalSwagger(Swagger):
    """Swagger UI from ninja's bundled files: no CDN, no inline script or style (CSP-safe)."""

    # Swagger UI would otherwise send the schema's URL to validator.swagger.io for a badge.
    default_settings = {**Swagger.default_settings, "validatorUrl": None}

    def render_page(self, request: HttpRequest, api: NinjaAPI, **kwargs: Any) -> HttpResponse:
        settings = {**self.settings, "url": self.get_openapi_url(api, kwargs)}
        assets = reverse(f"{api.urls_namespace}:docs-asset", args=["x"])[:-1]
        return HttpResponse(
            PAGE.format(
                title=escape(api.title),
                assets=assets,
                home=reverse("thread_list"),
                settings=json.dumps(settings).replace("<", "\\u003c"),
            )
        )


@require_GET
def docs_asset(request: HttpRequest, name: str) -> HttpResponseBase:
    """One of the bundled Swagger UI files."""
    if name not in ASSETS:
        return error_response(404, "not_found", f"no asset {name}")
    response = FileResponse((ASSETS_DIR / name).open("rb"), content_type=ASSETS[name])
    response["Cache-Control"] = "public, max-age=86400"
    return response
