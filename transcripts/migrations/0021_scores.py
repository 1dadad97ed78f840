"""Judgement as data (issue 28): score configs, scores on a message, run or thread, and
feedback (thumbs up/down) on an answer."""

import django.db.models.deletion
import django.utils.timezone
import transcripts.fields
import transcripts.ids
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("transcripts", "0020_rollup"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="ScoreConfig",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=100)),
                (
                    "data_type",
                    models.CharField(
                        choices=[
                            ("numeric", "Numeric"),
                            ("categorical", "Categorical"),
                            ("boolean", "Boolean"),
                        ],
                        max_length=20,
                    ),
                ),
                ("min_value", models.FloatField(blank=True, null=True)),
                ("max_value", models.FloatField(blank=True, null=True)),
                ("labels", models.JSONField(blank=True, default=list)),
                ("description", models.TextField(blank=True, default="")),
                (
                    "writers",
                    models.CharField(
                        choices=[
                            ("people", "People"),
                            ("api", "The API"),
                            ("both", "People and the API"),
                        ],
                        default="both",
                        max_length=10,
                    ),
                ),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("archived_at", models.DateTimeField(blank=True, null=True)),
                (
                    "project",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="score_configs",
                        to="transcripts.project",
                    ),
                ),
            ],
            options={
                "ordering": ["project", "name", "-created_at"],
            },
        ),
        migrations.CreateModel(
            name="Score",
            fields=[
                (
                    "id",
                    transcripts.fields.ULIDField(
                        default=transcripts.ids.new_ulid,
                        editable=False,
                        primary_key=True,
                        serialize=False,
                    ),
                ),
                ("name", models.CharField(max_length=100)),
                ("value", models.FloatField(blank=True, null=True)),
                ("label", models.CharField(blank=True, default="", max_length=100)),
                ("comment", models.TextField(blank=True, default="")),
                (
                    "source",
                    models.CharField(
                        choices=[("person", "Person"), ("api", "Api"), ("evaluator", "Evaluator")],
                        max_length=10,
                    ),
                ),
                ("external_id", models.CharField(blank=True, default="", max_length=200)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("updated_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "author",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "message",
                    models.ForeignKey(
                        blank=True,
                        db_constraint=False,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="scores",
                        to="transcripts.message",
                    ),
                ),
                (
                    "project",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="transcripts.project",
                    ),
                ),
                (
                    "run",
                    models.ForeignKey(
                        blank=True,
                        db_constraint=False,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="scores",
                        to="transcripts.run",
                    ),
                ),
                (
                    "thread",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="scores",
                        to="transcripts.thread",
                    ),
                ),
                (
                    "token",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="transcripts.apitoken",
                    ),
                ),
                (
                    "config",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="scores",
                        to="transcripts.scoreconfig",
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="Feedback",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("up", models.BooleanField()),
                ("comment", models.TextField(blank=True, default="")),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("updated_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "message",
                    models.ForeignKey(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="feedback",
                        to="transcripts.message",
                    ),
                ),
                (
                    "thread",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="feedback",
                        to="transcripts.thread",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("thread", "message", "user"), name="feedback_one_per_person"
                    )
                ],
            },
        ),
        migrations.AddConstraint(
            model_name="scoreconfig",
            constraint=models.UniqueConstraint(
                condition=models.Q(("archived_at__isnull", True)),
                fields=("project", "name"),
                name="score_config_name_per_project",
            ),
        ),
        migrations.AddIndex(
            model_name="score",
            index=models.Index(fields=["thread", "message", "created_at"], name="score_thread_idx"),
        ),
        migrations.AddIndex(
            model_name="score",
            index=models.Index(
                fields=["project", "name", "value", "thread"], name="score_name_value_idx"
            ),
        ),
        migrations.AddIndex(
            model_name="score",
            index=models.Index(
                condition=models.Q(("run__isnull", False)), fields=["run"], name="score_run_idx"
            ),
        ),
        migrations.AddConstraint(
            model_name="score",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("message__isnull", True), ("run__isnull", True), _connector="OR"
                ),
                name="score_one_target",
            ),
        ),
        migrations.AddConstraint(
            model_name="score",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("value__isnull", False),
                    models.Q(("label", ""), _negated=True),
                    _connector="OR",
                ),
                name="score_has_value",
            ),
        ),
        migrations.AddConstraint(
            model_name="score",
            constraint=models.UniqueConstraint(
                condition=models.Q(("external_id", ""), _negated=True),
                fields=("project", "external_id"),
                name="score_external_id_per_project",
            ),
        ),
    ]
