"""The thread list's counters on each thread row (messages, branches, runs, tokens, cost, the
last run's status and duration, last model and agent, flags): recounted from the thread's
rows by one statement, in the transaction of every ledger write that changes them.

A recount rather than increments: a thread's rows are few and indexed by thread, and a
recount cannot drift whatever path wrote them (commit, close, lease expiry, import, moderation).
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from uuid import UUID

from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper

from transcripts.ids import to_uuid
from transcripts.selectors.prices import price_for

# The tokens of a run's usage (either spelling, whole, at least 0); anything but a number
# counts 0. Numeric: sums of any size, held to what a column stores (LARGEST) when stored.
_TOKENS = """
    greatest(0, round(CASE WHEN jsonb_typeof(r.usage->'{camel}') = 'number'
        THEN (r.usage->>'{camel}')::numeric
    WHEN jsonb_typeof(r.usage->'{snake}') = 'number'
        THEN (r.usage->>'{snake}')::numeric
    ELSE 0 END))
"""
LARGEST = 2**63 - 1
INPUT_TOKENS_SQL = _TOKENS.format(camel="inputTokens", snake="input_tokens")
OUTPUT_TOKENS_SQL = _TOKENS.format(camel="outputTokens", snake="output_tokens")

# Flagged by a moderator, or marked flagged by the source (as the thread list's filter says).
FLAGGED_SQL = """(m.flagged_at IS NOT NULL OR (m.metadata ? 'flagged'
    AND m.metadata->'flagged' NOT IN ('false'::jsonb, '0'::jsonb, '""'::jsonb, 'null'::jsonb)))"""

# A thread's runs, read by the thread's index whatever the statistics say: OFFSET 0 keeps the
# planner from walking run_created_idx backwards for the latest run instead (every run of the
# store, as it chose right after a bulk import, when its statistics still described a few long
# threads: bench/bench_scale.py, docs/scaling.md "Just imported").
THREAD_RUNS = "SELECT * FROM transcripts_run r WHERE r.thread_id = t0.id OFFSET 0"

# Every counter of the threads whose ids are in %(ids)s (NULL: every thread), the cost at the
# prices of %(models)s (dollars per 1M input and output tokens, in the same order: so a
# token's price is its cost in micro-dollars), each run's cost rounded half away from zero.
RECOUNT_SQL = f"""
    UPDATE transcripts_thread t SET
        message_count = coalesce(m.n, 0),
        branch_count = coalesce(m.n - m.parents, 0),
        flagged_count = coalesce(m.flagged, 0),
        run_count = coalesce(r.n, 0),
        open_run_count = coalesce(r.open, 0),
        failed_run_count = coalesce(r.failed, 0),
        input_tokens = least(coalesce(r.input, 0), {LARGEST}),
        output_tokens = least(coalesce(r.output, 0), {LARGEST}),
        total_tokens = least(coalesce(r.input + r.output, 0), {LARGEST}),
        cost_micros = least(coalesce(r.cost, 0), {LARGEST}),
        last_run_status = coalesce(closed.status, ''),
        last_run_duration_ms = coalesce(closed.ms, 0),
        last_model = coalesce(model.model, ''),
        last_agent = coalesce(agent.agent, '')
    FROM transcripts_thread t0
    LEFT JOIN LATERAL (
        SELECT count(*) AS n, count(DISTINCT m.parent_id) AS parents,
            count(*) FILTER (WHERE {FLAGGED_SQL}) AS flagged
        FROM transcripts_message m WHERE m.thread_id = t0.id
    ) m ON true
    LEFT JOIN LATERAL (
        SELECT count(*) AS n,
            count(*) FILTER (WHERE r.status IN ('queued', 'streaming')) AS open,
            count(*) FILTER (WHERE r.status = 'failed') AS failed,
            sum({INPUT_TOKENS_SQL}) AS input, sum({OUTPUT_TOKENS_SQL}) AS output,
            sum(round(({INPUT_TOKENS_SQL}) * coalesce(p.input, 0)
                + ({OUTPUT_TOKENS_SQL}) * coalesce(p.output, 0))) AS cost
        FROM transcripts_run r
        LEFT JOIN unnest(%(models)s::text[], %(inputs)s::numeric[], %(outputs)s::numeric[])
            AS p(model, input, output) ON p.model = r.model
        WHERE r.thread_id = t0.id
    ) r ON true
    LEFT JOIN LATERAL (
        SELECT r.status, greatest(0, round(extract(epoch FROM
            r.finished_at - coalesce(r.started_at, r.created_at)) * 1000))::bigint AS ms
        FROM ({THREAD_RUNS}) r
        WHERE r.status NOT IN ('queued', 'streaming')
        ORDER BY r.created_at DESC, r.id DESC LIMIT 1
    ) closed ON true
    LEFT JOIN LATERAL (
        SELECT r.model FROM ({THREAD_RUNS}) r WHERE r.model <> ''
        ORDER BY r.created_at DESC, r.id DESC LIMIT 1
    ) model ON true
    LEFT JOIN LATERAL (
        SELECT left(m.metadata->>'agentId', 200) AS agent FROM (
            SELECT * FROM transcripts_message m WHERE m.thread_id = t0.id OFFSET 0
        ) m
        WHERE m.metadata->>'agentId' <> ''
        ORDER BY m.created_at DESC, m.id DESC LIMIT 1
    ) agent ON true
    WHERE t.id = t0.id AND (%(ids)s::uuid[] IS NULL OR t0.id = ANY(%(ids)s::uuid[]))
