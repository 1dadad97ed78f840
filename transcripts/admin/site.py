"""The admin site: Django's, titled for Transcripts, with the moderation counts on its index."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.template.response import TemplateResponse

from transcripts import selectors


class TranscriptsAdminSite(admin.AdminSite):
    """The default admin site (`admin.site`), installed by TranscriptsAdminConfig."""

    site_header = "Transcripts administration"
    site_title = "Transcripts admin"
    index_template = "admin/transcripts_index.html"

    def index(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> TemplateResponse:
        """The index, with open reports, flagged messages and hidden threads on top."""
        context = {**selectors.moderation_counts(), **(extra_context or {})}
        return super().index(request, extra_context=context)
