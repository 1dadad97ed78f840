"""The admin site: Django's, titled for Transcripts, with the moderation counts on its index."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest
from django.template.response import TemplateResponse

from transcripts import selectors
from transcripts.permissions import Role, project_ids


class TranscriptsAdminSite(admin.AdminSite):
    """The default admin site (`admin.site`), installed by TranscriptsAdminConfig.

    Staff status lets a user in (Django's rule); what they find inside is decided per project
    by `transcripts.permissions` (see `scope.py`).
    """

    site_header = "Transcripts administration"
    site_title = "Transcripts admin"
    index_template = "admin/transcripts_index.html"

    def index(
        self, request: HttpRequest, extra_context: dict[str, object] | None = None
    ) -> TemplateResponse:
        """The index, with what waits in the projects the user moderates on top."""
        moderated = project_ids(request.user, at_least=Role.MODERATOR)
        context: dict[str, object] = {"moderates": moderated is None or bool(moderated)}
        if context["moderates"]:
            context.update(selectors.moderation_counts(project_ids=moderated))
        return super().index(request, extra_context={**context, **(extra_context or {})})
