"""The thread list's counters (issue 27): columns on the thread row, backfilled in SQL from the
messages and runs, and an index per sort."""

from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

from transcripts.ledger.counters import RECOUNT_SQL, recount_sql_params

SORT_KEYS = (
    ("created_at", "created"),
    ("message_count", "messages"),
    ("branch_count", "branches"),
    ("total_tokens", "tokens"),
    ("cost_micros", "cost"),
    ("last_run_duration_ms", "duration"),
)
COUNTS = (
    "message_count",
    "branch_count",
    "run_count",
    "open_run_count",
    "failed_run_count",
    "flagged_count",
)
BIG = ("input_tokens", "output_tokens", "total_tokens", "cost_micros", "last_run_duration_ms")


def backfill(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """Count every thread's rows once (one statement)."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(RECOUNT_SQL, recount_sql_params(None, cursor))


class Migration(migrations.Migration):
    dependencies = [
        ("transcripts", "0018_live"),
    ]

    operations = [
        *(
            migrations.AddField(
                model_name="thread",
                name=name,
                field=models.PositiveIntegerField(default=0, db_default=0),
            )
            for name in COUNTS
        ),
        *(
            migrations.AddField(
                model_name="thread",
                name=name,
                field=models.BigIntegerField(default=0, db_default=0),
            )
            for name in BIG
        ),
        migrations.AddField(
            model_name="thread",
            name="last_run_status",
            field=models.CharField(blank=True, default="", db_default="", max_length=20),
        ),
        migrations.AddField(
            model_name="thread",
            name="last_model",
            field=models.CharField(blank=True, default="", db_default="", max_length=200),
        ),
        migrations.AddField(
            model_name="thread",
            name="last_agent",
            field=models.CharField(blank=True, default="", db_default="", max_length=200),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        *(
            migrations.AddIndex(
                model_name="thread",
                index=models.Index(fields=["project", key, "id"], name=f"thread_{name}_sort_idx"),
            )
            for key, name in SORT_KEYS
        ),
    ]