"""

# The models of the runs of those threads, to price.
MODELS_SQL = """
    SELECT DISTINCT model FROM transcripts_run
    WHERE model <> '' AND (%(ids)s::uuid[] IS NULL OR thread_id = ANY(%(ids)s::uuid[]))
"""


def recount_sql_params(
    ids: list[UUID] | None, cursor: CursorWrapper
) -> dict[str, list[UUID] | list[str] | list[Decimal] | None]:
    """The parameters of RECOUNT_SQL for these thread uuids (None: all): the prices of the
    models their runs name (a model with no price costs nothing)."""
    cursor.execute(MODELS_SQL, {"ids": ids})
    models: list[str] = []
    inputs: list[Decimal] = []
    outputs: list[Decimal] = []
    for (model,) in cursor.fetchall():
        price = price_for(model)
        if price is not None:
            models.append(model)
            inputs.append(Decimal(str(price.input)))
            outputs.append(Decimal(str(price.output)))
    return {"ids": ids, "models": models, "inputs": inputs, "outputs": outputs}


# Around a recount of several threads (an import's batch): sequential scans off for that one
# statement, then the setting as it was (set_config(..., true): this transaction only).
NO_SEQSCAN_SQL = (
    "SELECT current_setting('enable_seqscan'), set_config('enable_seqscan', 'off', true)"
)
RESTORE_SEQSCAN_SQL = "SELECT set_config('enable_seqscan', %s, true)"


def refresh_counters(thread_ids: Iterable[str]) -> None:
    """Recount the list's counters of these threads (call inside the write's transaction)."""
    ids = [to_uuid(thread_id) for thread_id in dict.fromkeys(thread_ids)]
    if ids:
        recount(ids)


def recount(ids: list[UUID] | None) -> None:
    """Recount the counters of the threads of these uuids (None: of every thread).

    Several threads are recounted by index whatever the statistics say. Right after a bulk
    import they still describe the store as it was: a few threads, so each thread would hold a
    fifth of the messages, and the planner read the whole message table once per thread (200
    threads of a 10,000-thread store: 90 s instead of a fraction of one; docs/scaling.md "Just
    imported"). One thread's recount (every other write) keeps the planner's choice.
    """
    if ids is not None and len(ids) == 1:
        with connection.cursor() as cursor:
            cursor.execute(RECOUNT_SQL, recount_sql_params(ids, cursor))
        return
    # In a transaction (the caller's, else one of its own): the setting lasts until its end.
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        params = recount_sql_params(ids, cursor)
        cursor.execute(NO_SEQSCAN_SQL)
        row = cursor.fetchone()
        assert row is not None
        cursor.execute(RECOUNT_SQL, params)
        cursor.execute(RESTORE_SEQSCAN_SQL, [row[0]])
