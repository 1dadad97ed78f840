"""Organising threads from the pages: rename, archive, tags, pin, delete (with a page that says
what goes), and the thread list's bulk actions. Plain POST forms that work without JavaScript;
each answers with a redirect back to where the form was (its `next`)."""

from __future__ import annotations

from typing import cast

from django import forms
from django.contrib import messages
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from transcripts.errors import InvalidInput, NotFound
from transcripts.ids import is_ulid
from transcripts.ledger import organise
from transcripts.models import Thread
from transcripts.permissions import Role, project_access, readable_threads
from transcripts.selectors.organise import deletion_counts, threads_by_id
from transcripts.web.access import get_thread_for_user, login_required, require_role
from transcripts.web.http import HtmxHttpRequest, safe_next

DELETE_TEMPLATE = "transcripts/organise_delete.html"
MAX_BULK = 100


class RenameForm(forms.Form):
    """A thread's new title (the ledger checks its length and characters)."""

    title = forms.CharField(max_length=organise.MAX_RENAME, strip=False)


class TagForm(forms.Form):
    """A tag to add to, or take off, a thread."""

    add = forms.CharField(required=False, max_length=organise.MAX_TAG)
    remove = forms.CharField(required=False, max_length=organise.MAX_TAG)


class ThreadIds(forms.MultipleChoiceField):
    """Thread ids (each then checked against the threads the user may read)."""

    def valid_value(self, value: str) -> bool:
        """Any ULID."""
        return is_ulid(value)


class BulkForm(forms.Form):
    """The thread list's bulk bar: the checked threads, an action, a tag for tag/untag."""

    ids = ThreadIds(error_messages={"required": "Select at least one thread."})
    action = forms.ChoiceField(choices=[(a, a) for a in organise.BULK_ACTIONS])
    tag = forms.CharField(required=False, max_length=organise.MAX_TAG)
    confirm = forms.BooleanField(required=False)

    def clean_ids(self) -> list[str]:
        """The thread ids, each once, at most MAX_BULK."""
        ids = list(dict.fromkeys(cast(list[str], self.cleaned_data["ids"])))
        if len(ids) > MAX_BULK:
            raise forms.ValidationError(f"Choose 1 to {MAX_BULK} threads.")
        return ids


def _invalid(form: forms.Form) -> InvalidInput:
    """The form's first error as the refusal the pages show (nothing changed)."""
    name, errors = next(iter(form.errors.items()))
    return InvalidInput(f"{name}: {' '.join(str(e) for e in errors)}", field=name)


def _back(request: HtmxHttpRequest, thread: Thread) -> HttpResponse:
    """Back to the page the form was on (default: the conversation)."""
    return HttpResponseRedirect(safe_next(request, reverse("conversation", args=[thread.id])))


@login_required
@require_POST
def rename(request: HtmxHttpRequest, thread_id: str) -> HttpResponse:
    """Give the thread a new title (editor)."""
    thread, access = get_thread_for_user(request, thread_id)
    require_role(access, Role.EDITOR, "rename threads")
    form = RenameForm(request.POST)
    if not form.is_valid():
        raise _invalid(form)
    change = organise.ThreadChange(title=form.cleaned_data["title"])
    if organise.update_thread(thread=thread, user=request.user, change=change):
        messages.success(request, f"Renamed to “{thread.title}”.")
    return _back(request, thread)


@login_required
@require_POST
def archive(request: HtmxHttpRequest, thread_id: str) -> HttpResponse:
    """Archive the thread (archived=yes) or bring it back (archived=no) (editor)."""
    thread, access = get_thread_for_user(request, thread_id)
    require_role(access, Role.EDITOR, "archive threads")
    archived = _yes_or_no(request, "archived")
    change = organise.ThreadChange(archived=archived)
    if organise.update_thread(thread=thread, user=request.user, change=change):
        messages.success(request, "Archived." if archived else "Unarchived.")
    return _back(request, thread)


