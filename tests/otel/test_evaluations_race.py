"""The same evaluation event stored by two requests at once (two exporters' retries racing):
one score, the later request updating it rather than failing on the unique externalId."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, transaction

from tests.base import Team
from tests.otel.evaluation_events import (
    SPAN,
    TRACE,
    answer_span,
    evaluation,
    logs,
    record,
    send_spans,
)
from transcripts.formats.otlp.logs import log_events_of
from transcripts.ledger.scores import Author
from transcripts.models import ApiToken, Score
from transcripts.otel.evaluations import EvaluationResult, score_log_events

pytestmark = pytest.mark.django_db(transaction=True)


def test_two_requests_storing_the_same_event_at_once_give_one_score(team: Team) -> None:
    send_spans(team.token(team.alpha), answer_span())
    records = list(log_events_of(logs(record(evaluation(), trace=TRACE, span_id=SPAN))))
    author = Author(token_id=ApiToken.objects.get().id, token_name="test")
    inserted, errors = threading.Event(), []

    def first() -> None:
        """Add the score and hold the transaction open while the second request inserts."""
        try:
            with transaction.atomic():
                score_log_events(project=team.alpha, records=records, author=author, within=None)
                inserted.set()
                time.sleep(1.0)
        except BaseException as exc:
            errors.append(exc)
            inserted.set()
        finally:
            connection.close()

    holder = threading.Thread(target=first)
    holder.start()
    assert inserted.wait(30)
    # Not yet visible: this insert waits on the first one's unique key, then collides.
    second: EvaluationResult = score_log_events(
        project=team.alpha, records=records, author=author, within=None
    )
    holder.join(30)

    assert not errors
    assert (second.added, second.updated, second.rejected) == (0, 1, [])
    assert Score.objects.count() == 1
