"""The ingest API (django-ninja): one NinjaAPI with a router per area, mounted at /api/v1/."""

from __future__ import annotations

from ninja import NinjaAPI

from transcripts.api import (
    ai_sdk,
    chat,
    datasets,
    events,
    otlp,
    runs,
    shares,
    threads,
    transfer,
    workers,
)
from transcripts.api.docs import LocalSwagger
from transcripts.api.errors import JsonBodyParser, install_handlers

api = NinjaAPI(
    title="Transcripts ingest API",
    version="1",
    description="The JSON API that agent runtimes post to. See docs/api.md.",
    urls_namespace="api-v1",
    parser=JsonBodyParser(),
    docs=LocalSwagger(),
)
install_handlers(api)
api.add_router("", threads.router)
api.add_router("", runs.router)
api.add_router("", events.router)
api.add_router("", ai_sdk.router)
api.add_router("", workers.router)
api.add_router("", transfer.router)
api.add_router("", otlp.router)
api.add_router("", chat.router)
api.add_router("", shares.router)
api.add_router("", datasets.router)
