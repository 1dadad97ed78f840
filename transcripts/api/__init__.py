"""The ingest API (django-ninja): one NinjaAPI with a router per area, mounted at /api/v1/.

Each router is mounted under the prefix its paths share and gives its operations one tag;
a router whose operations also hang below a thread has a `thread_router` mounted at
/threads beside it (the same tag).
"""

from __future__ import annotations

from ninja import NinjaAPI

from transcripts.api import (
    ai_sdk,
    chat,
    datasets,
    events,
    experiments,
    forks,
    generator_jobs,
    otlp,
    queues,
    runs,
    scores,
    shares,
    stats,
    threads,
    transfer,
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
api.add_router("/threads", threads.router, tags=["threads"])
api.add_router("/threads", runs.thread_router, tags=["runs"])
api.add_router("/runs", runs.router, tags=["runs"])
api.add_router("/runs", events.router, tags=["events"])
api.add_router("/runs", ai_sdk.router, tags=["ai-sdk"])
api.add_router("/runs", generator_jobs.router, tags=["generator jobs"])
api.add_router("/threads", transfer.thread_router, tags=["import and export"])
api.add_router("/imports", transfer.router, tags=["import and export"])
api.add_router("/otlp", otlp.router, tags=["otlp"])
api.add_router("/chat", chat.router, tags=["chat"])
api.add_router("/threads", shares.thread_router, tags=["shares"])
api.add_router("/shares", shares.router, tags=["shares"])
api.add_router("/datasets", datasets.router, tags=["datasets"])
api.add_router("/messages", forks.router, tags=["threads"])
api.add_router("/projects", stats.router, tags=["stats"])
api.add_router("", scores.router, tags=["scores"])
api.add_router("/queues", queues.router, tags=["queues"])
api.add_router("/experiments", experiments.router, tags=["experiments"])
