"""The project admin: superusers create and rename projects; project admins set retention."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce
from django.http import HttpRequest

from transcripts.admin.actions import NoDeleteMixin, changelist_url, links
from transcripts.admin.scope import ProjectScopedAdmin
from transcripts.ledger.projects import (
    MAX_RETENTION_DAYS,
    create_project,
    rename_project,
    set_retention,
)
from transcripts.models import Membership, Project, Thread
from transcripts.permissions import Role, is_superuser

ADD_FIELDS = ("slug", "name", "retention_days")
# The slug stays: project pages, the command line and scripts refer to it.
FIXED_FIELDS = ("slug", "created_at", "related")


class ProjectForm(forms.ModelForm[Project]):
    """Slug, name and retention; the limits are the services' own."""

    class Meta:
        model = Project
        fields = ADD_FIELDS

    def clean_retention_days(self) -> int | None:
        days: int | None = self.cleaned_data.get("retention_days")
        if days is not None and not 1 <= days <= MAX_RETENTION_DAYS:
            raise forms.ValidationError(
                f"A number of days from 1 to {MAX_RETENTION_DAYS}, or empty to keep forever."
            )
        return days


def _count(model: type[Membership]) -> Coalesce:
    """The number of model's rows in each project, as a subquery (no join of the two)."""
    rows = (
        model.objects.filter(project_id=OuterRef("pk"))
        .order_by()
        .values("project_id")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(rows, output_field=IntegerField()), 0)


def _capped_count(model: type[Thread], cap: int) -> RawSQL:
    """The number of model's rows in each project, counted up to cap + 1 (an index-only scan
    that stops there: a project of millions of threads costs what one of cap costs)."""
    table = model._meta.db_table
    return RawSQL(
        f"SELECT count(*) FROM (SELECT 1 FROM {table} capped"
        f" WHERE capped.project_id = {Project._meta.db_table}.id LIMIT %s) counted",
        (cap + 1,),
        output_field=IntegerField(),
    )


@admin.register(Project)
class ProjectAdmin(NoDeleteMixin, ProjectScopedAdmin[Project]):
    """Projects: superusers create and rename them, their admins set retention (audited)."""

    project_field = "pk"
    view_role = Role.ADMIN
    form = ProjectForm
    list_display = ("name", "slug", "retention_days", "member_count", "thread_count", "related")
    search_fields = ("name", "slug")
    # Threads are counted up to here; beyond, the list says "10,000+" (flat at any size).
    thread_count_cap = 10_000

    def get_queryset(self, request: HttpRequest) -> QuerySet[Project]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                _members=_count(Membership),
                _threads=_capped_count(Thread, self.thread_count_cap),
            )
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return is_superuser(request.user)

    def has_change_permission(self, request: HttpRequest, obj: Project | None = None) -> bool:
        return self.holds(request, Role.ADMIN, obj)

    def get_fields(self, request: HttpRequest, obj: Project | None = None) -> tuple[str, ...]:
        return (
            ADD_FIELDS
            if obj is None
            else ("slug", "name", "retention_days", "created_at", "related")
        )

    def get_readonly_fields(
        self, request: HttpRequest, obj: Project | None = None
    ) -> tuple[str, ...]:
        """Nothing when adding; then superusers rename, project admins only set retention."""
        if obj is None:
            return ()
        if is_superuser(request.user):
            return FIXED_FIELDS
        return (*FIXED_FIELDS, "name")

    def save_model(
        self, request: HttpRequest, obj: Project, form: forms.ModelForm[Project], change: bool
    ) -> None:
        """Create, rename or set retention through the project services (each audited)."""
        data = form.cleaned_data
        if not change:
            project = create_project(
                slug=data["slug"],
                name=data["name"],
                retention_days=data["retention_days"],
                actor=request.user,
            )
            obj.pk = project.pk
            obj.refresh_from_db()
            return
        if "name" in form.changed_data:
            rename_project(project=obj, name=data["name"], actor=request.user)  # type: ignore[arg-type]
        if "retention_days" in form.changed_data:
            set_retention(project=obj, days=data["retention_days"], actor=request.user)  # type: ignore[arg-type]

    @admin.display(description="members", ordering="_members")
    def member_count(self, obj: Project) -> int:
        return int(getattr(obj, "_members", 0))

    @admin.display(description="threads", ordering="_threads")
    def thread_count(self, obj: Project) -> str:
        count = int(getattr(obj, "_threads", 0))
        cap = self.thread_count_cap
        return f"{cap:,}+" if count > cap else f"{count:,}"

    @admin.display(description="related")
    def related(self, obj: Project) -> str:
        return links(
            (changelist_url("membership", project=obj.pk), "members"),
            (changelist_url("apitoken", project=obj.pk), "tokens"),
            (changelist_url("thread", project=obj.pk), "threads"),
            (changelist_url("auditrecord", project=obj.pk), "audit log"),
        )
