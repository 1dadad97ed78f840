"""The API token admin: a token of one project, shown once when created, revoked by action."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.models import User
from django.db.models import ForeignKey, Model, QuerySet
from django.http import HttpRequest

from transcripts.admin.actions import NoDeleteMixin, run_each
from transcripts.admin.scope import ProjectFilter, ProjectScopedAdmin
from transcripts.ledger.tokens import issue_token, revoke_token
from transcripts.models import ApiToken
from transcripts.permissions import Role, is_superuser, projects_of

# What a stored token's page shows; none of it can change.
STORED_FIELDS = (
    "name",
    "project",
    "prefix",
    "scopes",
    "user",
    "created_at",
    "last_used_at",
    "revoked_at",
)
ADD_FIELDS = ("name", "project", "scopes", "user")


class ApiTokenForm(forms.ModelForm[ApiToken]):
    """The add form: a name, the project, the scopes and an optional owner."""

    scopes = forms.MultipleChoiceField(
        choices=[(s, s) for s in ApiToken.SCOPES],
        widget=forms.CheckboxSelectMultiple,
        initial=["ingest", "read"],
        help_text="read: read the project's threads; ingest: create threads and runs, append "
        "events (ids and statuses back, no content without read); admin: both, plus hidden "
        "threads and stopping any run of the project.",
    )

    class Meta:
        model = ApiToken
        fields = ADD_FIELDS

    def clean(self) -> dict[str, object]:
        cleaned = super().clean() or {}
        project, owner = cleaned.get("project"), cleaned.get("user")
        if project is None or owner is None or is_superuser(owner):
            return cleaned
        # The owner is named in the audit records of what the token reads.
        if not project.memberships.filter(user=owner).exists():
            self.add_error("user", f"{owner} is not a member of {project}.")
        return cleaned


@admin.register(ApiToken)
class ApiTokenAdmin(NoDeleteMixin, ProjectScopedAdmin[ApiToken]):
    """Tokens of the projects the user administers: created once, never edited, revoked."""

    view_role = Role.ADMIN
    form = ApiTokenForm
    list_display = STORED_FIELDS
    list_filter = (ProjectFilter, ("revoked_at", admin.EmptyFieldListFilter))
    list_select_related = ("project", "user")  # user is nullable: not joined by default
    search_fields = ("name", "prefix")
    actions = ("revoke",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return self.holds(request, Role.ADMIN)

    def has_change_permission(self, request: HttpRequest, obj: ApiToken | None = None) -> bool:
        # A stored token never changes: revoke it and create another.
        return False

    def get_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> tuple[str, ...]:
        """Name, project, scopes and owner when adding; the record's facts afterwards."""
        return ADD_FIELDS if obj is None else STORED_FIELDS

    def get_readonly_fields(
        self, request: HttpRequest, obj: ApiToken | None = None
    ) -> tuple[str, ...]:
        return () if obj is None else STORED_FIELDS

    def formfield_for_foreignkey(
        self, db_field: ForeignKey[Model, Model], request: HttpRequest, **kwargs: object
    ) -> forms.ModelChoiceField[Model] | None:
        """Projects the user administers; owners among their members (superusers: anyone)."""
        if db_field.name == "project":
            kwargs["queryset"] = projects_of(request.user, at_least=Role.ADMIN)
        elif db_field.name == "user":
            people = User.objects.filter(is_active=True).order_by("username")
            if not is_superuser(request.user):
                administered = projects_of(request.user, at_least=Role.ADMIN)
                people = people.filter(memberships__project__in=administered).distinct()
            kwargs["queryset"] = people
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def save_model(
        self, request: HttpRequest, obj: ApiToken, form: forms.ModelForm[ApiToken], change: bool
    ) -> None:
        """Create the token through issue_token (audited) and show it once."""
        token, raw = issue_token(
            project=form.cleaned_data["project"],
            name=form.cleaned_data["name"],
            scopes=form.cleaned_data["scopes"],
            user=form.cleaned_data["user"],
            actor=request.user,
        )
        obj.pk = token.pk
        obj.refresh_from_db()
        self.message_user(
            request,
            f"The new token is {raw} — copy it now: it is stored hashed and cannot be shown again.",
            messages.WARNING,
        )

    @admin.action(description="Revoke the selected tokens", permissions=["administer"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        """Revoke tokens (audited); they stop working at once."""
        run_each(
            self,
            request,
            queryset.filter(revoked_at__isnull=True),
            lambda token: bool(revoke_token(token=token, actor=request.user)),  # type: ignore[arg-type]
            "revoke_token",
        )
