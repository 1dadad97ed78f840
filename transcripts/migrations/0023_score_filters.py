"""The thread list's score filters and Score column (issue 28): a thread's scores of one name,
and a project's scores of one name and label, read from indexes alone."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("transcripts", "0022_queues")]

    operations = [
        migrations.AddIndex(
            model_name="score",
            index=models.Index(fields=["thread", "name", "value"], name="score_thread_name_idx"),
        ),
        migrations.AddIndex(
            model_name="score",
            index=models.Index(
                condition=models.Q(("label", ""), _negated=True),
                fields=["project", "name", "label", "thread"],
                name="score_name_label_idx",
            ),
        ),
    ]
