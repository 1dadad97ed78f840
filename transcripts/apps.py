"""App configuration."""

from __future__ import annotations

from importlib import import_module

from django.apps import AppConfig

# The module, not the class: Django picks the transcripts app's config among the classes
# this module holds, and an imported AdminConfig (marked default) would be picked.
from django.contrib.admin import apps as admin_apps


class TranscriptsConfig(AppConfig):
    name = "transcripts"
    verbose_name = "Transcripts"
    default_auto_field = "django.db.models.BigAutoField"


class TranscriptsAdminConfig(admin_apps.AdminConfig):
    """Django's admin app with TranscriptsAdminSite as `admin.site`."""

    default = False  # "transcripts" in INSTALLED_APPS still means TranscriptsConfig
    default_site = "transcripts.admin.site.TranscriptsAdminSite"

    def ready(self) -> None:
        # The lazy admin.site is built on first use by importing transcripts.admin.site, which
        # runs transcripts/admin/__init__ and its registrations first. Were autodiscover the
        # first user, those registrations would build a second site that autodiscover then
        # replaces with its own, empty of them; importing the package here builds it once.
        import_module("transcripts.admin")
        super().ready()
