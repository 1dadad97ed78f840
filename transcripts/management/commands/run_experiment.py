"""Make an experiment from the command line (issue 29) and, with --wait, watch it to the end.

    manage.py run_experiment --project SLUG (--tag TAG | --filter QUERY | --threads ID,ID)
        [--model M] [--generator G] [--system-prompt TEXT] [--prefix] [--fork-rule R]
        [--evaluator JSON]... [--concurrency N] [--name NAME] [--wait]

It prints the experiment's id and the path of its results page; with --wait, a progress bar
on one line until the workers finish it, then the summary. The experiment is made as
"manage.py" (no member; the audit log names it so).
"""

from __future__ import annotations

import json
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from transcripts.errors import DomainError
from transcripts.generation import experiments as service
from transcripts.generation.experiments import ExperimentRequest
from transcripts.ledger.projects import get_project
from transcripts.ledger.scores import Author
from transcripts.models import Experiment, ExperimentStatus, ForkRule
from transcripts.selectors.experiment_results import METRICS, Rate, Summary, summary
from transcripts.selectors.experiments import Progress, experiment_by_id, progress

BAR = 30
AUTHOR = Author(token_name="manage.py")


def progress_line(found: Progress, width: int = BAR) -> str:
    """`[#####.....] 50/100 done, 2 failed` (failed and cancelled only when there are)."""
    filled = width * found.finished // found.total if found.total else width
    line = (
        f"[{'#' * filled}{'.' * (width - filled)}] {found.counts.get('done', 0)}/{found.total} done"
    )
    for status in ("failed", "cancelled"):
        if found.counts.get(status):
            line += f", {found.counts[status]} {status}"
    return line


def _percent(rate: Rate) -> str:
    interval = rate.interval
    if rate.value is None or interval is None:
        return "n/a"
    return f"{rate.value:.0%} (95% CI {interval[0]:.0%}-{interval[1]:.0%}, n={rate.total})"


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.6g}"


def summary_lines(found: Summary) -> list[str]:
    """The summary in words: verdicts, each metric's means, the cost delta, pass rates."""
    lines = [
        f"wins {found.wins}, losses {found.losses}, ties {found.ties}, "
        f"not judged {found.unjudged}; win rate {_percent(found.win_rate)}"
    ]
    for metric in METRICS:
        candidate = found.metrics.get("candidate", {}).get(metric)
        baseline = found.metrics.get("baseline", {}).get(metric)
        if (candidate is None or not candidate.count) and (baseline is None or not baseline.count):
            continue
        lines.append(
            f"{metric}: candidate mean {_number(candidate.mean if candidate else None)}"
            f" vs baseline {_number(baseline.mean if baseline else None)}"
        )
    delta = found.cost_delta
    lines.append("cost delta: n/a" if delta is None else f"cost delta: {delta:+.6f}")
    for evaluator in found.evaluators:
        lines.append(f"{evaluator.name}: candidate passed {_percent(evaluator.candidate)}")
    return lines


def _evaluators(raw: list[str]) -> list[Any]:
    """The --evaluator options, each a JSON object."""
    parsed: list[Any] = []
    for text in raw:
        try:
            parsed.append(json.loads(text))
        except json.JSONDecodeError as exc:
            raise CommandError(f"--evaluator {text!r} is not JSON: {exc.msg}") from None
    return parsed


class Command(BaseCommand):
    help = (
        "Replay many threads against another model or prompt, each answer a branch beside the"
        " original; prints the experiment's id and path, and with --wait its progress and"
        " summary."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="the project's slug")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--tag", help="every thread with this tag")
        source.add_argument("--filter", help="a thread-list query string, e.g. 'q=refund'")
        source.add_argument("--threads", help="thread ids, comma-separated")
        parser.add_argument("--model", default="", help="the candidate's model")
        parser.add_argument("--generator", default="demo", help="demo (default) or openai")
        parser.add_argument("--system-prompt", default="", help="the candidate's system prompt")
        parser.add_argument(
            "--prefix",
            action="store_true",
            help="put the system prompt before the thread's own instead of replacing it",
        )
        parser.add_argument(
            "--fork-rule",
            default=ForkRule.LAST_USER,
            choices=[ForkRule.LAST_USER, ForkRule.EACH_USER],
            help="last-user (default): answer each thread's last user message again;"
            " each-user: every user turn",
        )
        parser.add_argument(
            "--evaluator",
            action="append",
            default=[],
            help='an evaluator as JSON, e.g. \'{"type": "exact-match"}\' (repeatable)',
        )
        parser.add_argument("--concurrency", type=int, default=4, help="items at once (1-64)")
        parser.add_argument("--name", default="", help="the experiment's name")
        parser.add_argument("--wait", action="store_true", help="watch it until it finishes")
        parser.add_argument(
            "--interval", type=float, default=1.0, help="seconds between two looks (--wait)"
        )

    def handle(self, *args: str, **options: Any) -> None:
        try:
            project = get_project(options["project"])
            request = ExperimentRequest(
                name=options["name"] or f"{options['generator']} {options['model']}".strip(),
                generator=options["generator"],
                model=options["model"],
                system_prompt=options["system_prompt"],
                system_prompt_mode="prefix" if options["prefix"] else "replace",
                fork_rule=options["fork_rule"],
                filter=options["filter"] or "",
                tag=options["tag"] or "",
                thread_ids=tuple(
                    t.strip() for t in (options["threads"] or "").split(",") if t.strip()
                ),
                evaluators=_evaluators(options["evaluator"]),
                concurrency=options["concurrency"],
            )
            experiment, _ = service.create(project=project, author=AUTHOR, request=request)
        except DomainError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(f"experiment {experiment.id}: {experiment.item_count} items")
        self.stdout.write(f"/p/{project.slug}/experiments/{experiment.id}/")
        if options["wait"]:
            self._wait(experiment, options["interval"])

    def _wait(self, experiment: Experiment, interval: float) -> None:
        """Redraw the progress bar until the experiment completes or is cancelled, then print
        its summary."""
        while True:
            current = experiment_by_id(experiment.id)
            if current is None:
                raise CommandError(f"experiment {experiment.id} was deleted")
            self.stdout.write("\r" + progress_line(progress(current)), ending="")
            self.stdout.flush()
            if current.status in (ExperimentStatus.COMPLETED, ExperimentStatus.CANCELLED):
                break
            time.sleep(interval)
        self.stdout.write(f"\n{current.status}")
        for line in summary_lines(summary(current)):
            self.stdout.write(line)
