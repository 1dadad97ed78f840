"""manage.py run_experiment (issue 29): makes the experiment, prints its id and path, and with
--wait redraws a progress bar until a worker (here a thread of this process) finishes it,
then prints the summary; bad input is a CommandError and makes nothing."""

from __future__ import annotations

import io
import threading

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from tests.factories import conversation
from transcripts.generation import experiments as service
from transcripts.ledger.organise import tag_thread
from transcripts.models import AuditRecord, Experiment, ExperimentItem, ItemStatus, Run, RunStatus

pytestmark = pytest.mark.django_db(transaction=True)


def _worker(stop: threading.Event) -> None:
    """Generate every queued candidate, as a worker would, until told to stop."""
    try:
        while not stop.is_set():
            item = ExperimentItem.objects.filter(status=ItemStatus.QUEUED).order_by("pk").first()
            if item is None:
                stop.wait(0.02)
                continue
            service.generate_candidate.call(item.run_id)
    finally:
        connection.close()


def test_wait_draws_the_progress_and_prints_the_summary():
    threads = [conversation(turns=1, title=f"refund {i}") for i in range(4)]
    for thread in threads:
        tag_thread(thread=thread, user=None, tag="refunds")
    conversation(turns=1, title="not tagged")
    stop = threading.Event()
    worker = threading.Thread(target=_worker, args=(stop,))
    worker.start()
    out = io.StringIO()
    try:
        call_command(
            "run_experiment", "--project", "default", "--tag", "refunds", "--model",
            "demo-brief", "--evaluator", '{"type": "exact-match"}', "--concurrency", "2",
            "--wait", "--interval", "0.05", stdout=out,
        )  # fmt: skip
    finally:
        stop.set()
        worker.join(timeout=30)

    experiment = Experiment.objects.get()
    text = out.getvalue()
    lines = text.split("\n")
    assert lines[0] == f"experiment {experiment.id}: 4 items"
    assert lines[1] == f"/p/default/experiments/{experiment.id}/"
    bars = lines[2].split("\r")[1:]
    assert bars[-1] == "[" + "#" * 30 + "] 4/4 done"
    assert all(bar.startswith("[") and bar.endswith("/4 done") for bar in bars)
    assert lines[3] == "completed"
    assert lines[4].startswith("wins 0, losses 0, ties 0, not judged 4")
    assert any(line.startswith("length: candidate mean ") for line in lines)
    assert any(line.startswith("cost delta: ") for line in lines)
    assert any(line.startswith("exact-match: candidate passed ") for line in lines)
    assert experiment.model == "demo-brief" and experiment.items.count() == 4
    assert {i.thread_id for i in experiment.items.all()} == {t.id for t in threads}
    assert AuditRecord.objects.get(action="create_experiment").details["token"] == "manage.py"


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--project", "nowhere", "--tag", "x"], "nowhere"),
        (["--project", "default", "--tag", "x"], "empty"),
        (["--project", "default", "--threads", "THREAD", "--model", "gpt-9"], "unknown model"),
        (["--project", "default", "--threads", "THREAD", "--evaluator", "{no"], "not JSON"),
        (["--project", "default", "--threads", "THREAD", "--evaluator", '{"type": "x"}'], "type"),
    ],
)
def test_bad_input_is_a_command_error_and_makes_nothing(argv, said):
    thread = conversation(turns=1)
    argv = [thread.id if a == "THREAD" else a for a in argv]

    with pytest.raises(CommandError, match=said):
        call_command("run_experiment", *argv, stdout=io.StringIO())

    assert not Experiment.objects.exists()
    assert not Run.objects.filter(status=RunStatus.QUEUED).exists()
