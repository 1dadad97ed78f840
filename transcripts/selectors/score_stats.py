"""The dashboard's score averages (issue 28): for each live numeric or boolean score config of a
project, the average of its scores (and how many) per hour, day or week of a window.

Apart from selectors/stats.py on purpose: the run statistics are read there, the scores here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.db.models import Avg, Count
from django.db.models.functions import Trunc

from transcripts.models import Score, ScoreConfig, ScoreDataType
from transcripts.selectors.stats import Window


@dataclass
class ScoreSeries:
    """One config's averages: bucket start -> (average, count); its range, when it has one."""

    name: str
    low: float | None = None
    high: float | None = None
    points: dict[datetime, tuple[float, int]] = field(default_factory=dict)


def score_averages(project_id: int, window: Window, *, include_hidden: bool) -> list[ScoreSeries]:
    """The averages of the project's live numeric and boolean configs in window, by name (a
    config with no score in the window is listed, empty). Two queries."""
    configs = ScoreConfig.objects.filter(
        project_id=project_id,
        archived_at__isnull=True,
        data_type__in=[ScoreDataType.NUMERIC, ScoreDataType.BOOLEAN],
    ).order_by("name")
    series = {
        c.name: ScoreSeries(
            c.name,
            0.0 if c.data_type == ScoreDataType.BOOLEAN else c.min_value,
            1.0 if c.data_type == ScoreDataType.BOOLEAN else c.max_value,
        )
        for c in configs
    }
    if not series:
        return []
    scores = Score.objects.filter(
        project_id=project_id,
        name__in=list(series),
        value__isnull=False,
        created_at__gte=window.start,
        created_at__lt=window.end,
    )
    if not include_hidden:
        scores = scores.filter(thread__hidden=False)
    rows = (
        scores.annotate(bucket=Trunc("created_at", window.unit, tzinfo=UTC))
        .values("name", "bucket")
        .annotate(mean=Avg("value"), n=Count("id"))
        .values_list("name", "bucket", "mean", "n")
    )
    for name, bucket, mean, n in rows:
        series[name].points[bucket] = (mean, n)
    return list(series.values())
