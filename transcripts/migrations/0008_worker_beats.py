"""Worker liveness: one row per worker process, renewed while it runs."""

import django.db.models.functions.datetime
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("transcripts", "0007_project_required")]

    operations = [
        migrations.CreateModel(
            name="WorkerBeat",
            fields=[
                ("worker_id", models.CharField(max_length=64, primary_key=True, serialize=False)),
                ("name", models.CharField(max_length=255)),
                (
                    "started_at",
                    models.DateTimeField(db_default=django.db.models.functions.datetime.Now()),
                ),
                (
                    "seen_at",
                    models.DateTimeField(
                        db_default=django.db.models.functions.datetime.Now(), db_index=True
                    ),
                ),
            ],
        ),
    ]
