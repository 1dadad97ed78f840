"""Every thread, token and import job belongs to a project."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("transcripts", "0006_default_project")]

    operations = [
        migrations.AlterField(
            model_name="thread",
            name="project",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="threads",
                to="transcripts.project",
            ),
        ),
        migrations.AlterField(
            model_name="apitoken",
            name="project",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="tokens",
                to="transcripts.project",
            ),
        ),
        migrations.AlterField(
            model_name="importjob",
            name="project",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="transcripts.project",
            ),
        ),
    ]
