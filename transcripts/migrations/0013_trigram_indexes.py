"""pg_trgm and the trigram indexes of the thread list's title search and agent/model filter."""

from __future__ import annotations

from typing import Any

from django.contrib.postgres.indexes import GinIndex, OpClass
from django.db import DatabaseError, migrations, models, transaction
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast, Upper
from django.db.models.lookups import IsNull

EXTENSION = "pg_trgm"


def create_trigram_extension(apps: Any, schema_editor: Any) -> None:
    """CREATE EXTENSION pg_trgm, or say clearly why it cannot be (a managed server's rights)."""
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT installed_version IS NOT NULL FROM pg_available_extensions WHERE name = %s",
            [EXTENSION],
        )
        row = cursor.fetchone()
        if row is None:
            raise RuntimeError(
                f"PostgreSQL has no {EXTENSION} extension: install the server's contrib package"
                f" (it ships with PostgreSQL), then run migrate again."
            )
        if row[0]:
            return
        try:
            with transaction.atomic(using=connection.alias):
                cursor.execute(f"CREATE EXTENSION IF NOT EXISTS {EXTENSION}")
        except DatabaseError as error:
            raise RuntimeError(
                f"This database user may not create the {EXTENSION} extension ({error})."
                f" Ask the database's administrator to run `CREATE EXTENSION {EXTENSION};` in"
                f" database {connection.settings_dict['NAME']!r} (on a managed PostgreSQL:"
                f" enable {EXTENSION} in its extensions settings), then run migrate again."
            ) from error


def trigram(expression: Any) -> OpClass:
    """UPPER(expression) in pg_trgm's GIN operator class (as transcripts.models.trigram)."""
    return OpClass(Upper(expression), name="gin_trgm_ops")


class Migration(migrations.Migration):
    dependencies = [
        ("transcripts", "0012_run_failed_index"),
    ]

    operations = [
        # Left installed when migrating back: other databases' objects may use it.
        migrations.RunPython(create_trigram_extension, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="thread",
            index=GinIndex(trigram("title"), name="thread_title_trgm_idx"),
        ),
        migrations.AddIndex(
            model_name="thread",
            index=GinIndex(
                trigram(Cast("agents", models.TextField())),
                name="thread_agents_trgm_idx",
            ),
        ),
        migrations.AddIndex(
            model_name="run",
            index=GinIndex(trigram("model"), name="run_model_trgm_idx"),
        ),
        migrations.AddIndex(
            model_name="message",
            index=GinIndex(
                trigram(KeyTextTransform("agentId", "metadata")),
                trigram(KeyTextTransform("model", "metadata")),
                name="message_agent_model_trgm_idx",
                condition=models.Q(IsNull(KeyTextTransform("agentId", "metadata"), False))
                | models.Q(IsNull(KeyTextTransform("model", "metadata"), False)),
            ),
        ),
        # Statistics of the indexed expressions now, not at the next autovacuum: the thread
        # list's filter reads at most a page's worth of matches only when the planner knows
        # how common a model is (a sampled read: seconds at 2M messages).
        migrations.RunSQL(
            "ANALYZE transcripts_thread, transcripts_run, transcripts_message",
            migrations.RunSQL.noop,
        ),
    ]
