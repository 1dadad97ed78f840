"""The import page: upload a file, watch a large import's progress, open the new threads."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_http_methods

from transcripts import transfer
from transcripts.errors import DomainError
from transcripts.formats import FORMATS
from transcripts.models import Project
from transcripts.web.access import (
    access_for,
    get_import_job_for_user,
    import_jobs_for_user,
    login_required,
    require,
)
from transcripts.web.http import HtmxHttpRequest

TEMPLATE = "transcripts/import.html"
# A ChatGPT export holds thousands of conversations: the result lists the first ones.
LISTED = 50


def _listed(thread_ids: list[str]) -> dict[str, Any]:
    """The first LISTED imported threads, and how many more there are."""
    threads = list(transfer.iter_threads(thread_ids)[:LISTED])
    return {"threads": threads, "more": len(thread_ids) - len(threads)}


def _formats() -> list[tuple[str, str]]:
    return [(key, spec.label) for key, spec in FORMATS.items() if spec.importer is not None]


def _context(**extra: Any) -> dict[str, Any]:
    return {"formats": _formats(), **extra}


@login_required
@require_http_methods(["GET", "POST"])
def import_page(request: HtmxHttpRequest) -> HttpResponse:
    """GET: the upload form. POST: import now (small files) or queue a job (large ones)."""
    if request.method == "GET":
        jobs = import_jobs_for_user(request).order_by("-created_at")[:10]
        return render(request, TEMPLATE, _context(jobs=jobs))
    require(access_for(request).can_edit, "You may read threads but not import them.")
    upload = request.FILES.get("file")
    fmt = str(request.POST.get("format") or "") or None
    partial = f"{TEMPLATE}#result" if request.htmx else TEMPLATE
    if upload is None:
        return render(request, partial, _context(error="Choose a file to import."), status=422)
    if upload.size and upload.size > int(settings.TRANSCRIPTS_MAX_IMPORT_BYTES):
        message = f"The file is larger than {settings.TRANSCRIPTS_MAX_IMPORT_BYTES} bytes."
        return render(request, partial, _context(error=message), status=413)
    try:
        if (upload.size or 0) > int(settings.TRANSCRIPTS_SYNC_IMPORT_BYTES):
            job = transfer.queue_import(
                content=upload,
                filename=upload.name or "upload",
                size=upload.size or 0,
                fmt=fmt,
                project=Project.default(),
                user=request.user,
            )
            return render(request, partial, _context(job=job), status=202)
        result = transfer.import_stream(upload, fmt, project=Project.default())  # type: ignore[arg-type]
    except DomainError as exc:
        problems = exc.details.get("problems") or []
        return render(
            request, partial, _context(error=exc.message, problems=problems[:50]), status=exc.status
        )
    listed = _listed(result.thread_ids)
    return render(request, partial, _context(result=result, **listed), status=201)


@login_required
@require_GET
def import_progress(request: HtmxHttpRequest, job_id: str) -> HttpResponse:
    """A job's progress (polled by the page while it runs)."""
    job = get_import_job_for_user(request, job_id)
    listed = _listed(job.thread_ids) if job.status == "done" else {"threads": [], "more": 0}
    template = f"{TEMPLATE}#job" if request.htmx else TEMPLATE
    return render(request, template, _context(job=job, **listed))
