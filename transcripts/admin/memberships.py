"""The membership admin: who holds which role in a project, changed through the project services."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.models import User
from django.db.models import ForeignKey, Model, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect

from transcripts.admin.scope import ProjectFilter, ProjectScopedAdmin
from transcripts.errors import DomainError
from transcripts.ledger.projects import keep_an_admin, remove_member, set_member
from transcripts.models import Membership, ProjectRole
from transcripts.permissions import Role, projects_of

ADD_FIELDS = ("project", "username", "role")
STORED_FIELDS = ("project", "user", "role", "created_at")


class MembershipAddForm(forms.ModelForm[Membership]):
    """A project, the new member's username (no list of every account) and their role."""

    username = forms.CharField(max_length=150, help_text="The account's username.")

    class Meta:
        model = Membership
        fields = ADD_FIELDS

    def clean(self) -> dict[str, object]:
        cleaned = super().clean() or {}
        username, project = cleaned.get("username", ""), cleaned.get("project")
        member = User.objects.filter(username=username.strip(), is_active=True).first()
        if member is None:
            self.add_error("username", "No active account has this username.")
        elif project is not None and project.memberships.filter(user=member).exists():
            self.add_error(
                "username",
                f"{member} is a member of {project} already: change their role on their "
                "membership's page.",
            )
        else:
            cleaned["user"] = self.instance.user = member
        return cleaned


class MembershipChangeForm(forms.ModelForm[Membership]):
    """The role of a member; the project's last admin stays admin (`ledger.projects`)."""

    class Meta:
        model = Membership
        fields = ("role",)

    def clean(self) -> dict[str, object]:
        cleaned = super().clean() or {}
        if cleaned.get("role") not in (None, ProjectRole.ADMIN):
            try:
                keep_an_admin(project=self.instance.project, leaving=self.instance.user)
            except DomainError as exc:
                self.add_error("role", exc.message)
        return cleaned


@admin.register(Membership)
class MembershipAdmin(ProjectScopedAdmin[Membership]):
    """Members of the projects the user administers, changed through `ledger.projects`."""

    view_role = Role.ADMIN
    list_display = ("user", "project", "role", "created_at")
    list_filter = (ProjectFilter, "role")
    list_select_related = ("project", "user")
    search_fields = ("user__username", "project__slug", "project__name")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return self.holds(request, Role.ADMIN)

    def has_change_permission(self, request: HttpRequest, obj: Membership | None = None) -> bool:
        return self.holds(request, Role.ADMIN, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Membership | None = None) -> bool:
        return self.holds(request, Role.ADMIN, obj)

    def get_form(
        self,
        request: HttpRequest,
        obj: Membership | None = None,
        change: bool = False,
        **kwargs: object,
    ) -> type[forms.ModelForm[Membership]]:
        kwargs["form"] = MembershipAddForm if obj is None else MembershipChangeForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fields(self, request: HttpRequest, obj: Membership | None = None) -> tuple[str, ...]:
        return ADD_FIELDS if obj is None else STORED_FIELDS

    def get_readonly_fields(
        self, request: HttpRequest, obj: Membership | None = None
    ) -> tuple[str, ...]:
        """Only the role changes; another project or person is another membership."""
        return () if obj is None else ("project", "user", "created_at")

    def formfield_for_foreignkey(
        self, db_field: ForeignKey[Model, Model], request: HttpRequest, **kwargs: object
    ) -> forms.ModelChoiceField[Model] | None:
        if db_field.name == "project":
            kwargs["queryset"] = projects_of(request.user, at_least=Role.ADMIN)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def save_model(
        self, request: HttpRequest, obj: Membership, form: forms.ModelForm[Membership], change: bool
    ) -> None:
        """Add the member or change their role through set_member (audited)."""
        membership = set_member(
            project=obj.project,
            user=obj.user,
            role=form.cleaned_data["role"],
            actor=request.user,  # type: ignore[arg-type]
        )
        obj.pk = membership.pk

    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, object] | None = None
    ) -> HttpResponse:
        """Django's confirmation; a refusal (the project's last admin) back on the member's page."""
        try:
            return super().delete_view(request, object_id, extra_context)
        except DomainError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return HttpResponseRedirect(request.path.removesuffix("delete/") + "change/")

    def delete_model(self, request: HttpRequest, obj: Membership) -> None:
        """Remove the member through remove_member (audited)."""
        remove_member(project=obj.project, user=obj.user, actor=request.user)  # type: ignore[arg-type]

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Membership]) -> None:
        """Remove each selected member through remove_member (audited)."""
        for membership in queryset.select_related("project", "user"):
            try:
                self.delete_model(request, membership)
            except DomainError as exc:
                self.message_user(request, f"{membership}: {exc.message}", messages.ERROR)
