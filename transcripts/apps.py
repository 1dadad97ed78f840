"""App configuration."""

from __future__ import annotations

from django.apps import AppConfig


class TranscriptsConfig(AppConfig):
    name = "transcripts"
    verbose_name = "Transcripts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        post_migrate.connect(_create_groups, sender=self)


def _create_groups(**kwargs: object) -> None:
    from transcripts.ledger.moderation import ensure_groups

    ensure_groups()
