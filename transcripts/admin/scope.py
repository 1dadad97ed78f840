"""Which projects' records a user meets in the admin, and what they may do with them.

Django's model permissions and groups decide nothing here: every answer comes from
`transcripts.permissions`. Staff status only opens the door of the admin site; inside, a member
sees the records of the projects where they hold the admin's role (moderator for the moderation
models, admin for tokens, projects and members), superusers see everything. A record of any
other project is not there: it is missing from lists, searches and actions, and its page is a
404 (never a 403, which would confirm it exists).
"""

from __future__ import annotations

from operator import attrgetter
from typing import TypeVar

from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.db.models import Model, QuerySet
from django.http import Http404, HttpRequest
from django.utils.safestring import SafeString

from transcripts.admin.changelist_rows import RowsChangeList, action_checkbox
from transcripts.admin.paging import BoundedCountPaginator
from transcripts.permissions import Role, project_ids, projects_of

M = TypeVar("M", bound=Model)


class ProjectScopedAdmin(admin.ModelAdmin[M]):
    """A model admin showing only the records of the projects where the user holds view_role."""

    # The path from a record to its project's id, as a queryset lookup.
    project_field = "project_id"
    # The role in a record's project that lets a member see it here.
    view_role = Role.MODERATOR
    # Lists of millions of rows: count at most 10,000, estimate past it (see paging.py), and
    # never count the whole unfiltered table beside a filtered list ("N total").
    paginator = BoundedCountPaginator
    show_full_result_count = False
    # Fields (and fields of list_select_related models) no column of the list reads.
    list_defer: tuple[str, ...] = ()

    def project_ids(self, request: HttpRequest, role: Role | None = None) -> list[int] | None:
        """The projects where the user holds role (default: view_role); None means all."""
        return project_ids(request.user, at_least=role or self.view_role)

    def in_scope(
        self, request: HttpRequest, queryset: QuerySet[M], role: Role | None = None
    ) -> QuerySet[M]:
        """The records of queryset in the projects where the user holds role."""
        ids = self.project_ids(request, role)
        if ids is None:
            return queryset
        return queryset.filter(**{f"{self.project_field}__in": ids})

    def project_id_of(self, obj: M) -> int | None:
        """The id of the project obj belongs to (None: no project, e.g. a system record)."""
        value = attrgetter(self.project_field.replace("__", "."))(obj)
        return None if value is None else int(value)

    def holds(self, request: HttpRequest, role: Role, obj: M | None = None) -> bool:
        """Whether the user holds role in obj's project (without obj: in some project)."""
        ids = self.project_ids(request, role)
        if ids is None:
            return True
        if obj is None:
            return bool(ids)
        return self.project_id_of(obj) in ids

    def get_queryset(self, request: HttpRequest) -> QuerySet[M]:
        return self.in_scope(request, super().get_queryset(request))

    def get_changelist(self, request: HttpRequest, **kwargs: object) -> type[ChangeList]:
        return RowsChangeList

    def action_checkbox(self, obj: M) -> SafeString:
        # Django renders a form widget template per row; the same HTML, written directly.
        return action_checkbox(obj)

    def get_object(
        self, request: HttpRequest, object_id: str, from_field: str | None = None
    ) -> M | None:
        """The record, among those the user may see; else 404 (403 if they may see none)."""
        # Django would redirect to the index saying the record does not exist. A 404 says so
        # to browsers and scripts alike, the same for other projects' records and deleted
        # ones; the 403 depends on the user's roles only, never on the id.
        obj = self.find_object(request, object_id, from_field)
        if obj is not None:
            return obj
        if not self.has_view_permission(request):
            raise PermissionDenied(
                f"{self.opts.verbose_name_plural} are shown to members with the "
                f"{self.view_role.label} role in a project"
            )
        raise Http404(f"no {self.opts.verbose_name} with this id")

    def find_object(
        self, request: HttpRequest, object_id: str, from_field: str | None = None
    ) -> M | None:
        """The record of object_id among those the user may see, or None (Django's lookup)."""
        return super().get_object(request, object_id, from_field)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.holds(request, self.view_role)

    def has_view_permission(self, request: HttpRequest, obj: M | None = None) -> bool:
        return self.holds(request, self.view_role, obj)

    def has_moderate_permission(self, request: HttpRequest) -> bool:
        """Hide, lock, flag, handle reports: moderators of some project."""
        return self.holds(request, Role.MODERATOR)

    def has_administer_permission(self, request: HttpRequest) -> bool:
        """Redact, delete, tokens, members: admins of some project."""
        return self.holds(request, Role.ADMIN)

    def where_allowed(
        self, request: HttpRequest, queryset: QuerySet[M], *, role: Role, action: str
    ) -> QuerySet[M]:
        """The selected records in projects where the user holds role; says how many are not."""
        allowed = self.in_scope(request, queryset, role)
        left_out = queryset.count() - allowed.count()
        if left_out:
            self.message_user(
                request,
                f"{left_out} selected object(s) left alone: {action} needs the {role.label} "
                "role in their project.",
                messages.WARNING,
            )
        return allowed


class ProjectFilter(admin.SimpleListFilter):
    """The projects whose records the list shows (offered when there are several)."""

    title = "project"
    parameter_name = "project"

    def __init__(
        self,
        request: HttpRequest,
        params: dict[str, list[str]],
        model: type[Model],
        model_admin: ProjectScopedAdmin[Model],
    ) -> None:
        self.project_field = model_admin.project_field
        self.view_role = model_admin.view_role
        super().__init__(request, params, model, model_admin)

    def lookups(
        self, request: HttpRequest, model_admin: admin.ModelAdmin[Model]
    ) -> list[tuple[str, str]]:
        projects = projects_of(request.user, at_least=self.view_role)
        choices = [(str(project.pk), str(project)) for project in projects]
        return choices if len(choices) > 1 else []

    def queryset(self, request: HttpRequest, queryset: QuerySet[Model]) -> QuerySet[Model]:
        value = self.value()
        if value and value.isdigit():
            return queryset.filter(**{self.project_field: int(value)})
        return queryset
