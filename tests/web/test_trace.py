"""The run page as a trace: spans from real event streams, costs, readable segments, the raw log
behind a toggle, roles, bounded queries, and live updates that always end."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from config.settings import prices_from_json
from tests.base import Team, make_user
from tests.factories import ask, make_run, make_thread
from transcripts import ledger
from transcripts.formats.ai_sdk.stream import to_events
from transcripts.ledger import moderation
from transcripts.models import Run, Thread
from transcripts.projector import REDACTION_TEXT
from transcripts.selectors.prices import price_for
from transcripts.selectors.trace import Trace, run_trace
from transcripts.web.presenters.trace import trace_view, usage_label

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "api" / "fixtures"


def timed(
    *items: tuple[float, str, dict[str, Any]], base: datetime | None = None
) -> list[dict[str, Any]]:
    """Events stamped by their stream layer, at base (default: now) + seconds."""
    base = base or timezone.now()
    return [
        {"seq": 1 + i, "kind": kind, "data": data, "at": (base + timedelta(seconds=s)).isoformat()}
        for i, (s, kind, data) in enumerate(items)
    ]


def run_of(
    thread: Thread, items: list[dict[str, Any]], *, close: str = "commit", model: str = "gpt-4o"
) -> Run:
    """A run of thread holding the events, committed, failed or left open."""
    run, _ = ledger.begin_run(thread=thread, model=model, generator="external")
    if items:
        ledger.append_events(run=run, events=items)
    if close == "commit":
        run = ledger.commit_run(run=run)
    elif close == "fail":
        ledger.fail_run(run=run, error={"message": "model overloaded", "code": "overloaded"})
    return Run.objects.select_related("thread").get(pk=run.pk)


def tool_run(thread: Thread, *, close: str = "commit", model: str = "gpt-4o") -> Run:
    """Two LLM calls around a weather tool call, as our generators stream them."""
    words = [(2.0 + i * 0.01, "text-delta", {"delta": f"word{i} "}) for i in range(300)]
    return run_of(
        thread,
        timed(
            (0.0, "step-started", {}),
            (0.1, "reasoning", {"text": "The user wants "}),
            (0.2, "reasoning", {"text": "the weather."}),
            (
                0.5,
                "tool-call",
                {"toolCallId": "c1", "toolName": "weather", "input": {"city": "Paris"}},
            ),
            (
                0.6,
                "step-finished",
                {
                    "finishReason": "tool-calls",
                    "usage": {"inputTokens": 100000, "outputTokens": 20000},
                },
            ),
            (
                1.6,
                "tool-result",
                {
                    "toolCallId": "c1",
                    "toolName": "weather",
                    "output": {"temperature": 21},
                    "isError": False,
                },
            ),
            (1.7, "step-started", {}),
            *words,
            (
                5.5,
                "step-finished",
                {
                    "finishReason": "stop",
                    "usage": {"inputTokens": 300000, "outputTokens": 30000, "reasoningTokens": 120},
                },
            ),
        ),
        close=close,
        model=model,
    )


def trace(run: Run) -> Trace:
    return run_trace(run, now=timezone.now())


# --- spans ---------------------------------------------------------------------------------


def test_steps_become_llm_calls_with_the_tool_call_nested_and_timed() -> None:
    result = trace(tool_run(make_thread("Weather")))
    kinds = [(s.kind, s.name, s.depth) for s in result.spans]
    assert kinds == [
        ("run", "Run", 0),
        ("llm", "LLM call 1", 1),
        ("tool", "weather", 2),
        ("llm", "LLM call 2", 1),
    ]
    _, first, tool, second = result.spans
    assert first.seconds == pytest.approx(0.6) and first.finish_reason == "tool-calls"
    assert tool.seconds == pytest.approx(1.1) and tool.detail == "c1" and not tool.unfinished
    assert second.seconds == pytest.approx(3.8) and second.model == "gpt-4o"
    assert (first.input_tokens, first.output_tokens) == (100000, 20000)
    assert (result.root.input_tokens, result.root.output_tokens) == (400000, 50000)


def test_costs_come_from_the_price_table_and_the_total_is_at_the_top() -> None:
    view = trace_view(trace(tool_run(make_thread("Weather"))))
    # gpt-4o: $2.50 per 1M input tokens, $10 per 1M output tokens.
    assert [row.cost_label for row in view.rows] == ["$1.50", "$0.45", "—", "$1.05"]
    assert view.total_cost == pytest.approx(1.5) and view.priced_all
    unknown = trace_view(trace(tool_run(make_thread("Own model"), model="my-own-model")))
    assert unknown.total_cost is None and unknown.total_cost_label == "—"


def test_a_model_is_priced_by_name_case_and_dated_version(settings: Any) -> None:
    settings.TRANSCRIPTS_PRICES = {
        "gpt-4o": {"input": 2.5, "output": 10},
        "gpt-4o-mini": {"input": 0.15, "output": 0.6},
    }
    assert price_for("gpt-4o-2024-08-06") == price_for("GPT-4o") == price_for("openai/gpt-4o")
    mini = price_for("gpt-4o-mini-2024-07-18")
    assert mini is not None and mini.input == 0.15
    assert price_for("gpt-4") is None and price_for("") is None


def test_a_price_table_from_the_environment_is_checked() -> None:
    table = prices_from_json('{"my-model": {"input": 1, "output": 2.5}}', "TRANSCRIPTS_PRICES")
    assert table == {"my-model": {"input": 1.0, "output": 2.5}}
    for bad in ("{not json", '{"m": {"input": 1}}', '{"m": {"input": -1, "output": 1}}', "[]"):
        with pytest.raises(ImproperlyConfigured, match="TRANSCRIPTS_PRICES"):
            prices_from_json(bad, "TRANSCRIPTS_PRICES")


def test_the_ai_sdk_stream_fixture_makes_two_steps_with_the_tool_inside_the_first() -> None:
    chunks = json.loads((FIXTURES / "multi_step_tools.json").read_text())
    result = trace(run_of(make_thread("AI SDK"), to_events(chunks, after_seq=0), model=""))
    assert [(s.kind, s.name) for s in result.spans] == [
        ("run", "Run"),
        ("llm", "LLM call 1"),
        ("tool", "weather"),
        ("llm", "LLM call 2"),
    ]
    # The finish chunk names the model and the usage: they go on the last step.
    last = result.spans[-1]
    assert last.model == "mock-model" and (last.input_tokens, last.output_tokens) == (62, 50)
    kinds = [s.kind for s in result.segments]
    assert kinds[:4] == ["reasoning", "text", "tool-call", "tool-result"]
    assert result.segments[0].text == "The user wants the weather. I should call the tool."


def test_thousands_of_deltas_read_in_one_query_become_a_handful_of_segments() -> None:
    thread = make_thread("Long answer")
    run, _ = ledger.begin_run(thread=thread, model="gpt-4o")
    deltas = [("text-delta", {"delta": f"w{i} "}) for i in range(10_000)]
    items = [("step-started", {}), *deltas, ("step-finished", {"usage": {"outputTokens": 9}})]
    ledger.append_events(
        run=run, events=[{"seq": i + 1, "kind": k, "data": d} for i, (k, d) in enumerate(items)]
    )
    run = ledger.commit_run(run=run)
    with CaptureQueriesContext(connection) as queries:
        result = trace(run)
    assert len(queries) == 1
    assert result.event_count == 10_002 and len(result.segments) == 1
    assert result.segments[0].text.startswith("w0 w1 ") and result.segments[0].text.endswith(
        "w9999 "
    )


def test_a_complete_answer_message_is_an_llm_call_from_the_event_before_it() -> None:
    # As a Pydantic AI import stores it: complete messages, each at its own time.
    call = {"type": "tool-call", "toolCallId": "t1", "toolName": "search", "input": {"q": "x"}}
    result_part = {"type": "tool-result", "toolCallId": "t1", "toolName": "search",
                   "output": "found", "isError": False}  # fmt: skip
    meta = {"model": "claude-3-5-sonnet-20241022", "usage": {"inputTokens": 10, "outputTokens": 5}}
    run = run_of(
        make_thread("Imported"),
        timed(
            (0.0, "message", {"role": "user", "parts": [{"type": "text", "text": "find x"}]}),
            (2.0, "message", {"role": "assistant", "parts": [call], "metadata": meta}),
            (3.0, "message", {"role": "tool", "parts": [result_part]}),
            (
                4.5,
                "message",
                {"role": "assistant", "parts": [{"type": "text", "text": "x is found"}]},
            ),
        ),
        model="",
    )
    result = trace(run)
    spans = [(s.kind, s.name, s.seconds) for s in result.spans[1:]]
    assert spans == [("llm", "LLM call", 2.0), ("tool", "search", 1.0), ("step", "Answer", 1.5)]
    assert result.spans[1].model == "claude-3-5-sonnet-20241022"
    # Priced as claude-3-5-sonnet: $3 and $15 per 1M tokens.
    assert trace_view(result).rows[1].cost == pytest.approx(0.000105)
    assert trace_view(result).rows[1].cost_label == "$0.00011"
    assert [s.kind for s in result.segments] == [
        "message", "tool-call", "tool-result", "message",
    ]  # fmt: skip
    assert result.segments[0].role == "user" and result.segments[-1].text == "x is found"


def test_a_failed_run_marks_its_root_and_shows_its_error() -> None:
    thread = make_thread("Failing")
    items = timed(
        (0.0, "step-started", {}),
        (0.2, "text-delta", {"delta": "partial"}),
        (0.4, "error", {"message": "rate limited", "code": "429"}),
    )
    result = trace(run_of(thread, items, close="fail"))
    assert result.root.failed and result.spans[1].failed and result.spans[1].unfinished
    assert [s.kind for s in result.spans] == ["run", "llm", "error"]
    assert result.segments[-1].kind == "error" and result.segments[-1].text == "rate limited"


def test_an_open_run_ends_its_open_spans_now_and_says_they_run() -> None:
    base = timezone.now()
    run = run_of(
        make_thread("Open"),
        timed(
            (0.0, "step-started", {}),
            (0.1, "tool-call", {"toolCallId": "c", "toolName": "slow", "input": {}}),
            base=base,
        ),
        close="open",
    )
    now = base + timedelta(seconds=30)
    result = run_trace(run, now=now)
    assert result.root.unfinished and result.root.end == now
    assert all(s.unfinished and s.end == now for s in result.spans[1:])
    assert result.spans[2].seconds == pytest.approx(29.9)


def test_a_redacted_answer_shows_the_marker_once() -> None:
    thread = make_thread("Redacted")
    ask(thread, "tell me")
    run = make_run(thread, *[("text-delta", {"delta": f"secret{i} "}) for i in range(5)])
    message = run.messages.get()
    moderator = make_user("trace-moderator", is_superuser=True)
    moderation.redact_message(user=moderator, message=message, reason="personal data")
    result = trace(Run.objects.get(pk=run.pk))
    assert [s.text for s in result.segments] == [REDACTION_TEXT]


def test_usage_keys_read_as_words() -> None:
    assert usage_label("inputTokens") == "Input tokens"
    assert usage_label("cache_read_input_tokens") == "Cache read input tokens"
    assert usage_label("promptTokenCount") == "Input tokens"


# --- the page ------------------------------------------------------------------------------


def _alpha_run(team: Team) -> Run:
    thread = make_thread("Alpha weather", project=team.alpha)
    ask(thread, "Weather in Paris?")
    return tool_run(thread)


def test_a_viewer_reads_the_trace_and_an_outsider_gets_404(team: Team) -> None:
    run = _alpha_run(team)
    assert team.client(team.outsider).get(f"/runs/{run.id}/").status_code == 404
    assert team.client(team.stranger).get(f"/runs/{run.id}/").status_code == 404
    html = team.client(team.viewer).get(f"/runs/{run.id}/").content.decode()
    assert 'class="waterfall"' in html and 'class="trace-bar"' in html
    assert "LLM call 1" in html and "weather" in html and "1.10 s" in html
    assert "<dt>Input tokens</dt><dd>400000</dd>" in html
    assert (
        '<span class="muted">Reasoning tokens</span> 120' in html
        and ">reasoningTokens<" not in html
    )
    assert '<dd class="total-cost">$1.50' in html
    # The content, merged: one text segment, not 300 rows; the raw log closed behind a toggle.
    assert html.count('class="tseg tseg-of-text') == 1 and "word0 word1 word2" in html
    assert '<details class="raw-log">' in html and html.count('<details class="event') == 100
    assert "style=" not in html


def test_reading_the_trace_writes_nothing(team: Team) -> None:
    run = _alpha_run(team)
    viewer = team.client(team.viewer)
    with CaptureQueriesContext(connection) as queries:
        viewer.get(f"/runs/{run.id}/")
    statements = [q["sql"].lstrip().upper() for q in queries]
    writes = [sql for sql in statements if sql.startswith(("INSERT", "UPDATE", "DELETE"))]
    assert writes == []


def test_the_page_runs_the_same_queries_for_ten_events_and_ten_thousand(
    viewer_client: Client,
) -> None:
    def page_queries(count: int) -> int:
        run, _ = ledger.begin_run(thread=make_thread(f"{count} events"), model="gpt-4o")
        delta = {"kind": "text-delta", "data": {"delta": "w "}}
        deltas = [{"seq": i + 1, **delta} for i in range(count)]
        ledger.append_events(run=run, events=deltas)
        ledger.commit_run(run=run)
        with CaptureQueriesContext(connection) as queries:
            assert viewer_client.get(f"/runs/{run.id}/").status_code == 200
        return len(queries)

    assert page_queries(10) == page_queries(10_000)


HTMX_LIVE = {"HX-Request": "true", "HX-Target": "live"}
HTMX_FINAL = {"HX-Request": "true", "HX-Target": "run-trace"}


def test_a_run_finishing_between_two_polls_ends_the_updates(viewer_client: Client) -> None:
    run = tool_run(make_thread("Streaming"), close="open")
    page = viewer_client.get(f"/runs/{run.id}/").content.decode()
    assert 'sse-connect="/api/v1/runs/' in page and 'hx-trigger="sse:status"' in page
    first = viewer_client.get(f"/runs/{run.id}/", headers=HTMX_LIVE).content.decode()
    assert first.lstrip().startswith('<section id="live"') and "every 10s" in first
    assert "updating live" in first and "raw-log" not in first
    ledger.commit_run(run=run)
    second = viewer_client.get(f"/runs/{run.id}/", headers=HTMX_LIVE).content.decode()
    final = viewer_client.get(f"/runs/{run.id}/", headers=HTMX_FINAL).content.decode()
    assert final.lstrip().startswith('<div id="run-trace"')
    for fragment in (second, final):
        assert "committed" in fragment and "updating live" not in fragment
        assert "hx-trigger" not in fragment and "sse-connect" not in fragment
        # No request but the raw log's "Load more events" link.
        assert fragment.count("hx-get=") == fragment.count("?after=") // 2


def test_the_final_status_replaces_a_block_no_live_update_replaces(viewer_client: Client) -> None:
    run = tool_run(make_thread("Streaming"), close="open")
    page = viewer_client.get(f"/runs/{run.id}/").content.decode()
    # The status request's target holds the live section: a live update swapping #live (one
    # in flight when the run ended) cannot detach it.
    status = page.index('hx-trigger="sse:status"')
    assert 'hx-target="#run-trace"' in page[page.rindex("<div", 0, status) : status + 60]
    assert page.index('<div id="run-trace"') < page.index('<section id="live"')
