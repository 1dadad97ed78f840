"""The thread list's score filters and Score column (issue 28): a thread's scores of one name,
read from an index alone."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("transcripts", "0021_scores")]

    operations = [
        migrations.AddIndex(
            model_name="score",
            index=models.Index(fields=["thread", "name", "value"], name="score_thread_name_idx"),
        ),
    ]