@login_required
@require_POST
def pin(request: HtmxHttpRequest, thread_id: str) -> HttpResponse:
    """Pin the thread at the top of the reader's own list (pinned=yes), or unpin it."""
    thread, _ = get_thread_for_user(request, thread_id)
    pinned = _yes_or_no(request, "pinned")
    if organise.set_pinned(thread=thread, user=request.user, pinned=pinned):
        messages.success(request, "Pinned." if pinned else "Unpinned.")
    return _back(request, thread)


@login_required
@require_POST
def tags(request: HtmxHttpRequest, thread_id: str) -> HttpResponse:
    """Add a tag to the thread (add=) or take one off (remove=) (editor)."""
    thread, access = get_thread_for_user(request, thread_id)
    require_role(access, Role.EDITOR, "tag threads")
    form = TagForm(request.POST)
    if not form.is_valid():
        raise _invalid(form)
    add, remove = form.cleaned_data["add"], form.cleaned_data["remove"]
    if bool(add) == bool(remove):
        raise InvalidInput("give one tag to add or one to remove", field="add")
    if add and organise.tag_thread(thread=thread, user=request.user, tag=add):
        messages.success(request, f"Tagged “{' '.join(add.split())}”.")
    if remove and organise.untag_thread(thread=thread, user=request.user, tag=remove):
        messages.success(request, f"Tag “{remove}” removed.")
    return _back(request, thread)


@login_required
@require_http_methods(["GET", "POST"])
def delete(request: HtmxHttpRequest, thread_id: str) -> HttpResponse:
    """The page that says what deleting the thread takes (GET), and the deletion (POST, a
    project admin): back to the thread list."""
    thread, access = get_thread_for_user(request, thread_id)
    require_role(access, Role.ADMIN, "delete threads")
    if request.method == "GET":
        context = {
            "threads": [thread],
            "counts": deletion_counts([thread.id]),
            "action": reverse("thread_delete", args=[thread.id]),
            "back": reverse("conversation", args=[thread.id]),
        }
        return render(request, DELETE_TEMPLATE, context)
    deleted = organise.delete_thread(thread=thread, user=request.user)
    messages.success(request, f"Deleted “{thread}” and its {deleted.messages} messages.")
    return HttpResponseRedirect(reverse("thread_list"))


@login_required
@require_POST
def bulk(request: HtmxHttpRequest) -> HttpResponse:
    """Archive, unarchive, tag, untag or delete the checked threads; a deletion first shows
    what goes and asks again (confirm)."""
    form = BulkForm(request.POST)
    if not form.is_valid():
        raise _invalid(form)
    ids: list[str] = form.cleaned_data["ids"]
    found = threads_by_id(readable_threads(request.user), ids)
    if len(found) != len(ids):
        raise NotFound("some of these threads do not exist or are out of your reach")
    action = cast(organise.BulkAction, form.cleaned_data["action"])
    needed = Role.ADMIN if action == "delete" else Role.EDITOR
    for thread in found:
        require_role(project_access(request.user, thread.project_id), needed, f"{action} threads")
    back = safe_next(request, reverse("thread_list"))
    if action == "delete" and not form.cleaned_data["confirm"]:
        context = {
            "threads": found,
            "counts": deletion_counts(ids),
            "action": reverse("threads_bulk"),
            "back": back,
            "bulk": True,
        }
        return render(request, DELETE_TEMPLATE, context)
    changed = organise.organise_many(
        threads=found, user=request.user, action=action, tag=form.cleaned_data["tag"]
    )
    messages.success(request, f"{_PAST[action]} {changed} of {len(found)} threads.")
    return HttpResponseRedirect(reverse("thread_list") if action == "delete" else back)


_PAST = {
    "archive": "Archived",
    "unarchive": "Unarchived",
    "tag": "Tagged",
    "untag": "Untagged",
    "delete": "Deleted",
}


def _yes_or_no(request: HtmxHttpRequest, name: str) -> bool:
    """The POSTed yes/no field name, else a 4xx."""
    value = request.POST.get(name, "")
    if value not in ("yes", "no"):
        raise InvalidInput(f"{name} must be yes or no", field=name)
    return value == "yes"
