"""The API's quotas: per-project limits, and the minute counters of tokens and projects.

The counters' table is UNLOGGED: counts a crash loses do not matter, and a request's count
then commits without waiting for the write-ahead log to reach the disk."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("transcripts", "0014_report_created_index"),
    ]

    operations = [
        migrations.CreateModel(
            name="RateWindow",
            fields=[
                ("scope", models.CharField(max_length=40, primary_key=True, serialize=False)),
                ("window_start", models.DateTimeField()),
                ("requests", models.BigIntegerField(default=0)),
                ("events", models.BigIntegerField(default=0)),
            ],
        ),
        migrations.RunSQL(
            "ALTER TABLE transcripts_ratewindow SET UNLOGGED",
            "ALTER TABLE transcripts_ratewindow SET LOGGED",
        ),
        migrations.AddField(
            model_name="project",
            name="events_per_minute",
            field=models.PositiveIntegerField(
                blank=True,
                help_text="Events and spans a minute for the whole project (empty: the site's default).",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="project",
            name="requests_per_minute",
            field=models.PositiveIntegerField(
                blank=True,
                help_text="API requests a minute for the whole project (empty: the site's default).",
                null=True,
            ),
        ),
    ]
