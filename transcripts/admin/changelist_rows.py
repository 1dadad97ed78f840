"""What each row of an admin list costs: its links and its checkbox, without per-row overhead.

A list of 100 rows renders ~1,000 cells. Django builds each row's checkbox through the form
widget templates (a template render per row: a quarter of a list's time) and each link with
`reverse()`, which walks the URL resolver every time. Here a view's URL is reversed once with a
placeholder and the ids are put in its place (quoted exactly as `reverse()` would), and the
checkbox is the same HTML written directly.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.utils import quote as admin_quote
from django.contrib.admin.views.main import ChangeList
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from django.urls import NoReverseMatch, get_script_prefix, get_urlconf, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext

# Stands for an argument in a reversed URL; no URL of the app holds it otherwise.
PLACEHOLDER = "zzARGzz"
# What reverse() leaves unquoted in a URL (django.urls.resolvers, RFC 3986 sub-delimiters).
SAFE = "!$&'()*+,;=/~:@"
# Arguments put in place as they are: what every converter of these URLs accepts.
PLAIN = re.compile(r"[^/]+")

_templates: dict[tuple[str, int, str | None, str, object], list[str]] = {}


def _template(viewname: str, arity: int, current_app: str | None) -> list[str]:
    """The pieces of the URL of viewname around its arity arguments (reversed once)."""
    key = (
        viewname,
        arity,
        current_app,
        get_script_prefix(),
        get_urlconf() or settings.ROOT_URLCONF,
    )
    pieces = _templates.get(key)
    if pieces is None:
        try:
            url = reverse(viewname, args=[PLACEHOLDER] * arity, current_app=current_app)
        except NoReverseMatch:  # e.g. an <int:> argument: reversed each time instead
            url = ""
        pieces = url.split(PLACEHOLDER)
        if len(pieces) != arity + 1:
            pieces = []
        _templates[key] = pieces
    return pieces


def url_for(viewname: str, *args: object, current_app: str | None = None) -> str:
    """reverse(viewname, args=args): the same URL, with the resolver walked once per view."""
    texts = [str(arg) for arg in args]
    pieces = _template(viewname, len(texts), current_app)
    if not pieces or not all(PLAIN.fullmatch(text) for text in texts):
        return reverse(viewname, args=texts, current_app=current_app)
    url = pieces[0]
    for text, after in zip(texts, pieces[1:], strict=True):
        url += quote(text, safe=SAFE) + after
    return url


def change_url(model: type[Model] | Model, pk: int | str, current_app: str | None = None) -> str:
    """The admin change page of a record (its id quoted as the admin quotes it)."""
    opts = model._meta
    return url_for(
        f"admin:{opts.app_label}_{opts.model_name}_change",
        admin_quote(pk),
        current_app=current_app,
    )


def action_checkbox(obj: Model) -> SafeString:
    """The HTML of Django's action checkbox for obj, written directly (no widget template)."""
    label = format_html(gettext("Select this object for an action - {}"), str(obj))
    return format_html(
        '<input type="checkbox" name="{}" value="{}" class="action-select" aria-label="{}">',
        ACTION_CHECKBOX_NAME,
        str(obj.pk),
        label,
    )


class RowsChangeList(ChangeList):
    """Django's change list, with each row's link built without a reverse() per row, and
    without the columns no row shows (the model admin's `list_defer`)."""

    def get_queryset(
        self, request: HttpRequest, exclude_parameters: list[str | None] | None = None
    ) -> QuerySet[Any]:
        # Any: one change list for the admins of every model (ChangeList is not generic).
        queryset: QuerySet[Any] = super().get_queryset(request, exclude_parameters)
        deferred = getattr(self.model_admin, "list_defer", ())
        # JSON documents (metadata, usage, settings) are decoded for every row read, shown in
        # none of the list's columns: read on the record's page only.
        return queryset.defer(*deferred) if deferred else queryset

    def url_for_result(self, result: Model) -> str:
        return change_url(
            self.opts.model,
            getattr(result, self.pk_attname),
            current_app=self.model_admin.admin_site.name,
        )
