"""Projects: the header's switcher, a project's page (members, and for its admins members,
tokens and retention), and its audit log."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from transcripts import selectors
from transcripts.errors import DomainError
from transcripts.ledger import projects as project_services
from transcripts.ledger import tokens as token_services
from transcripts.ledger.projects import MAX_RETENTION_DAYS
from transcripts.models import ApiToken, Project, ProjectRole
from transcripts.pagination import decode_position
from transcripts.permissions import Access, Role
from transcripts.times import parse_iso_utc
from transcripts.web.access import (
    get_member_for_admin,
    get_project_for_user,
    get_token_for_admin,
    login_required,
    require_role,
)
from transcripts.web.http import HtmxHttpRequest
from transcripts.web.presenters.moderation import audit_rows

TEMPLATE = "transcripts/project.html"
AUDIT_TEMPLATE = "transcripts/audit.html"
AUDIT_PER_PAGE = 50


class MemberForm(forms.Form):
    """Add someone to the project by username, with a role."""

    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=ProjectRole.choices, initial=ProjectRole.VIEWER)


class RoleForm(forms.Form):
    """A member's new role."""

    role = forms.ChoiceField(choices=ProjectRole.choices)


class TokenForm(forms.Form):
    """A new API token of the project: its name and scopes."""

    name = forms.CharField(max_length=200)
    scopes = forms.MultipleChoiceField(
        choices=[(scope, scope) for scope in ApiToken.SCOPES],
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "Choose at least one scope."},
    )


class RetentionForm(forms.Form):
    """Delete threads idle for this many days; empty keeps them forever."""

    days = forms.IntegerField(required=False, min_value=1, max_value=MAX_RETENTION_DAYS)


def _errors(form: forms.Form) -> str:
    return " ".join(
        f"{str(form.fields[name].label or name).capitalize()}: {error}"
        if name in form.fields
        else str(error)
        for name, errors in form.errors.items()
        for error in errors
    )


def _page(
    request: HtmxHttpRequest,
    project: Project,
    access: Access,
    *,
    status: int = 200,
    **extra: Any,
) -> HttpResponse:
    """The project page: its members for every member; tokens and the forms for its admins."""
    members = selectors.members_of(project)
    context: dict[str, Any] = {
        "project": project,
        "access": access,
        "members": sorted(members, key=lambda m: (-Role.named(m.role), m.user.get_username())),
        "roles": ProjectRole.choices,
        "scopes": ApiToken.SCOPES,
        "tokens": selectors.tokens_of(project) if access.can_administer else [],
        **extra,
    }
    response = render(request, TEMPLATE, context, status=status)
    if "new_token" in extra:
        response["Cache-Control"] = "no-store"  # the raw token is on this page, once
    return response


def _back(request: HtmxHttpRequest, project: Project, message: str) -> HttpResponse:
    """Back to the project page, saying what was done."""
    messages.success(request, message)
    return HttpResponseRedirect(reverse("project", args=[project.slug]), status=303)


def _admin(request: HtmxHttpRequest, slug: str, action: str) -> tuple[Project, Access]:
    """The project for one of its admins' forms: a 404 for outsiders, a 403 for other members."""
    project, access = get_project_for_user(request, slug)
    require_role(access, Role.ADMIN, action)
    return project, access


# --- the switcher --------------------------------------------------------------------------


@login_required
@require_POST
def switch(request: HtmxHttpRequest) -> HttpResponse:
    """Show the chosen project's threads from now on (remembered for the user)."""
    project, _ = get_project_for_user(request, str(request.POST.get("project") or ""))
    project_services.choose_project(user=request.user, project=project)
    return HttpResponseRedirect(reverse("thread_list"), status=303)


# --- the project page ----------------------------------------------------------------------


