"""Threads you can organise: archived threads, per-user pins, a project's tag vocabulary, and
an index for the tag filter (a thread's tags stay in metadata.tags, where imports and exports
keep them). The vocabulary starts with the tags threads already carry."""

import django.contrib.postgres.indexes
import django.db.models.deletion
import django.db.models.fields.json
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("transcripts", "0016_dashboard"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="Tag",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=40)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
            ],
            options={
                "ordering": ["project", "name"],
            },
        ),
        migrations.CreateModel(
            name="ThreadPin",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
            ],
        ),
        migrations.AddField(
            model_name="thread",
            name="archived",
            field=models.BooleanField(default=False, db_default=False),
        ),
        migrations.AddIndex(
            model_name="thread",
            index=models.Index(
                condition=models.Q(("archived", True)),
                fields=["project", "-updated_at", "-id"],
                name="thread_archived_idx",
            ),
        ),
        migrations.AddIndex(
            model_name="thread",
            index=django.contrib.postgres.indexes.GinIndex(
                django.contrib.postgres.indexes.OpClass(
                    django.db.models.fields.json.KeyTransform("tags", "metadata"),
                    name="jsonb_path_ops",
                ),
                name="thread_tags_idx",
            ),
        ),
        migrations.AddField(
            model_name="tag",
            name="project",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="tags",
                to="transcripts.project",
            ),
        ),
        migrations.AddField(
            model_name="threadpin",
            name="thread",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="pins",
                to="transcripts.thread",
            ),
        ),
        migrations.AddField(
            model_name="threadpin",
            name="user",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddConstraint(
            model_name="tag",
            constraint=models.UniqueConstraint(
                fields=("project", "name"), name="tag_unique_per_project"
            ),
        ),
        migrations.AddConstraint(
            model_name="threadpin",
            constraint=models.UniqueConstraint(
                fields=("user", "thread"), name="thread_pin_once_per_user"
            ),
        ),
        migrations.RunSQL(
            """
            INSERT INTO transcripts_tag (project_id, name, created_at)
            SELECT DISTINCT thread.project_id, tag.name, now()
            FROM transcripts_thread AS thread,
                 jsonb_array_elements(
                     CASE WHEN jsonb_typeof(thread.metadata -> 'tags') = 'array'
                     THEN thread.metadata -> 'tags' ELSE '[]'::jsonb END
                 ) AS element,
                 LATERAL (SELECT element #>> '{}' AS name) AS tag
            WHERE jsonb_typeof(element) = 'string' AND char_length(tag.name) BETWEEN 1 AND 40
            ON CONFLICT DO NOTHING
            """,
            migrations.RunSQL.noop,
        ),
    ]
