"""The API token admin: a token is shown once when created, never edited, revoked by action."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from transcripts.ledger.tokens import issue_token
from transcripts.models import ApiToken, Project

# What a stored token's page shows; none of it can change.
STORED_FIELDS = ("name", "prefix", "scopes", "user", "created_at", "last_used_at", "revoked_at")


class ApiTokenForm(forms.ModelForm[ApiToken]):
    """The add form: a name, the scopes (all by default) and an optional owner."""

    scopes = forms.MultipleChoiceField(
        choices=[(s, s) for s in ApiToken.SCOPES],
        widget=forms.CheckboxSelectMultiple,
        initial=list(ApiToken.SCOPES),
    )

    class Meta:
        model = ApiToken
        fields = ("name", "scopes", "user")


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin[ApiToken]):
    """Tokens are created here (the token is shown once), never edited, and revoked by action."""

    form = ApiTokenForm
    list_display = STORED_FIELDS
    list_filter = (("revoked_at", admin.EmptyFieldListFilter),)
    list_select_related = ("user",)  # a nullable foreign key: not joined by default
    search_fields = ("name", "prefix")
    readonly_fields = ("prefix", "created_at", "last_used_at", "revoked_at")
    actions = ("revoke",)

    def get_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> tuple[str, ...]:
        """Name, scopes and user when adding; the record's facts afterwards."""
        if obj is None:
            return ("name", "scopes", "user")
        return STORED_FIELDS

    def get_readonly_fields(
        self, request: HttpRequest, obj: ApiToken | None = None
    ) -> tuple[str, ...]:
        """A stored token cannot change (revoke it and create another)."""
        if obj is None:
            return ()
        return STORED_FIELDS

    def save_model(self, request: HttpRequest, obj: ApiToken, form: Any, change: bool) -> None:
        """Create the token through issue_token and show it once."""
        if change:
            return
        token, raw = issue_token(
            project=Project.default(),
            name=obj.name,
            scopes=form.cleaned_data["scopes"],
            user=form.cleaned_data["user"],
        )
        obj.pk = token.pk
        obj.refresh_from_db()
        self.message_user(
            request,
            f"The new token is {raw} — copy it now: it is stored hashed and cannot be shown again.",
            messages.WARNING,
        )

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        """Revoke tokens; they stop working at once."""
        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)
