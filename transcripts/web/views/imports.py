"""The import page: upload a file or export zip into the current project, watch a large
import's progress, read its report, open the new threads."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_http_methods

from transcripts import interchange, selectors
from transcripts.errors import DomainError
from transcripts.formats import FORMATS
from transcripts.permissions import NO_ACCESS, Role, project_access, readable_threads
from transcripts.web.access import (
    current_project,
    get_import_job_for_user,
    import_jobs_for_user,
    login_required,
    require_role,
)
from transcripts.web.http import HtmxHttpRequest

TEMPLATE = "transcripts/import.html"
NO_PROJECT = "transcripts/no_project.html"
# A ChatGPT export holds thousands of conversations: the result lists the first ones.
LISTED = 50


def _listed(request: HttpRequest, thread_ids: list[str]) -> dict[str, Any]:
    """The first LISTED imported threads the user may still read, and how many more there are."""
    threads = selectors.imported_threads(readable_threads(request.user), thread_ids, LISTED)
    return {"threads": threads, "more": len(thread_ids) - len(threads)}


def _context(request: HttpRequest, **extra: Any) -> dict[str, Any]:
    """What every state of the page shows: the formats, and the project imports go into."""
    project = current_project(request)
    access = project_access(request.user, project) if project is not None else NO_ACCESS
    formats = [(key, spec.label) for key, spec in FORMATS.items() if spec.importer is not None]
    return {"formats": formats, "project": project, "access": access, **extra}


@login_required
@require_http_methods(["GET", "POST"])
def import_page(request: HtmxHttpRequest) -> HttpResponse:
    """GET: the upload form. POST: import into the current project (an editor's), now (small
    files) or as a job (large ones)."""
    project = current_project(request)
    if project is None:
        return render(request, NO_PROJECT)
    if request.method == "GET":
        jobs = selectors.latest_jobs(import_jobs_for_user(request), 10)
        return render(request, TEMPLATE, _context(request, jobs=jobs))
    require_role(project_access(request.user, project), Role.EDITOR, f"import into {project}")
    upload = request.FILES.get("file")
    fmt = str(request.POST.get("format") or "") or None
    partial = f"{TEMPLATE}#result" if request.htmx else TEMPLATE
    if upload is None:
        context = _context(request, error="Choose a file to import.")
        return render(request, partial, context, status=422)
    if upload.size and upload.size > int(settings.TRANSCRIPTS_MAX_IMPORT_BYTES):
        message = f"The file is larger than {settings.TRANSCRIPTS_MAX_IMPORT_BYTES} bytes."
        return render(request, partial, _context(request, error=message), status=413)
    try:
        if (upload.size or 0) > int(settings.TRANSCRIPTS_SYNC_IMPORT_BYTES):
            job = interchange.queue_import(
                content=upload,
                filename=upload.name or "upload",
                size=upload.size or 0,
                fmt=fmt,
                project=project,
                user=request.user,
            )
            return render(request, partial, _context(request, job=job), status=202)
        result = interchange.import_stream(upload, fmt, project=project)  # type: ignore[arg-type]
    except DomainError as exc:
        problems = exc.details.get("problems") or []
        context = _context(request, error=exc.message, problems=problems[:50])
        return render(request, partial, context, status=exc.status)
    listed = _listed(request, result.thread_ids)
    return render(request, partial, _context(request, result=result, **listed), status=201)


@login_required
@require_GET
def import_progress(request: HtmxHttpRequest, job_id: str) -> HttpResponse:
    """A job's progress (polled by the page while it runs)."""
    job = get_import_job_for_user(request, job_id)
    done = job.status == "done"
    listed = _listed(request, job.thread_ids) if done else {"threads": [], "more": 0}
    template = f"{TEMPLATE}#job" if request.htmx else TEMPLATE
    return render(request, template, _context(request, job=job, **listed))
