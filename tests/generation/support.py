"""Helpers for the generation tests."""

from __future__ import annotations

import time
from collections.abc import Callable

from transcripts.models import Experiment, ExperimentItem, ItemStatus, Run


def wait_for(predicate: Callable[[], bool], timeout: float = 20.0, what: str = "") -> None:
    """Poll predicate until it holds, or fail after timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what or predicate}")


def run_status(run_id: str) -> str:
    """The current status of a run, read fresh from the database."""
    return Run.objects.values_list("status", flat=True).get(pk=run_id)


def drain_experiment(experiment: Experiment | str) -> None:
    """Run an experiment's items in this process, as a worker would, until none is left (its
    first items started here too: a test inside a transaction never sees create's on_commit)."""
    from transcripts.generation import experiments

    experiment_id = experiment if isinstance(experiment, str) else experiment.id
    experiments.dispatch(experiment_id)
    for _ in range(10_000):
        item = (
            ExperimentItem.objects.filter(experiment_id=experiment_id, status=ItemStatus.QUEUED)
            .order_by("position")
            .first()
        )
        if item is None:
            return
        experiments.generate_candidate.call(item.run_id)