@login_required
@require_GET
def project_page(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """The project's name, retention and members with their roles; tokens for its admins."""
    project, access = get_project_for_user(request, slug)
    return _page(request, project, access, member_form=MemberForm(), token_form=TokenForm())


@login_required
@require_POST
def add_member(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Make a user a member with a role (or change the role of one who is)."""
    project, access = _admin(request, slug, "manage members")
    form = MemberForm(request.POST)
    if not form.is_valid():
        return _page(request, project, access, status=422, member_form=form, error=_errors(form))
    username = form.cleaned_data["username"].strip()
    user = selectors.active_user(username)
    if user is None:
        error = f"There is no active account called “{username}”."
        return _page(request, project, access, status=422, member_form=form, error=error)
    role = form.cleaned_data["role"]
    project_services.set_member(project=project, user=user, role=role, actor=request.user)
    return _back(request, project, f"{username} is now {role} of {project}.")


@login_required
@require_POST
def change_role(request: HtmxHttpRequest, slug: str, user_id: int) -> HttpResponse:
    """Give a member another role."""
    project, access = _admin(request, slug, "manage members")
    membership = get_member_for_admin(project, user_id)
    form = RoleForm(request.POST)
    if not form.is_valid():
        return _page(request, project, access, status=422, error=_errors(form))
    role = form.cleaned_data["role"]
    project_services.set_member(
        project=project, user=membership.user, role=role, actor=request.user
    )
    return _back(request, project, f"{membership.user.get_username()} is now {role}.")


@login_required
@require_POST
def remove_member(request: HtmxHttpRequest, slug: str, user_id: int) -> HttpResponse:
    """Take a member out of the project."""
    project, _ = _admin(request, slug, "manage members")
    membership = get_member_for_admin(project, user_id)
    project_services.remove_member(project=project, user=membership.user, actor=request.user)
    return _back(request, project, f"{membership.user.get_username()} left {project}.")


@login_required
@require_POST
def create_token(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """A new API token of the project, shown once on the page that answers."""
    project, access = _admin(request, slug, "create tokens")
    form = TokenForm(request.POST)
    if not form.is_valid():
        return _page(request, project, access, status=422, token_form=form, error=_errors(form))
    try:
        token, raw = token_services.issue_token(
            name=form.cleaned_data["name"],
            scopes=form.cleaned_data["scopes"],
            project=project,
            user=request.user,
            actor=request.user,
        )
    except DomainError as exc:
        return _page(
            request, project, access, status=exc.status, token_form=form, error=exc.message
        )
    return _page(
        request,
        project,
        access,
        status=201,
        member_form=MemberForm(),
        token_form=TokenForm(),
        new_token=raw,
        new_token_record=token,
    )


@login_required
@require_POST
def revoke_token(request: HtmxHttpRequest, slug: str, token_id: int) -> HttpResponse:
    """Revoke one of the project's tokens: it stops working at once."""
    project, _ = _admin(request, slug, "revoke tokens")
    token = get_token_for_admin(project, token_id)
    token_services.revoke_token(token=token, actor=request.user)
    return _back(request, project, f"Token “{token.name}” revoked.")


@login_required
@require_POST
def set_retention(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Delete threads idle for N days, or keep them forever (an empty field)."""
    project, access = _admin(request, slug, "change retention")
    form = RetentionForm(request.POST)
    if not form.is_valid():
        return _page(request, project, access, status=422, error=_errors(form))
    days = form.cleaned_data["days"]
    project_services.set_retention(project=project, days=days, actor=request.user)
    said = f"idle for {days} days are deleted" if days else "are kept until deleted"
    return _back(request, project, f"Threads of {project} {said}.")


# --- the audit log -------------------------------------------------------------------------


def _record_id(value: Any) -> int | None:
    """An audit cursor's record id, else None."""
    return value if isinstance(value, int) else None


@login_required
@require_GET
def audit_log(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """What was done in the project, newest first (moderators and admins), a page at a time."""
    project, access = get_project_for_user(request, slug)
    require_role(access, Role.MODERATOR, "read the audit log")
    cursor = request.GET.get("cursor", "")
    after = decode_position(cursor, parse_iso_utc, _record_id) if cursor else None
    if cursor and after is None:
        raise DomainError("The “older entries” position is not valid: start from the newest.")
    page = selectors.audit_page(project, after=after, limit=AUDIT_PER_PAGE + 1)
    more = len(page) > AUDIT_PER_PAGE
    page = page[:AUDIT_PER_PAGE]
    context = {
        "project": project,
        "rows": audit_rows(page),
        "next_cursor": selectors.NEWEST_FIRST.cursor(page[-1]) if more else "",
        "first_page": not cursor,
    }
    template = AUDIT_TEMPLATE
    if request.htmx and cursor:
        template += "#rows"
    return render(request, template, context)
